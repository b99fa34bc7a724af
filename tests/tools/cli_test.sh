#!/usr/bin/env bash
# The command lines of ncclscope-sim, ncclscope-params and ncclscope-loadcheck: --help prints the usage on stdout
# and exits 0; an unknown option, a missing or extra argument, or a malformed number exits 2 with one line on
# stderr naming the option (and the value) and "(try --help)"; loadcheck opens no metrics endpoint unless
# --metrics asks for one. Every tool (those three, ncclscope-cleanup and ncclscope-analyze) prints
# `ncclscope-<tool> VERSION` for --version; params --check exits 1 on a refused value or a misspelt NCCLSCOPE_*
# variable (named with the nearest known one); the --json of params
# and loadcheck parses (python3) and says what it should; loadcheck resolves a plugin name as NCCL does.
set -u
usage="usage: cli_test.sh SIM PARAMS LOADCHECK PLUGIN CLEANUP ANALYZE VERSION"
sim=${1:?$usage}
params=${2:?$usage}
loadcheck=${3:?$usage}
plugin=${4:?$usage}
cleanup=${5:?$usage}
analyze=${6:?$usage}
version=${7:?$usage}
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

# --pause RANK:SECONDS/EVERY: SECONDS a decimal in (0, 3600], EVERY at least 1, rank < --ranks.
expect 0 out "--pause RANK:SECONDS/EVERY" "$sim" --help
expect 2 err "bad value '1:20' for --pause: want RANK:SECONDS/EVERY" "$sim" --pause 1:20
expect 2 err "bad value '1' for --pause: want RANK:SECONDS/EVERY" "$sim" --pause 1
expect 2 err "bad value 'x:20/5' for --pause: rank not an integer" "$sim" --pause x:20/5
expect 2 err "bad value '-1:20/5' for --pause: rank must not be negative" "$sim" --pause -1:20/5
expect 2 err "bad value '1:20s/5' for --pause: SECONDS not a number" "$sim" --pause 1:20s/5
expect 2 err "bad value '1:/5' for --pause: SECONDS empty" "$sim" --pause 1:/5
expect 2 err "bad value '1:0/5' for --pause: SECONDS must be above 0" "$sim" --pause 1:0/5
expect 2 err "bad value '1:-2/5' for --pause: SECONDS must not be negative" "$sim" --pause 1:-2/5
expect 2 err "bad value '1:3600.5/5' for --pause: SECONDS out of range" "$sim" --pause 1:3600.5/5
expect 2 err "bad value '1:nan/5' for --pause: SECONDS not a number" "$sim" --pause 1:nan/5
expect 2 err "bad value '1:20/0' for --pause: EVERY out of range" "$sim" --pause 1:20/0
expect 2 err "bad value '1:20/2.5' for --pause: EVERY not an integer" "$sim" --pause 1:20/2.5
expect 2 err "bad value '1:20/' for --pause: EVERY empty" "$sim" --pause 1:20/
expect 2 err "--pause rank 3 must be < --ranks 3" "$sim" --ranks 3 --pause 3:0.5/10
expect 2 err "option '--pause' needs a value" "$sim" --pause

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
expect 2 err "ncclscope-loadcheck: missing PLUGIN (try --help)" "$loadcheck"
expect 2 err "ncclscope-loadcheck: unexpected argument 'second.so'" "$loadcheck" "$plugin" second.so
expect 2 err "ncclscope-loadcheck: --timeout 'soon': seconds, more than 0" "$loadcheck" --timeout soon "$plugin"
expect 2 err "ncclscope-loadcheck: --timeout '0': seconds, more than 0" "$loadcheck" --timeout 0 "$plugin"
expect 2 err "ncclscope-loadcheck: --timeout needs a number of seconds" "$loadcheck" --timeout
export NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_BIND=127.0.0.1
NCCLSCOPE_PROM_PORT=0 expect 0 out "metrics endpoint: off for the check" "$loadcheck" "$plugin"
if grep -q "metrics endpoint at" "$work/out" "$work/err"; then fail "loadcheck without --metrics started the endpoint"; fi
grep -q "^OK: " "$work/out" || fail "loadcheck without --metrics did not pass"
NCCLSCOPE_PROM_PORT=0 expect 0 out "metrics endpoint at http://" "$loadcheck" --metrics "$plugin"

