#!/usr/bin/env bash
# ncclscope-analyze against the dumps of real rank processes (ncclscope-sim through the built plugin): it must
# call a healthy job healthy (exit 0, right summary) and, for every fault kind, name exactly the faulty rank,
# communicator and sequence number as the one culprit (check_culprits.py on --json): a collective hang (from
# the stall dumps alone, where the hung rank wrote nothing, and after SIGUSR2 made every live rank dump), a
# point-to-point hang, a killed rank (dead, told by the survivors' network errors), a collective and a
# point-to-point straggler, a mismatched collective, and a hang in a tensor-parallel group that data-parallel
# ranks wait on (a chain across communicators). The classes of the live hang alert (not_joined, process,
# mismatch, kernel) on 3-rank jobs with --hang, --kill, --freeze, --mismatch and --stuck-kernel. It must also
# write a loadable merged trace and reject a corrupt dump naming the file (exit 2).
set -uo pipefail
sim=${1:?usage: analyze_test.sh SIM LIB_DIR ANALYZE}
lib=${2:?usage: analyze_test.sh SIM LIB_DIR ANALYZE}
analyze=${3:?usage: analyze_test.sh SIM LIB_DIR ANALYZE}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/ncclscope-analyze-XXXXXX)
trap '[ -n "${ANALYZE_TEST_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT  # ANALYZE_TEST_KEEP=1 keeps the dumps
fail=0
export LD_LIBRARY_PATH=$lib NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_STALL_TIMEOUT_S=1
job() {  # job NAME SIM_ARGS...: a sim job that dumps into $work/NAME
  local name=$1
  shift
  mkdir -p "$work/$name"
  NCCLSCOPE_DUMP_DIR="$work/$name" timeout 120 "$sim" "$@" >"$work/$name.sim.log" 2>&1
}
hung_job() {  # hung_job NAME DUMPS SIM_ARGS...: a hanging job; once DUMPS stall dumps exist, copy them to
  # NAME-stall, then SIGUSR2 every rank process so that the live ones (the hung rank too) dump into NAME
  local name=$1 want=$2
  shift 2
  mkdir -p "$work/$name"
  NCCLSCOPE_DUMP_DIR="$work/$name" "$sim" "$@" >"$work/$name.sim.log" 2>&1 &
  local pid=$! n=0
  for _ in $(seq 100); do
    n=$(find "$work/$name" -name 'ncclscope-comm-*' | wc -l)
    [ "$n" -ge "$want" ] && break
    sleep 0.1
  done
  sleep 0.2  # let the other stall dumps of the same instant land
  cp -r "$work/$name" "$work/$name-stall"
  for p in $(ps -o pid= --ppid "$pid"); do kill -USR2 "$p"; done
  wait "$pid"  # the sim ends the job at its --timeout; dumps are renamed into place whole
  [ "$n" -ge "$want" ] || { echo "FAIL: $name: only $n stall dumps"; fail=1; }
}
culprit() {  # culprit NAME KIND COMM_NAME RANK SEQ [--global-rank G]: exactly that one root cause in --json
  local name=$1
  shift
  python3 "$analyze" --json "$work/$name" >"$work/$name.json" 2>"$work/$name.json.err"
  python3 "$here/check_culprits.py" "$work/$name.json" "$@" || { echo "FAIL: $name: culprits"; fail=1; }
}
expect() {  # expect NAME STATUS PATTERN...: run the analyzer on NAME's dumps; every PATTERN must match a line
  local name=$1 want=$2
  shift 2
  python3 "$analyze" "$work/$name" >"$work/$name.out" 2>&1
  local rc=$?
  echo "--- $name (exit $rc)"
  head -2 "$work/$name.out"
  if [ "$rc" != "$want" ]; then echo "FAIL: $name: exit $rc, expected $want"; fail=1; fi
  for pattern in "$@"; do
    if ! grep -qE -- "$pattern" "$work/$name.out"; then
      echo "FAIL: $name: no line matches /$pattern/"; cat "$work/$name.out"; fail=1
    fi
  done
}

# 5 sizes (64K..1M) x (2 warm-up + 3 iterations) = 25 operations per function and rank; 2,031,616 B x 5.
job healthy --ranks 4 --comms 2 --ops allreduce,allgather --sizes 64K:1M --iters 3
expect healthy 0 "^healthy: 2 communicator" "sim-world\): healthy, 4/4 ranks" "sim-split-1\): healthy, 4/4 ranks" \
  "coll AllReduce +25 +10158080 .* 0-3:24" "coll AllGather +25 +10158080 " "dropped events: none"

