# Sourced by scripts/test.sh and scripts/stress-test.sh: the build's configure step and the main test tier, so the
# stress stage runs exactly the tier CI runs.
jobs=$(nproc)

configure() {  # configure DIR [cmake args…]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
}

# Every test of the main build but the two-host RDMA tier (run on its own), the fuzz tests (their own tier,
# after the sanitizer builds), the full-size scale runs (labels scale_16k and scale_matrix, by hand) and any other
# test whose name matches $main_tier_also_exclude. Extra ctest arguments are passed on.
main_tier() {
  local exclude='rdma2_tier'
  [ -z "${main_tier_also_exclude:-}" ] || exclude="$exclude|$main_tier_also_exclude"
  ctest --test-dir build --output-on-failure -j"$jobs" --timeout 900 -E "^($exclude)\$" -LE '^(fuzz|scale_16k|scale_matrix)$' "$@"
}
