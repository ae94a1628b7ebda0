#!/bin/bash
# End-to-end check of the Slurm path on ONE machine, without a GPU: a single-node Slurm (Debian's slurm-wlm:
# slurmctld and slurmd on this host, munge for authentication, a "gpu" GRES of two empty files) runs
# scripts/slurm/submit.sh: a 2-task job array of `attn-tuner run --shard i/2` with the fake GPU worker
# (tests/daemon/fake_worker.py; two pretend GPUs per task, from Slurm's GRES), then the merge job; then it checks the merged DB
# (every config of the space once, provenance from both shards, integrity) and exports it.
#   sudo scripts/slurm/local_e2e.sh          # needs root (starts munged, slurmctld, slurmd), a built build/
# Installs slurmctld, slurmd, slurm-client and munge with apt-get when missing. Everything it starts is
# stopped again by pid at exit; its files stay in the printed folder. Not part of ctest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tuner=$repo/build/attn-tuner
[[ -x $tuner ]] || { echo "local_e2e.sh: build attn-tuner first ($tuner)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "local_e2e.sh: run as root (it starts munged, slurmctld and slurmd)" >&2; exit 2; }
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null ||
   ! command -v munged >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge
fi

work=$(mktemp -d /tmp/attn-slurm-e2e.XXXXXX)
chmod 755 "$work"
host=$(hostname -s)
started=()  # pids of what this script started, stopped at exit
cleanup() {
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done
  echo "local_e2e.sh: files in $work"
}
trap cleanup EXIT

# munge: this host's key, its daemon (unless one runs already).
if ! munge -n </dev/null >/dev/null 2>&1; then
  mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
  [[ -s /etc/munge/munge.key ]] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
  chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
  chmod 400 /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged
  sleep 0.5
  started+=("$(cat /run/munge/munged.pid)")
  munge -n </dev/null | unmunge >/dev/null
fi

mkdir -p "$work/state" "$work/spool"
cat >"$work/slurm.conf" <<CONF
ClusterName=attn-e2e
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName=$host CPUs=$(nproc) RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=e2e Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# Two pretend GPUs: Slurm wants a device file per GPU; empty files do (nothing opens them but the check).
touch "$work/gpu0" "$work/gpu1"
printf 'AutoDetect=off\nNodeName=%s Name=gpu File=%s/gpu[0-1] Flags=nvidia_gpu_env\n' "$host" "$work" >"$work/gres.conf"
export SLURM_CONF=$work/slurm.conf

slurmctld -f "$SLURM_CONF"
for _ in $(seq 50); do [[ -s $work/slurmctld.pid ]] && break; sleep 0.1; done
started+=("$(cat "$work/slurmctld.pid")")
slurmd -f "$SLURM_CONF"
for _ in $(seq 50); do [[ -s $work/slurmd.pid ]] && break; sleep 0.1; done
started+=("$(cat "$work/slurmd.pid")")
for _ in $(seq 100); do sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed)' && break; sleep 0.2; done
sinfo
state=$(sinfo -h -N -o '%T' | head -n 1)
[[ $state == idle || $state == mixed ]] || { grep -E 'error' "$work/slurmctld.log" | tail -n 5; echo "local_e2e.sh: node is $state" >&2; exit 1; }

# The tuning night, small: the fake template's healthy space (18 configs) in 2 shards; each task asks for
# both pretend GPUs, and `--gpus all` starts a worker on each GPU of the CUDA_VISIBLE_DEVICES Slurm sets.
# The empty device files give Slurm no device index, so it sets SLURM_GPUS_ON_NODE but no
# CUDA_VISIBLE_DEVICES (real GPUs in gres.conf get one): a wrapper turns that count into pretend GPUs.
cat >"$work/attn-tuner-e2e" <<WRAP
#!/bin/bash
export ATTN_TUNER_FAKE_GPUS=\${SLURM_GPUS_ON_NODE:-1}
exec "$tuner" "\$@"
WRAP
chmod +x "$work/attn-tuner-e2e"
export ATTN_SHARD_DIR=$work/shards ATTN_MERGED_DB=$work/merged.db ATTN_TUNER=$work/attn-tuner-e2e
export FAKE_WORKER_DELAY=0.05
export ATTN_RUN_ARGS="--suite smoke --templates $repo/tests/data/fake_templates --template fake_healthy \
--strategy exhaustive --fidelity full --worker-exe $repo/tests/daemon/fake_worker.py --cache $work/cache --jobs 1"
ids=$("$here/submit.sh" 2 --cpus-per-task=1 --gres=gpu:2)
echo "$ids"
merge_id=$(sed -E 's/.*merge job ([0-9]+).*/\1/' <<<"$ids")
array_id=$(sed -E 's/^array job ([0-9]+).*/\1/' <<<"$ids")
for _ in $(seq 360); do
  [[ -z $(squeue -h -j "$array_id,$merge_id" 2>/dev/null) ]] && break
  sleep 0.5
done
scontrol show job "$merge_id" | grep -E "JobState|ExitCode"
scontrol show job "${array_id}_0" | grep -E "TresPerNode" || true
for t in 0 1; do scontrol show job "${array_id}_$t" | grep -E 'JobState|ExitCode' || true; done
tail -n 5 "$ATTN_SHARD_DIR"/*.out || true

# Checks: every config once, from both shards, an intact DB, an export.
fail() { echo "local_e2e.sh: FAILED: $*" >&2; exit 1; }
[[ -f $ATTN_MERGED_DB ]] || fail "no merged DB $ATTN_MERGED_DB"
q() { "$tuner" query --db "$ATTN_MERGED_DB" --format tsv sql "$1" | tail -n +2; }
[[ $(q "SELECT count(*) FROM iterations") == 18 ]] || fail "iterations: $(q 'SELECT count(*) FROM iterations'), expected 18"
[[ $(q "SELECT count(DISTINCT params) FROM iterations") == 18 ]] || fail "a config is missing or doubled"
[[ $(q "SELECT count(DISTINCT source_db) FROM iteration_sources") == 2 ]] || fail "provenance does not name 2 shards"
[[ $(q "SELECT count(DISTINCT gpu_index) FROM iterations") == 2 ]] || fail "each shard did not use 2 GPUs"
[[ $(q "PRAGMA integrity_check") == ok ]] || fail "integrity_check"
"$tuner" query --db "$ATTN_MERGED_DB" best
"$tuner" export --db "$ATTN_MERGED_DB" --out "$work/submission" --templates "$repo/tests/data/fake_templates"
[[ -f $work/submission/submission.py ]] || fail "export wrote no submission.py"
echo "local_e2e.sh: OK (Slurm array of 2 shards + merge: 18 configs, 2 sources, export written)"