hung_job hang 3 --ranks 4 --ops allreduce --sizes 64K:64K --iters 10 --hang 2@3 --timeout 8 --expect-hang
expect hang-stall 1 "HANG: rank 2 wrote no dump while ranks 0,1,3 wait in AllReduce seq 3" \
  "^PROBLEM: hang or death \(no dump\) at rank 2 of comm" "in_flight rank 0 on .*: AllReduce seq 3 .*stall watch fired"
culprit hang-stall hang sim-world 2 3
expect hang 1 "HANG: rank 2 never issued AllReduce seq 3, which ranks 0,1,3 are waiting in" "last AllReduce issued: rank 2: seq 2" \
  "culprit  hang \\[class not_joined\\]: global rank 2, pid [0-9]+ on .*Next: see where the process stopped"
culprit hang hang sim-world 2 3 --global-rank 2

hung_job p2p 3 --ranks 4 --ops sendrecv --sizes 64K:64K --iters 10 --hang 2@3 --timeout 8 --expect-hang
expect p2p 1 "HANG: rank 2 never posted the operation\(s\) matching rank 1's Send to 2 #4, rank 3's Recv from 2 #4"
culprit p2p hang sim-world 2 4

job kill --ranks 4 --ops allreduce --sizes 64K:64K --iters 10 --kill 1@3 --timeout 30
expect kill 1 "DEAD: rank 1 died \(no dump; .* lost the connection to .*global rank 1" "killed or crashed, not hung"
culprit kill dead sim-world 1 3 --global-rank 1

job straggle --ranks 4 --ops allreduce --sizes 256K:256K --iters 12 --straggle 3:30
expect straggle 6 "STRAGGLER: rank 3 arrives last in 1[2-4]/1[34] collectives, median [0-9.]+ ms after the first"
culprit straggle straggler sim-world 3 - --class straggler

# NCCL 2.31's symmetric kernels with KernelPhase events (mask 0x8046): the ranks' own barrier waits back the verdict.
NCCLSCOPE_EVENT_MASK=0x8046 job sym-straggle --abi 2.31 --symmetric --ranks 2 --ops allreduce --sizes 256K:256K \
  --iters 12 --straggle 1:30
expect sym-straggle 6 "STRAGGLER: rank 1 arrives last" "symmetric-kernel barrier wait per operation, ms: "
culprit sym-straggle straggler sim-world 1 -
python3 - "$work/sym-straggle.out" <<'PY' || { echo "FAIL: sym-straggle: rank 1 does not wait least at the barrier"; fail=1; }
import re, sys
line = next(l for l in open(sys.argv[1]) if "barrier wait per operation" in l)
waits = {int(r): float(ms) for r, ms in re.findall(r"(\d+): ([0-9.]+)", line.split("barrier wait per operation, ms:")[1])}
print("--- sym-straggle barrier waits (ms):", waits)
assert min(waits, key=waits.get) == 1, waits
PY

job p2p-straggle --ranks 4 --ops sendrecv --sizes 256K:256K --iters 12 --straggle 3:30
expect p2p-straggle 6 "STRAGGLER: rank 3 arrives last in [0-9]+/[0-9]+ point-to-point transfers"
culprit p2p-straggle straggler sim-world 3 -

hung_job mismatch 4 --ranks 4 --ops allreduce --sizes 64K:64K --iters 10 --mismatch 2@3 --timeout 8 --expect-hang
expect mismatch 1 "MISMATCH: rank 2 issued AllGather seq 0 as operation #[0-9]+ of the communicator, where ranks 0,1,3 issued AllReduce seq 3"
culprit mismatch mismatch sim-world 2 0

# Tensor-parallel groups {0,1} {2,3}, data-parallel groups {0,2} {1,3}; global rank 1 stops before its TP
# AllReduce seq 3: rank 0 waits in TP, rank 2 in DP on rank 0, rank 3 in DP on rank 1. One culprit: global rank 1.
hung_job chain 3 --ranks 4 --layout tp=2 --ops allreduce --sizes 64K:64K --iters 10 --hang 1@3 --timeout 8 --expect-hang
# Global rank 1 issued neither its TP nor its DP AllReduce seq 3. Its own dumps (SIGUSR2) say TP is next: its
# last TP operation is older than its last DP one. The stall dumps have none of its own, and the analyzer names
# first the communicator where the wait on it began first: TP's unless rank 0 reached seq 3 after rank 3 (a race).
culprit chain-stall hang sim-tp-0 1 3 --global-rank 1 --or-where sim-dp-1:0
culprit chain hang sim-tp-0 1 3 --global-rank 1
expect chain 1 "itself waiting elsewhere: the chain ends at global rank 1"

