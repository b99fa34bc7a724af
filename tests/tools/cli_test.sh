#!/usr/bin/env bash
# The command lines of ncclscope-sim, ncclscope-params and ncclscope-loadcheck: --help prints the usage on stdout
# and exits 0; an unknown option, a missing or extra argument, or a malformed number exits 2 with one line on
# stderr naming the option (and the value) and "(try --help)"; loadcheck opens no metrics endpoint unless
# --metrics asks for one.
set -u
sim=${1:?usage: cli_test.sh SIM PARAMS LOADCHECK PLUGIN}
params=${2:?usage: cli_test.sh SIM PARAMS LOADCHECK PLUGIN}
loadcheck=${3:?usage: cli_test.sh SIM PARAMS LOADCHECK PLUGIN}
plugin=${4:?usage: cli_test.sh SIM PARAMS LOADCHECK PLUGIN}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  echo "--- stdout"; cat "$work/out"
  echo "--- stderr"; cat "$work/err"
  failures=$((failures + 1))
}

# expect RC STREAM(out|err) PATTERN TOOL ARGS…: runs TOOL ARGS…, checks the exit status and that PATTERN
# (a fixed string) is in the named stream.
expect() {
  local rc=$1 stream=$2 pattern=$3; shift 3
  timeout 60 "$@" >"$work/out" 2>"$work/err"
  local got=$?
  local name; name=$(basename "$1")
  shift
  local shown="$name $*"
  if [ "$got" -ne "$rc" ]; then fail "$shown: exit $got, want $rc"; return; fi
  if ! grep -qF -- "$pattern" "$work/$stream"; then fail "$shown: std$stream lacks '$pattern'"; return; fi
  if [ "$rc" -eq 2 ]; then
    # A usage error is one line on stderr, nothing on stdout.
    if [ "$(wc -l <"$work/err")" -ne 1 ] || [ -s "$work/out" ]; then fail "$shown: want one line on stderr only"; return; fi
    if ! grep -qF "(try --help)" "$work/err"; then fail "$shown: no '(try --help)' hint"; return; fi
  fi
  echo "ok: $shown -> $got"
}

for tool in "$sim" "$params" "$loadcheck"; do
  name=$(basename "$tool")
  expect 0 out "usage: $name" "$tool" --help
  expect 0 out "usage: $name" "$tool" -h
  expect 2 err "$name: unknown option '--no-such-option' (try --help)" "$tool" --no-such-option
done

# ncclscope-sim: every numeric option parsed whole.
expect 2 err "bad value '10x' for --iters" "$sim" --iters 10x
expect 2 err "bad value '' for --ranks" "$sim" --ranks ''
expect 2 err "bad value '-1' for --ranks" "$sim" --ranks -1
expect 2 err "bad value '99999999999999999999' for --ranks" "$sim" --ranks 99999999999999999999
expect 2 err "bad value '1X:2M' for --sizes" "$sim" --sizes 1X:2M
expect 2 err "bad value '8:1M ' for --sizes" "$sim" --sizes '8:1M '
expect 2 err "bad value '8:99999999999999999999' for --sizes" "$sim" --sizes 8:99999999999999999999
expect 2 err "bad value '8:17179869184G' for --sizes" "$sim" --sizes 8:17179869184G
expect 2 err "bad value '1:5x' for --straggle" "$sim" --straggle 1:5x
expect 2 err "bad value '1:3600001' for --straggle" "$sim" --straggle 1:3600001
expect 2 err "bad value '-1:5' for --straggle" "$sim" --straggle -1:5
expect 2 err "bad value '1@' for --hang" "$sim" --hang 1@
expect 2 err "bad value '1@2.5' for --kill" "$sim" --kill 1@2.5
expect 2 err "bad value '-1' for --warmup" "$sim" --warmup -1
expect 2 err "bad value '3x' for --comms" "$sim" --comms 3x
expect 2 err "bad value '0x4' for --channels" "$sim" --channels 0x4
expect 2 err "bad value '2.5' for --factor" "$sim" --factor 2.5
expect 2 err "bad value '5s' for --timeout" "$sim" --timeout 5s
expect 2 err "bad value 'nan' for --timeout" "$sim" --timeout nan
expect 2 err "bad value '1e' for --graph-replay" "$sim" --graph-replay 1e
expect 2 err "bad value '-2' for --compare-profiler" "$sim" --compare-profiler -2
expect 2 err "bad value '13' for --net-max-version" "$sim" --net-max-version 13
expect 2 err "bad value '6' for --step-bytes" "$sim" --step-bytes 6
expect 2 err "bad value '1 ' for --rank" "$sim" --rank '1 ' --root 127.0.0.1:1
expect 2 err "bad value '127.0.0.1:http' for --root" "$sim" --rank 1 --root 127.0.0.1:http
expect 2 err "bad value '2' for --ib-events" "$sim" --ib-events 2
expect 2 err "bad value '0:1' for --ib-events" "$sim" --ib-events 0:1
expect 2 err "bad value '65:1' for --ib-events" "$sim" --ib-events 65:1
expect 2 err "bad value '2:9' for --ib-events" "$sim" --ib-events 2:9
expect 2 err "bad value '2:3x' for --ib-events" "$sim" --ib-events 2:3x
expect 2 err "option '--iters' needs a value" "$sim" --iters
expect 2 err "unexpected argument 'stray'" "$sim" stray
expect 2 err "--kill rank 4 must be < --ranks 2" "$sim" --kill 4@1
# --clock-offset RANK:MS[,RANK:MS…], repeatable: signed MS of at most a day, each rank once, rank < --ranks.
expect 0 out "--clock-offset RANK:MS" "$sim" --help
expect 2 err "bad value '1' for --clock-offset: want RANK:MS" "$sim" --clock-offset 1
expect 2 err "bad value '1:5x' for --clock-offset: MS not an integer" "$sim" --clock-offset 1:5x
expect 2 err "bad value '1:+5' for --clock-offset: MS not an integer" "$sim" --clock-offset 1:+5
expect 2 err "bad value 'x:5' for --clock-offset: rank not an integer" "$sim" --clock-offset x:5
expect 2 err "bad value '-1:5' for --clock-offset: rank must not be negative" "$sim" --clock-offset -1:5
expect 2 err "bad value '1:86400001' for --clock-offset: MS out of range" "$sim" --clock-offset 1:86400001
expect 2 err "bad value '1:-86400001' for --clock-offset: MS out of range" "$sim" --clock-offset 1:-86400001
expect 2 err "bad value '0:5,' for --clock-offset: want RANK:MS" "$sim" --clock-offset 0:5,
expect 2 err "bad value '0:5,,1:3' for --clock-offset: want RANK:MS" "$sim" --clock-offset 0:5,,1:3
expect 2 err "bad value '1:5,1:-5' for --clock-offset: rank 1 given twice" "$sim" --clock-offset 1:5,1:-5
expect 2 err "bad value '1:7' for --clock-offset: rank 1 given twice" "$sim" --clock-offset 1:5 --clock-offset 1:7
expect 2 err "--clock-offset rank 2 must be < --ranks 2" "$sim" --clock-offset 0:-5,2:5
expect 2 err "option '--clock-offset' needs a value" "$sim" --clock-offset

