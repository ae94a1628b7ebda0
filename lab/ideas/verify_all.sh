#!/bin/bash
# Runs verify_idea.py on every idea of lab/ideas with its ON configs (repo root; no GPU; ~2 min on 2 cores).
# usage: lab/ideas/verify_all.sh [TEMPLATES_DIR] > lab/ideas/verify.log
T=${1:-kernels_templates}
V="python3 lab/ideas/verify_idea.py --templates $T"
I21092='"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"Q_BUFFERS":1,"SCHEDULE":2,"SOFTMAX":2,"PRODUCER_REGS":40,"OVERLAP":1,"PINGPONG":0'
I21133='"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"Q_BUFFERS":1,"SCHEDULE":2,"SOFTMAX":2,"PRODUCER_REGS":40,"OVERLAP":1,"PINGPONG":1'
run() { echo "== $1"; shift; $V "$@"; echo; }
D=lab/ideas
B='"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"Q_BUFFERS":1,"SCHEDULE":2,"SOFTMAX":2,"PRODUCER_REGS":40'  # i21092/i21133 without OVERLAP, PINGPONG
run 01 $D/01_overlap2.idea '{"OVERLAP":2}' "{$B,\"OVERLAP\":2,\"PINGPONG\":0}" "{$B,\"OVERLAP\":2,\"PINGPONG\":1}" '{"OVERLAP":2,"SOFTMAX":2,"PINGPONG":1}'
run 02 $D/02_converters4.idea '{"CONVERTERS":4}' "{$I21092,\"CONVERTERS\":4}"
run 03 $D/03_l2_prefetch.idea '{"L2_PREFETCH":1}' "{$I21092,\"L2_PREFETCH\":1}"
run 04 $D/04_tail_defer.idea '{"TAIL_DEFER":4}' "{$I21092,\"TAIL_DEFER\":4}" "{$I21133,\"TAIL_DEFER\":8}" "{$I21133,\"TAIL_DEFER\":2}"
run 05 $D/05_static_first_tile.idea '{"STATIC_FIRST":1}' "{$I21092,\"STATIC_FIRST\":1}" "{$I21133,\"STATIC_FIRST\":1}"
run 06 $D/06_lean_chain.idea '{"LEAN_CHAIN":1}' "{$I21092,\"LEAN_CHAIN\":1}" "{$I21133,\"LEAN_CHAIN\":1}" '{"LEAN_CHAIN":1,"OVERLAP":0}'
run 07 $D/07_producer_ahead.idea '{"PRODUCER_AHEAD":1}' "{$I21092,\"PRODUCER_AHEAD\":1}" '{"PRODUCER_AHEAD":1,"SCHEDULE":0,"PRODUCER_REGS":24}'
run 08 $D/08_one_p.idea '{"ONE_P":1}' "{$I21092,\"ONE_P\":1}" "{$I21133,\"ONE_P\":1}" '{"ONE_P":1,"OVERLAP":0}'
run 09 $D/09_q_regs.idea '{"Q_REGS":1}' "{$I21092,\"Q_REGS\":1}" "{$I21133,\"Q_REGS\":1}" '{"Q_REGS":1,"BLOCK_N":64}'
run 10 $D/10_one_p_q_regs.idea '{"ONE_P":1,"Q_REGS":1}' "{$I21092,\"ONE_P\":1,\"Q_REGS\":1}" "{$I21133,\"ONE_P\":1,\"Q_REGS\":1}"
run 11 $D/11_qk_split.idea '{"QK_SPLIT":1}' "{$I21092,\"QK_SPLIT\":1}" "{$I21133,\"QK_SPLIT\":1}" '{"QK_SPLIT":1,"SOFTMAX":2,"BLOCK_N":64}'
run 12 $D/12_v_load.idea '{"V_LOAD":1}' "{$I21092,\"V_LOAD\":1}" "{$I21092,\"V_LOAD\":1,\"BLOCK_N\":64,\"CONVERTERS\":2}" "{$I21092,\"V_LOAD\":1,\"V_CONVERT\":1}"
run 13 $D/13_convert_unroll.idea '{"ATTN_CONVERT_UNROLL":8}' "{$I21092,\"ATTN_CONVERT_UNROLL\":8}" "{$I21092,\"ATTN_CONVERT_UNROLL\":8,\"CONVERTERS\":2}"
run 14 $D/14_p_split.idea '{"P_SPLIT":1}' "{$I21092,\"P_SPLIT\":1}" "{$I21133,\"P_SPLIT\":1}" "{$I21092,\"P_SPLIT\":1,\"SOFTMAX\":1}" "{$I21133,\"P_SPLIT\":1,\"SOFTMAX\":1}" "{$I21092,\"P_SPLIT\":1,\"BLOCK_N\":64,\"CONVERTERS\":2}" '{"P_SPLIT":1,"OVERLAP":0,"CONSUMERS":1,"SOFTMAX":2}'
run 15 $D/15_exp2_poly.idea '{"ATTN_EXP2_POLY":1}' "{$I21092,\"ATTN_EXP2_POLY\":1}" "{$I21133,\"ATTN_EXP2_POLY\":2}" '{"ATTN_EXP2_POLY":2,"SOFTMAX":1}'
run 16 $D/16_q_first.idea '{"Q_FIRST":1}' "{$I21092,\"Q_FIRST\":1}" "{$I21133,\"Q_FIRST\":1}" "{$I21092,\"Q_FIRST\":1,\"Q_BUFFERS\":2}" '{"Q_FIRST":1,"Q_BUFFERS":1}' '{"Q_FIRST":1,"L2_PREFETCH":1}'
run 17 $D/17_info_after_issue.idea '{"TILE_AHEAD":1}' "{$I21092,\"TILE_AHEAD\":1}" "{$I21133,\"TILE_AHEAD\":1}" '{"TILE_AHEAD":1,"PRODUCER_REGS":40}' '{"TILE_AHEAD":1,"KV_SPLIT":0}' '{"TILE_AHEAD":1,"SCHEDULE":0,"PRODUCER_REGS":24}'
