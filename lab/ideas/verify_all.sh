#!/bin/bash
# Checks every idea of lab/ideas with `attn-tuner idea check` (docs/ideas.md, "Check an idea"), as the daemon
# would take it, without a GPU: the daemon's parser, the apply, NVRTC, the default cubin byte-identical to the
# parent's, and each idea on the default config and on the configs of the lab's champions (i21092, i21133) with
# its new values on: registers, spills and ptxas's serialised-wgmma diagnostics against the parent's builds.
# usage (repo root, after a build): lab/ideas/verify_all.sh [TEMPLATES_DIR] [ATTN_TUNER] > lab/ideas/verify.log
# Prints each idea's account and its exit code (0 ok; 3-9 the finding, docs/ideas.md); exits 1 if any failed.
T=${1:-kernels_templates}
BIN=${2:-build/attn-tuner}
I21092='{"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"Q_BUFFERS":1,"SCHEDULE":2,"SOFTMAX":2,"PRODUCER_REGS":40,"OVERLAP":1,"PINGPONG":0}'
I21133='{"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"Q_BUFFERS":1,"SCHEDULE":2,"SOFTMAX":2,"PRODUCER_REGS":40,"OVERLAP":1,"PINGPONG":1}'
failed=0
run() {  # run FILE [extra base configs...]
  local f=$1
  shift
  local args=(--config "$I21092" --config "$I21133")
  for c in "$@"; do args+=(--config "$c"); done
  echo "== $(basename "$f")"
  "$BIN" idea check "$f" --templates "$T" --config '{}' "${args[@]}"
  local rc=$?
  echo "exit $rc"
  echo
  [[ $rc -eq 0 ]] || failed=1
}
D=lab/ideas
run $D/01_overlap2.idea '{"SOFTMAX":2,"PINGPONG":1}'
run $D/02_converters4.idea
run $D/03_l2_prefetch.idea
run $D/04_tail_defer.idea
run $D/05_static_first_tile.idea
run $D/06_lean_chain.idea '{"OVERLAP":0}'
run $D/07_producer_ahead.idea '{"SCHEDULE":0,"PRODUCER_REGS":24}'
run $D/08_one_p.idea '{"OVERLAP":0}'
run $D/09_q_regs.idea '{"BLOCK_N":64}'
run $D/10_one_p_q_regs.idea
run $D/11_qk_split.idea '{"SOFTMAX":2,"BLOCK_N":64}'
run $D/12_v_load.idea '{"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"Q_BUFFERS":1,"SCHEDULE":2,"SOFTMAX":2,"PRODUCER_REGS":40,"OVERLAP":1,"PINGPONG":0,"BLOCK_N":64,"CONVERTERS":2}'
run $D/13_convert_unroll.idea '{"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"Q_BUFFERS":1,"SCHEDULE":2,"SOFTMAX":2,"PRODUCER_REGS":40,"OVERLAP":1,"PINGPONG":0,"CONVERTERS":2}'
run $D/14_p_split.idea '{"SOFTMAX":1}' '{"OVERLAP":0,"CONSUMERS":1,"SOFTMAX":2}'
run $D/15_exp2_poly.idea '{"SOFTMAX":1}'
run $D/16_q_first.idea '{"Q_BUFFERS":1}'
run $D/17_info_after_issue.idea '{"PRODUCER_REGS":40}' '{"SCHEDULE":0,"PRODUCER_REGS":24}'
exit $failed