# --version: exactly one line, `ncclscope-<tool> VERSION`, on stdout; exit 0.
for tool in "$sim" "$params" "$loadcheck" "$cleanup" "$analyze"; do
  name=$(basename "$tool")
  expect 0 out "$name $version" "$tool" --version
  if [ "$(cat "$work/out")" != "$name $version" ] || [ -s "$work/err" ]; then
    fail "$name --version: want exactly '$name $version' on stdout"
  fi
done

# jq-like checks on a JSON document in $work/out: json_check 'PYTHON EXPRESSION over d' WHAT.
json_check() {
  if ! EXPECT_VERSION=$version python3 -c 'import json, os, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
      "$work/out" "$1" 2>"$work/json_err"; then
    fail "$2: JSON check failed: $1 ($(head -c 300 "$work/json_err"))"
  else
    echo "ok: $2"
  fi
}

# ncclscope-params --check and --json: a refused value exits 1 and is named; every tunable is in the JSON with
# value, default, source and validity.
expect 0 out "NCCLSCOPE_FR_DEPTH=2048 (default)" "$params" --check
NCCLSCOPE_FR_DEPTH=12x expect 1 out "NCCLSCOPE_FR_DEPTH=2048 (INVALID: NCCLSCOPE_FR_DEPTH='12x' is not an integer" \
  "$params" --check
NCCLSCOPE_FR_DEPTH=5 expect 1 err "1 invalid value(s)" "$params" --check
SLURM_JOB_ID=77 expect 0 out "NCCLSCOPE_JOB_ID=77 (fallback SLURM_JOB_ID)" "$params" --check
NCCLSCOPE_FR_DEPTH=4096 SLURM_JOB_ID=77 expect 0 out '"parameters"' "$params" --json
json_check 'd["tool"] == "ncclscope-params" and d["version"] == os.environ["EXPECT_VERSION"] and d["valid"] is True' \
  "params --json: tool, version, valid"
json_check '[p for p in d["parameters"] if p["name"] == "NCCLSCOPE_FR_DEPTH"] == [{"name": "NCCLSCOPE_FR_DEPTH", "type": "integer", "default": "2048", "value": 4096, "source": "env", "variable": "NCCLSCOPE_FR_DEPTH", "valid": True, "problem": None}]' \
  "params --json: a set value"
json_check '[(p["value"], p["source"], p["variable"], p["fallback"]) for p in d["parameters"] if p["name"] == "NCCLSCOPE_JOB_ID"] == [("77", "fallback", "SLURM_JOB_ID", "SLURM_JOB_ID")]' \
  "params --json: a fallback variable"
json_check 'all(set(p) >= {"name", "type", "value", "default", "source", "valid", "problem"} for p in d["parameters"]) and len(d["parameters"]) > 20' \
  "params --json: every tunable with value, default, source, validity"
NCCLSCOPE_FR_DEPTH=12x expect 1 out '"parameters"' "$params" --json
json_check 'd["valid"] is False and [(p["value"], p["source"], p["valid"]) for p in d["parameters"] if p["name"] == "NCCLSCOPE_FR_DEPTH"] == [(2048, "default", False)]' \
  "params --json: a refused value"
json_check '"12x" in [p for p in d["parameters"] if p["name"] == "NCCLSCOPE_FR_DEPTH"][0]["problem"]' "params --json: the problem names the value"
expect 2 err "ncclscope-params: unexpected argument '--check'" "$params" --json --check
# A misspelt NCCLSCOPE_* variable turns its feature off: --check names it with the nearest known name and fails;
# the variables the tools and tests read themselves (the sim's NCCLSCOPE_SIM_ROOT, NCCLSCOPE_TEST_KEEP) are known.
NCCLSCOPE_DUMPDIR=/x NCCLSCOPE_PROM_PROT=1 expect 1 out \
  "NCCLSCOPE_PROM_PROT (UNKNOWN: not an ncclscope variable; did you mean NCCLSCOPE_PROM_PORT?)" "$params" --check
grep -qF "NCCLSCOPE_DUMPDIR (UNKNOWN: not an ncclscope variable; did you mean NCCLSCOPE_DUMP_DIR?)" "$work/out" &&
  grep -qF "ncclscope-params: 2 unknown NCCLSCOPE_* variable(s)" "$work/err" &&
  echo "ok: params --check: both typos named, and counted on stderr" || fail "params --check: the two typos"
NCCLSCOPE_SIM_ROOT=127.0.0.1:1 NCCLSCOPE_TEST_KEEP=1 NCCLSCOPE_DUMP_DIR=/x expect 0 out "NCCLSCOPE_DUMP_DIR=/x (env)" \
  "$params" --check
