#!/usr/bin/env bash
# ncclscope-cleanup and the output lifecycle, across real processes: a sim job's textfiles and file_sd targets
# outlive it (for the grace period); the cleanup command never removes the files of a live job (lock held),
# keeps those of a gone job within the grace, removes them after it (or at once with --grace 0), prints each
# file it removed, and exits 0 (done), 1 (a folder it cannot read) or 2 (usage).
set -u
sim=${1:?usage: cleanup_test.sh SIM CLEANUP LIB_DIR}
cleanup=${2:?usage: cleanup_test.sh SIM CLEANUP LIB_DIR}
libdir=${3:?usage: cleanup_test.sh SIM CLEANUP LIB_DIR}
work=$(mktemp -d /tmp/ncclscope-cleanup-XXXXXX)
simpid=""
trap '[ -n "$simpid" ] && kill -9 "$simpid" 2>/dev/null; rm -rf "$work"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
count() { find "$1" -maxdepth 1 -name "ncclscope-*$2" | wc -l; }
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Usage.
"$cleanup" >/dev/null 2>"$work/err"; rc=$?
check "no DIR: exit 2 ($rc), one line naming the problem" '[ $rc = 2 ] && grep -q "no DIR given" "$work/err"'
for bad in "--grace" "--grace x" "--grace -1" "--grace 86401" "--bogus"; do
  # shellcheck disable=SC2086
  "$cleanup" "$work" $bad >/dev/null 2>"$work/err"; rc=$?
  check "'$bad': exit 2 ($rc)" '[ $rc = 2 ] && grep -q "try --help" "$work/err"'
done
"$cleanup" --help >"$work/out"; rc=$?
check "--help: exit 0 with the usage" '[ $rc = 0 ] && grep -q "usage: ncclscope-cleanup DIR" "$work/out"'
"$cleanup" "$work/missing" >/dev/null 2>"$work/err"; rc=$?
check "an unreadable folder: exit 1 ($rc)" '[ $rc = 1 ] && grep -q "cannot open" "$work/err"'

# A finished job: its 2 textfiles and 2 file_sd targets stay.
mkdir -p "$work/done"
NCCLSCOPE_PROM_TEXTFILE_DIR="$work/done" NCCLSCOPE_SD_DIR="$work/done" NCCLSCOPE_PROM_PORT=0 NCCLSCOPE_PROM_BIND=127.0.0.1 \
  timeout 60 "$sim" --ranks 2 --ops allreduce --sizes 64K:64K --iters 10 >"$work/sim1.log" 2>&1 ||
  { echo "FAIL: the sim failed"; tail -5 "$work/sim1.log"; exit 1; }
check "a finished job leaves 2 textfiles and 2 targets" '[ "$(count "$work/done" .prom)" = 2 ] && [ "$(count "$work/done" .json)" = 2 ]'
"$cleanup" "$work/done" >"$work/out"; rc=$?
check "within the grace (default 60 s): nothing removed, exit 0" '[ $rc = 0 ] && [ ! -s "$work/out" ] && [ "$(count "$work/done" "")" = 4 ]'

# A running job (locks held): nothing of it is removed, even with --grace 0.
mkdir -p "$work/live"
NCCLSCOPE_PROM_TEXTFILE_DIR="$work/live" NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S=1 NCCLSCOPE_PROM_PORT=-1 \
  "$sim" --ranks 2 --ops allreduce --sizes 64K:64K --iters 100000000 >"$work/sim2.log" 2>&1 &
