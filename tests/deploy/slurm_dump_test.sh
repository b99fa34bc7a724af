#!/usr/bin/env bash
# deploy/slurm/ncclscope-dump.sh against real rank processes (ncclscope-sim through the built plugin) started
# as one Slurm job would start them (SLURM_JOB_ID in their environment): it must make every rank of that job
# dump (reason "request"), including the hung one, and signal nothing else: not a process of the same job
# without ncclscope (a wrapper), not ranks of the same job whose dump signal is off (NCCLSCOPE_DUMP_SIGNAL=none:
# SIGUSR2 would kill them), not ranks of another job. All of them must still be alive afterwards.
set -u
sim=${1:?usage: slurm_dump_test.sh SIM LIB_DIR}
lib=${2:?usage: slurm_dump_test.sh SIM LIB_DIR}
tool=$(cd "$(dirname "$0")/../../deploy/slurm" && pwd)/ncclscope-dump.sh
work=$(mktemp -d /tmp/ncclscope-slurm-dump-XXXXXX)
job=ncclscope-test-$$-$RANDOM
pids=()
cleanup() {
  exec 2>/dev/null  # no "Killed" lines from the shell
  for p in "${pids[@]}"; do pkill -9 -P "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail=0
export LD_LIBRARY_PATH=$lib NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_STALL_TIMEOUT_S=600 NCCLSCOPE_STALL_FLOOR_MS=3600000
hang=(--ranks 3 --ops allreduce --sizes 64K:64K --iters 10 --hang 1@3 --timeout 60 --expect-hang)

mkdir -p "$work/job" "$work/off" "$work/other"
SLURM_JOB_ID=$job NCCLSCOPE_DUMP_DIR=$work/job "$sim" "${hang[@]}" >"$work/job.log" 2>&1 &
job_sim=$!
pids+=("$job_sim")
SLURM_JOB_ID=$job NCCLSCOPE_DUMP_DIR=$work/off NCCLSCOPE_DUMP_SIGNAL=none "$sim" "${hang[@]}" >"$work/off.log" 2>&1 &
off_sim=$!
pids+=("$off_sim")
SLURM_JOB_ID=$job-other NCCLSCOPE_DUMP_DIR=$work/other "$sim" "${hang[@]}" >"$work/other.log" 2>&1 &
other_sim=$!
pids+=("$other_sim")
SLURM_JOB_ID=$job sleep 120 &
wrapper=$!
pids+=("$wrapper")

# The ranks catch the signal once their communicator is up; until then the helper skips them (and signals nothing,
# exit 1, while none does). Wait until all 3 of the job's ranks catch SIGUSR2 (bit 12 of SigCgt), so the helper's
# one run finds them all: on a loaded host it found 2 of 3 once and stopped there.
catching() {  # catching PID: how many child processes of PID catch SIGUSR2
  local n=0 c mask
  for c in $(ps -o pid= --ppid "$1"); do
    mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$c/status" 2>/dev/null)
    [ -n "$mask" ] && (( 0x$mask & 0x800 )) && n=$((n + 1))
  done
  echo "$n"
}
for _ in $(seq 300); do
  [ "$(catching "$job_sim")" -ge 3 ] && break
  sleep 0.1
done
ok=0
for _ in $(seq 150); do
  if "$tool" "$job" >"$work/tool.log" 2>&1; then ok=1; break; fi
  sleep 0.2
done
cat "$work/tool.log"
[ "$ok" = 1 ] || { echo "FAIL: the helper never found the job's ranks"; fail=1; }
grep -q "sent to 3 ncclscope process(es) with SLURM_JOB_ID=$job\$" "$work/tool.log" ||
  { echo "FAIL: not exactly the 3 ranks"; fail=1; }

requests() {  # requests DIR: how many dumps under DIR the dump signal asked for
  for f in $(find "$1" -name 'ncclscope-comm-*.json.gz'); do zcat "$f" | head -1; done | grep -c '"reason":"request"'
}
wait_requests() {  # wait_requests DIR N: the request dumps under DIR once N are there, or after 20 s
  local n=0
  for _ in $(seq 100); do
    n=$(requests "$1")
    [ "$n" -ge "$2" ] && break
    sleep 0.2
  done
  echo "$n"
}
n=$(wait_requests "$work/job" 3)
[ "$n" -eq 3 ] || { echo "FAIL: $n request dumps from the job's 3 ranks (the hung one included), want 3"; fail=1; }
[ "$(requests "$work/other")" -eq 0 ] || { echo "FAIL: another job's ranks dumped"; fail=1; }
for p in "$job_sim" "$off_sim" "$other_sim" "$wrapper"; do
  kill -0 "$p" 2>/dev/null || { echo "FAIL: process $p died"; fail=1; }
done
for p in $(ps -o pid= --ppid "$off_sim") $(ps -o pid= --ppid "$other_sim"); do
  kill -0 "$p" 2>/dev/null || { echo "FAIL: rank process $p died"; fail=1; }
done
[ "$(ps -o pid= --ppid "$off_sim" | wc -l)" -eq 3 ] ||
  { echo "FAIL: a rank of the job with the signal off died"; fail=1; }
# VAR=VALUE: the other job's ranks, by a variable only they have (as a pod's ConfigMap variables).
"$tool" "SLURM_JOB_ID=$job-other" >"$work/tool2.log" 2>&1 || { echo "FAIL: VAR=VALUE found nothing"; fail=1; }
cat "$work/tool2.log"
n=$(wait_requests "$work/other" 3)
[ "$n" -eq 3 ] || { echo "FAIL: $n request dumps from the other job's ranks selected by VAR=VALUE, want 3"; fail=1; }
[ "$(requests "$work/job")" -eq 3 ] || { echo "FAIL: the first job's ranks dumped again"; fail=1; }
# Usage errors.
env -u SLURM_JOB_ID "$tool" >/dev/null 2>&1 && { echo "FAIL: no job id accepted"; fail=1; }
NCCLSCOPE_DUMP_SIGNAL=none "$tool" "$job" >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: NCCLSCOPE_DUMP_SIGNAL=none is no usage error"; fail=1; }
[ "$fail" = 0 ] && echo "PASS: the dump helper signalled the job's 3 ranks and nothing else"
exit "$fail"