# The live hang alert's classes (rules/ncclscope-hang.yml) from the dumps the built library writes: one 3-rank
# job per class the sim produces, all at once, with the adaptive stall threshold's default 2 s floor and a 6 s
# cap (the default 30 s cap would let a loaded machine's slow operations push a warm AllReduce's threshold to 8x
# their time, up to 30 s; the classes do not depend on it). The analyzer must name the
# culprit global rank and the class the alert names: --hang: not_joined; --kill (survivors hold the failed op):
# process; --freeze (SIGSTOP before the op): process; --mismatch: mismatch; --stuck-kernel: kernel. Each is
# checked on the stall dumps alone (NAME-stall) and after SIGUSR2 made every live rank dump (NAME).
class_job() {  # class_job [--to-end] NAME STALL REQ SIM_ARGS...: dumps into NAME.run; once STALL stall dumps
  # exist, copies them to NAME-stall, sends SIGUSR2 to every rank process and, once REQ dumps answered, copies the
  # lot to NAME (before the job's end adds any finalize dump), and ends the job; with --to-end it lets the job end
  # by itself and copies NAME.run, finalize dumps included, to NAME-end. Runs in the background: failures go to
  # NAME.fail.
  local to_end=
  [ "$1" = --to-end ] && { to_end=1; shift; }
  local name=$1 stall=$2 req=$3
  shift 3
  local run="$work/$name.run" n=0 m=0
  mkdir -p "$run"
  NCCLSCOPE_STALL_TIMEOUT_S=6 NCCLSCOPE_DUMP_DIR="$run" "$sim" "$@" >"$work/$name.sim.log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do  # stall and request dumps go to NAME.run/<host>/
    n=$(find "$run" -mindepth 2 -name 'ncclscope-comm-*' | wc -l)
    [ "$n" -ge "$stall" ] && break
    sleep 0.1
  done
  sleep 0.3  # let the other stall dumps of the same instant land
  cp -r "$run" "$work/$name-stall"
  touch "$work/$name.signalled"
  for p in $(ps -o pid= --ppid "$pid"); do kill -USR2 "$p"; done
  for _ in $(seq 50); do
    m=$(find "$run" -mindepth 2 -name 'ncclscope-comm-*' -newer "$work/$name.signalled" | wc -l)
    [ "$m" -ge "$req" ] && break
    sleep 0.1
  done
  cp -r "$run" "$work/$name"
  # The dumps are taken: end the job now (its ranks die with the launcher: PDEATHSIG), or wait for its end.
  [ -n "$to_end" ] || kill "$pid" 2>/dev/null
  wait "$pid"
  local rc=$?
  [ -n "$to_end" ] && cp -r "$run" "$work/$name-end"
  { [ "$n" -ge "$stall" ] || echo "FAIL: $name: $n stall dumps, expected $stall"
    [ "$m" -ge "$req" ] || echo "FAIL: $name: $m dumps answered SIGUSR2, expected $req"
    [ -z "$to_end" ] || [ "$rc" = 3 ] || echo "FAIL: $name: ncclscope-sim exited $rc, expected 3 (a kill run)"
  } >"$work/$name.fail"
}
cls="--ranks 3 --ops allreduce --sizes 64K:64K --iters 60 --expect-hang"
# Each job but the kill is ended once its dumps are taken: --timeout only bounds a loaded machine's run.
class_job cls-hang 2 3 $cls --hang 1@40 --timeout 90 &
class_job --to-end cls-kill 2 2 ${cls% --expect-hang} --kill 1@40 --hold-on-error 8 --timeout 90 &
class_job cls-freeze 2 2 $cls --freeze 2@40 --timeout 90 &
class_job cls-mismatch 3 3 $cls --mismatch 1@40 --timeout 90 &
class_job cls-stuck 3 3 $cls --stuck-kernel 2@40 --timeout 90 &
wait
for name in cls-hang cls-kill cls-freeze cls-mismatch cls-stuck; do
  [ -s "$work/$name.fail" ] && { cat "$work/$name.fail"; fail=1; }