grep -q "UNKNOWN" "$work/out" && fail "params --check: a known variable reported unknown" || echo "ok: known variables pass"
NCCLSCOPE_PROM_PROT=1 expect 1 out '"unknown_variables"' "$params" --json
json_check 'd["valid"] is False and d["unknown_variables"] == [{"name": "NCCLSCOPE_PROM_PROT", "nearest": "NCCLSCOPE_PROM_PORT"}]' \
  "params --json: an unknown variable"

# ncclscope-loadcheck --json, and plugin names resolved as NCCL resolves NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN.
libdir=$(dirname "$plugin")
expect 0 out '"ok": true' "$loadcheck" --json "$plugin"
json_check 'd["tool"] == "ncclscope-loadcheck" and d["version"] == os.environ["EXPECT_VERSION"] and d["net_library"]["tried"] == [d["plugin"]] and d["net_library"]["path"].endswith("libnccl-net-ncclscope.so")' \
  "loadcheck --json: a path is opened as given"
json_check '[t["abi_version"] for t in d["net_tables"]] == [12, 11, 10, 9, 8] and all(t["name"] == "ncclscope" and t["symbol"] == "ncclNetPlugin_v%d" % t["abi_version"] for t in d["net_tables"])' \
  "loadcheck --json: every net table with its version"
json_check '[t["symbol"] for t in d["profiler_tables"]] == ["ncclProfiler_v7", "ncclProfiler_v6", "ncclProfiler_v5", "ncclProfiler_v4", "ncclProfiler_v3", "ncclProfiler_v2", "ncclProfiler_v1"]' \
  "loadcheck --json: every profiler table, v7 included"
json_check 'd["init"]["net"] == dict(d["init"]["net"], table="ncclNetPlugin_v12", result=0, ok=True) and d["init"]["net"]["device_count"] >= 1 and d["init"]["profiler"]["table"] == "ncclProfiler_v7" and d["init"]["profiler"]["ok"] is True' \
  "loadcheck --json: each init's result"
if grep -q "^OK: " "$work/out"; then fail "loadcheck --json: text on stdout"; fi
grep -q "^OK: " "$work/err" || fail "loadcheck --json: the text report is not on stderr"
LD_LIBRARY_PATH="$libdir" expect 0 out '"ok": true' "$loadcheck" --json ncclscope
json_check 'd["net_library"]["tried"] == ["ncclscope", "libnccl-net-ncclscope.so"] and d["net_library"]["opened_as"] == "libnccl-net-ncclscope.so" and d["net_library"]["path"].endswith("/libnccl-net-ncclscope.so")' \
  "loadcheck: a bare name opens libnccl-net-NAME.so through LD_LIBRARY_PATH"
json_check 'd["profiler_library"]["opened_as"] == "libnccl-profiler-ncclscope.so" and d["profiler_library"]["from_net_library"] is False' \
  "loadcheck: a bare name opens libnccl-profiler-NAME.so for the profiler"
LD_LIBRARY_PATH="$libdir" expect 0 out "OK: ncclscope loads and initialises" "$loadcheck" ncclscope
# Only the net name on the path: NCCL takes the profiler from the net library, and so does the check.
mkdir -p "$work/netonly"
ln -s "$plugin" "$work/netonly/libnccl-net-other.so"
LD_LIBRARY_PATH="$work/netonly" expect 0 out '"ok": true' "$loadcheck" --json other
json_check 'd["profiler_library"]["from_net_library"] is True and d["profiler_library"]["path"] is None and d["profiler_library"]["tried"] == ["other", "libnccl-profiler-other.so"] and len(d["profiler_tables"]) == 7' \
  "loadcheck: no profiler library: the net library's profiler"
LD_LIBRARY_PATH=/nonexistent expect 1 out "FAIL: dlopen: no net library for 'ncclscope'" "$loadcheck" ncclscope
LD_LIBRARY_PATH=/nonexistent expect 1 out '"ok": false' "$loadcheck" --json ncclscope
json_check 'd["net_library"]["path"] is None and len(d["net_library"]["errors"]) == 2' "loadcheck --json: a name that does not resolve"
expect 1 out "FAIL: dlopen" "$loadcheck" libnccl-net-nonexistent.so
expect 2 err "ncclscope-loadcheck: 'none' names no plugin library" "$loadcheck" none
expect 2 err "ncclscope-loadcheck: 'static' names no plugin library" "$loadcheck" static

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all command-line checks passed"
