#!/usr/bin/env bash
# run_fuzz.sh BUILD_DIR SECONDS_PER_TARGET [TARGET…]: replays each target's saved crash inputs
# (regressions/<target>/, none must crash), then fuzzes it for SECONDS from a scratch copy of its checked-in
# corpus (corpus/<target>/ is never written), and prints one line per target:
#   fuzz <target>: N executions in S s, C crashes
# Exits non-zero if any input crashed (or leaked, hung or ran out of memory), after printing where libFuzzer
# saved it and its base64, so that a CI log alone is enough to reproduce: save it as
# regressions/<target>/<name> and run BUILD_DIR/bin/<target> on it. BUILD_DIR is a NCCLSCOPE_FUZZ=ON build.
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS_PER_TARGET [TARGET...]" >&2
  exit 2
fi
build=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] ||
  targets=(fuzz_web_config fuzz_tag_names fuzz_tcp_handshake fuzz_verbs_handshake fuzz_http_negotiation)

rss_limit_mb=2048   # well under a CI runner's memory with two targets side by side
input_timeout_s=25  # one input running longer than this is a hang, reported like a crash
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Where the scratch folders go: memory where there is some (fuzz_tag_names rewrites a file per input).
scratch_root() {
  if [[ -n ${TMPDIR:-} ]]; then echo "$TMPDIR"; elif [[ -w /dev/shm ]]; then echo /dev/shm; else echo /tmp; fi
}

# Prints each input libFuzzer saved under $1 (crash-, leak-, timeout-, oom-; not slow-unit-) with its base64.
report_artifacts() {
  local dir=$1 f
  for f in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*; do
    [[ -f $f ]] || continue
    echo "  crashing input: $f ($(stat -c %s "$f") bytes), base64:"
    base64 -w 100 "$f" | sed 's/^/    /'
  done
}

count_artifacts() {
  local n=0 f
  for f in "$1"/crash-* "$1"/leak-* "$1"/timeout-* "$1"/oom-*; do [[ -f $f ]] && n=$((n + 1)); done
  echo "$n"
}

# Runs each saved input of regressions/<target>/ once (one process each, so that every crashing one is
# named), prints the crashing ones with the head of their report, and sets replay_crashes to their number.
replay_crashes=0
replay_regressions() {
  local target=$1 bin=$2 work=$3 input
  replay_crashes=0
  [[ -d $here/regressions/$target ]] || return 0
  while IFS= read -r input; do
    if ! "$bin" -rss_limit_mb=$rss_limit_mb -timeout=$input_timeout_s "$input" >"$work/replay.log" 2>&1; then
      replay_crashes=$((replay_crashes + 1))
      echo "fuzz $target: the saved regression input $input crashes:"
      grep -E '^(==[0-9]+==ERROR|SUMMARY|terminate called|  what\(\))' "$work/replay.log" | head -n 5 | sed 's/^/  /'
    fi
  done < <(find "$here/regressions/$target" -type f ! -name '*.md' | sort)
}

fuzz_one() {
  local target=$1 bin=$build/bin/$1 work dict=() start elapsed execs crashes fuzzed=0
  if [[ ! -x $bin ]]; then
    echo "fuzz $target: no $bin (build it: ninja -C $build fuzz_targets)"
    return 1
  fi
  work=$(mktemp -d "$(scratch_root)/ncclscope-$target.XXXXXX")
  cp -r "$here/corpus/$target" "$work/corpus"
  chmod -R u+w "$work/corpus"
  [[ -f $here/$target.dict ]] && dict=(-dict="$here/$target.dict")
  replay_regressions "$target" "$bin" "$work"
  start=$SECONDS
  TMPDIR=$work "$bin" -max_total_time="$seconds" -rss_limit_mb=$rss_limit_mb -timeout=$input_timeout_s \
    -print_final_stats=1 -artifact_prefix="$work/" "${dict[@]}" "$work/corpus" >"$work/fuzz.log" 2>&1 || fuzzed=1
  elapsed=$((SECONDS - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)
  crashes=$(count_artifacts "$work")
  # libFuzzer failed without saving an input (it did not start, or a seed crashed it): still a crash.
  [[ $fuzzed -eq 1 && $crashes -eq 0 ]] && crashes=1
  crashes=$((crashes + replay_crashes))
  echo "fuzz $target: ${execs:-0} executions in $elapsed s, $crashes crashes"
  if [[ $fuzzed -eq 1 ]]; then
    report_artifacts "$work"
    echo "  libFuzzer's log ($work/fuzz.log), last lines:"
    tail -n 60 "$work/fuzz.log" | sed 's/^/  /'
  fi
  [[ $crashes -eq 0 ]] || return 1
  rm -rf "$work"
}

rc=0
for t in "${targets[@]}"; do
  fuzz_one "$t" || rc=1
done
exit $rc