done
# Rank 1 stopped before its AllReduce seq 40 with nothing in flight, so it writes no stall dump: from the stall
# dumps alone it is a rank without a dump (class process: alive or not, the dumps cannot tell; the alert sees its
# target up); its own dump on SIGUSR2 shows it behind with nothing in flight, the alert's not_joined.
culprit cls-hang-stall hang sim-world 1 40 --global-rank 1 --class process
culprit cls-hang hang sim-world 1 40 --global-rank 1 --class not_joined
# The survivors' wait entries and network errors name the killed process, whose connections failed.
culprit cls-kill-stall dead sim-world 1 40 --global-rank 1 --class process
culprit cls-kill dead sim-world 1 40 --global-rank 1 --class process
# After the 8 s hold the survivors abort; their finalize dumps still have the op in flight, now of wait class
# "launched" (their connections are closed: where it waits is no longer known), and the same culprit.
culprit cls-kill-end dead sim-world 1 40 --global-rank 1 --class process
python3 - "$work/cls-kill-end.json" <<'PY' || { echo "FAIL: cls-kill-end: the survivors' finalize dumps do not wait (launched)"; fail=1; }
import json, sys
[c] = json.load(open(sys.argv[1]))["communicators"]
waits = {f["ranks"][0]: f["class"] for f in c["findings"] if f["kind"] == "wait"}
print("--- cls-kill-end waits:", waits)
assert waits == {0: "launched", 2: "launched"}, waits
PY
expect cls-kill 1 "DEAD: rank 1 died \(no dump; ranks 0,2 lost the connection to global rank 1"
# The frozen rank writes nothing (its stall watch is stopped too, and SIGUSR2 stays pending); the others' wait
# entries name global rank 2, and on SIGUSR2 they answered where it did not.
culprit cls-freeze-stall process sim-world 2 40 --global-rank 2 --class process
culprit cls-freeze dead sim-world 2 40 --global-rank 2 --class process
expect cls-freeze 1 "DEAD: rank 2 wrote no dump although ranks 0,1 answered the dump signal"
culprit cls-mismatch-stall mismatch sim-world 1 0 --global-rank 1 --class mismatch
culprit cls-mismatch mismatch sim-world 1 0 --global-rank 1 --class mismatch
culprit cls-stuck-stall kernel sim-world 2 40 --global-rank 2 --class kernel
culprit cls-stuck kernel sim-world 2 40 --global-rank 2 --class kernel
expect cls-stuck 1 "rank 2 \(global rank 2 on .*\) is stuck in its own kernel of AllReduce seq 40"

# The dumps real NCCL left in the golden abort scenario (rank 0 waits in a second all-reduce that rank 1 never
# issued; tests/data/golden/README.md): 2.28.9 on an H100 (v1 dumps), 2.30.7 on an H200 (v2 dumps).
for nccl in 2.28.9 2.30.7; do
  mkdir -p "$work/real_abort_$nccl" && cp "$here"/../data/golden/nccl-$nccl/abort/dumps/* "$work/real_abort_$nccl/"
  expect "real_abort_$nccl" 1 "HANG: rank 1 never issued AllReduce seq 1, which rank 0 is waiting in" "network steps 0/16"
  culprit "real_abort_$nccl" hang "" 1 1
done

python3 "$analyze" --json "$work/healthy" >"$work/healthy.json"
rc=$?
python3 - "$work/healthy.json" <<'PY' || { echo "FAIL: --json (exit $rc)"; fail=1; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "ncclscope.analyze.v2" and r["status"] == "healthy" and r["culprits"] == [], r["verdict"]
assert len(r["communicators"]) == 2 and all(c["summary"]["ranks_found"] == [0, 1, 2, 3] for c in r["communicators"])
print("--- json:", r["verdict"])
PY
[ "$rc" = 0 ] || { echo "FAIL: --json exit $rc"; fail=1; }

python3 "$analyze" --trace "$work/trace.json" "$work/healthy" >/dev/null
python3 - "$work/trace.json" <<'PY' || { echo "FAIL: merged trace"; fail=1; }
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ops = [e for e in events if e["ph"] == "X"]
procs = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
print(f"--- merged trace: {len(ops)} operations, {len(procs)} processes, {len(tracks)} tracks")
assert len(ops) == 4 * 2 * 2 * 25 and len(procs) == 4 and len(tracks) == 8
PY

cp -r "$work/healthy" "$work/corrupt" && echo '{"schema": "ncclscope.comm.v1", "rank": 0' >"$work/corrupt/ncclscope-comm-bad-rank9.json"
python3 "$analyze" "$work/corrupt" >/dev/null 2>"$work/corrupt.err"
rc=$?
echo "--- corrupt (exit $rc): $(cat "$work/corrupt.err")"
[ "$rc" = 2 ] && grep -q "corrupt/ncclscope-comm-bad-rank9.json: not JSON" "$work/corrupt.err" || { echo "FAIL: corrupt dump"; fail=1; }
python3 "$analyze" "$work/trace.json" >/dev/null 2>"$work/schema.err"
rc=$?
echo "--- wrong schema (exit $rc): $(cat "$work/schema.err")"
[ "$rc" = 2 ] && grep -q "trace.json: not an ncclscope dump" "$work/schema.err" || { echo "FAIL: wrong schema"; fail=1; }
exit $fail