simpid=$!
for _ in $(seq 1 100); do [ "$(count "$work/live" .prom)" = 2 ] && break; sleep 0.1; done
"$cleanup" --grace 0 "$work/live" >"$work/out"; rc=$?
check "a live job's files are kept with --grace 0" '[ $rc = 0 ] && [ ! -s "$work/out" ] && [ "$(count "$work/live" .prom)" = 2 ]'
# Since 2026-11-27: free, stale locks named with the empty tag and with a prefix of a live rank's tag (the host
# part), listing the live textfiles (anyone who can write the work folder can make them), claim none of them;
# the sweep removes only those locks.
wf=$(echo "$work"/live/.ncclscope-work-*)
prefix=$(find "$wf" -name '*.lock' -printf '%f\n' | head -1 | cut -d- -f1)
find "$work/live" -maxdepth 1 -name 'ncclscope-*.prom' -printf '%f\n' >"$wf/.lock"
cp "$wf/.lock" "$wf/$prefix.lock"
touch -d '2 hours ago' "$wf/.lock" "$wf/$prefix.lock"
"$cleanup" --grace 0 "$work/live" >"$work/out"; rc=$?
check "locks named '' and '$prefix' listing the live textfiles remove none of them" \
  '[ $rc = 0 ] && [ ! -s "$work/out" ] && [ "$(count "$work/live" .prom)" = 2 ] && [ ! -e "$wf/.lock" ] && [ ! -e "$wf/$prefix.lock" ]'
# It crashes (the launcher killed; its ranks die with it): the locks are free, the files within their grace.
kill -9 "$simpid"; wait "$simpid" 2>/dev/null; simpid=""
for _ in $(seq 1 50); do pgrep -f "ncclscope-sim --ranks 2 --ops allreduce --sizes 64K:64K --iters 100000000" >/dev/null || break; sleep 0.1; done
"$cleanup" --grace 3600 "$work/live" >"$work/out"; rc=$?
check "a crashed job's files are kept within --grace 3600" '[ $rc = 0 ] && [ ! -s "$work/out" ] && [ "$(count "$work/live" .prom)" = 2 ]'

# A running ncclscope process removes them too, periodically: a job with NCCLSCOPE_OUTPUT_GRACE_S=2 started
# next to the files of a job that crashed just now keeps them at its start (in their grace) and removes them
# on a later pass (one a second at this grace), while it runs.
mkdir -p "$work/next"
cp -a "$work/live/." "$work/next/"  # the crashed job's files and free locks
touch "$work"/next/.ncclscope-work-*/*.lock  # as if it had crashed just now: in its grace when the next job starts
t0=$(date +%s%N)
before=$(count "$work/next" .prom)
NCCLSCOPE_PROM_TEXTFILE_DIR="$work/next" NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S=1 NCCLSCOPE_OUTPUT_GRACE_S=2 NCCLSCOPE_PROM_PORT=-1 \
  "$sim" --ranks 2 --ops allreduce --sizes 64K:64K --iters 100000000 >"$work/sim3.log" 2>&1 &
simpid=$!
gone=""
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 8000 ]; do  # up to 8 s: the grace (2 s) and a pass every second
  left=0
  for f in "$work"/live/ncclscope-*.prom; do [ -e "$work/next/$(basename "$f")" ] && left=$((left + 1)); done
  [ "$left" = 0 ] && { gone=$(( ($(date +%s%N) - t0) / 1000000 )); break; }
  sleep 0.05
done
for _ in $(seq 1 30); do [ "$(count "$work/next" .prom)" = 2 ] && break; sleep 0.1; done  # its own first writes
ours=$(count "$work/next" .prom)
kill -9 "$simpid"; wait "$simpid" 2>/dev/null; simpid=""
check "a running job removed the $before stale textfiles ${gone:-?} ms after the crash (grace 2 s) and kept its own $ours" \
  '[ "$before" = 2 ] && [ -n "$gone" ] && [ "$gone" -ge 2000 ] && [ "$ours" = 2 ]'

# --grace 0 over both folders: all 6 files removed and printed, the work folders emptied.
"$cleanup" "$work/done" "$work/live" --grace=0 >"$work/out"; rc=$?
check "--grace 0: exit 0, 6 files removed and printed" '[ $rc = 0 ] && [ "$(grep -c "^removed " "$work/out")" = 6 ]'
check "nothing of ours left" '[ "$(count "$work/done" "")" = 0 ] && [ "$(count "$work/live" "")" = 0 ] && [ -z "$(find "$work"/done/.ncclscope-work-* "$work"/live/.ncclscope-work-* -mindepth 1)" ]'
cat "$work/out"
exit $fail