# --mismatch RANK@SEQ and --layout tp=K: strict values, and the combinations the sim cannot run.
expect 0 out "--mismatch RANK@SEQ" "$sim" --help
expect 0 out "--layout tp=K" "$sim" --help
expect 2 err "bad value '1@' for --mismatch: SEQ empty" "$sim" --mismatch 1@
expect 2 err "bad value '1' for --mismatch: want RANK@SEQ" "$sim" --mismatch 1
expect 2 err "bad value 'x@3' for --mismatch: rank not an integer" "$sim" --mismatch x@3
expect 2 err "bad value '1@-3' for --mismatch: SEQ must not be negative" "$sim" --mismatch 1@-3
expect 2 err "--mismatch rank 4 must be < --ranks 4" "$sim" --ranks 4 --mismatch 4@1
expect 2 err "option '--mismatch' needs a value" "$sim" --mismatch
expect 2 err "bad value 'tp=x' for --layout: K not an integer" "$sim" --ranks 4 --layout tp=x
expect 2 err "bad value 'tp=' for --layout: K empty" "$sim" --ranks 4 --layout tp=
expect 2 err "bad value 'tp=1' for --layout: K out of range" "$sim" --ranks 4 --layout tp=1
expect 2 err "bad value 'dp=2' for --layout: want tp=K" "$sim" --ranks 4 --layout dp=2
expect 2 err "bad value 'tp=2 ' for --layout: K not an integer" "$sim" --ranks 4 --layout 'tp=2 '
expect 2 err "--layout tp=3: K must divide --ranks 4" "$sim" --ranks 4 --layout tp=3
expect 2 err "--layout tp=4: K must be < --ranks 4" "$sim" --ranks 4 --layout tp=4
expect 2 err "--layout tp=2: K must be < --ranks 2" "$sim" --layout tp=2
expect 2 err "--layout makes the communicators: it excludes --comms 2" "$sim" --ranks 4 --layout tp=2 --comms 2
expect 2 err "option '--layout' needs a value" "$sim" --layout

# ncclscope-params: no argument, --check or --help only.
expect 0 out "NCCLSCOPE_PROM_PORT" "$params"
expect 0 out "NCCLSCOPE_PROM_PORT=" "$params" --check
expect 2 err "ncclscope-params: unexpected argument 'extra'" "$params" --check extra
expect 2 err "ncclscope-params: unexpected argument 'check'" "$params" check

# ncclscope-loadcheck: one plugin path; no metrics endpoint unless --metrics, even with NCCLSCOPE_PROM_PORT set.
expect 2 err "ncclscope-loadcheck: missing PLUGIN.so" "$loadcheck"
expect 2 err "ncclscope-loadcheck: unexpected argument 'second.so'" "$loadcheck" "$plugin" second.so
export NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_BIND=127.0.0.1
NCCLSCOPE_PROM_PORT=0 expect 0 out "metrics endpoint: off for the check" "$loadcheck" "$plugin"
if grep -q "metrics endpoint at" "$work/out" "$work/err"; then fail "loadcheck without --metrics started the endpoint"; fi
grep -q "^OK: " "$work/out" || fail "loadcheck without --metrics did not pass"
NCCLSCOPE_PROM_PORT=0 expect 0 out "metrics endpoint at http://" "$loadcheck" --metrics "$plugin"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all command-line checks passed"
