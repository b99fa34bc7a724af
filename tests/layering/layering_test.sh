#!/usr/bin/env bash
# The layers of src/ are enforced by the build, not by review: in a scratch copy of the sources, files
# planted in a layer compile when they include what the layer may see, and fail ("No such file") when
# they include a layer above or beside it. Usage: layering_test.sh SOURCE_DIR
set -euo pipefail
src_dir=$(cd "$1" && pwd)
scratch=$(mktemp -d /tmp/ncclscope-layering-XXXXXX)
trap 'rm -rf "$scratch"' EXIT

cp -r "$src_dir/CMakeLists.txt" "$src_dir/cmake" "$src_dir/include" "$src_dir/src" "$scratch/"

# plant LAYER_DIR NAME HEADER: a source file in src/LAYER_DIR that includes HEADER.
plant() { printf '#include "%s"\n' "$3" > "$scratch/src/$1/zz_planted_$2.cc"; }
# A downward include and a same-layer include compile...
plant core down common/status.h
plant net/tcp down net/transport.h
plant net/tcp same net/tcp/wire.h
plant plugin/net down net/api/net_api.h
# ...and these do not: up to a layer above, up from a subfolder to the layer over its siblings, sideways.
plant core up plugin/services/plugin_services.h
plant common up core/registry.h
plant net/tcp up net/api/transport_registry.h
plant net/tcp side net/verbs/verbs_transport.h
plant profiler side net/transport.h
plant exporters/http up exporters/prometheus/metrics_endpoint.h
plant exporters/otlp down exporters/prometheus/metric_families.h
plant exporters/prometheus up exporters/otlp/otlp_exporter.h

# Debian's shared abseil: only compiling is tested here, and the copy has no scripts/ to fetch abseil's source.
cmake -S "$scratch" -B "$scratch/build" -G Ninja -DNCCLSCOPE_BUILD_TOOLS=OFF -DNCCLSCOPE_BUILD_TESTS=OFF \
  -DNCCLSCOPE_BUILD_BENCHMARKS=OFF -DNCCLSCOPE_STATIC_ABSEIL=OFF >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; exit 1; }

# The object file of a planted source: its layer's target is ncclscope_<dir with / as _>.
object() { echo "src/CMakeFiles/ncclscope_${1//\//_}.dir/$1/zz_planted_$2.cc.o"; }

failures=0
expect() {  # expect compiles|fails LAYER_DIR NAME HEADER
  local want=$1 dir=$2 name=$3 header=$4 got
  local log="$scratch/${dir//\//_}_$name.log"
  if ninja -C "$scratch/build" "$(object "$dir" "$name")" >"$log" 2>&1; then got=compiles; else got=fails; fi
  if [ "$got" = fails ] && ! grep -q "$header: No such file or directory" "$log"; then
    got="fails for another reason"
  fi
  if [ "$got" = "$want" ]; then
    echo "ok: src/$dir including $header $got"
  else
    echo "FAIL: src/$dir including $header: expected it $want, it $got"; cat "$log"
    failures=$((failures + 1))
  fi
}
expect compiles core down common/status.h
expect compiles net/tcp down net/transport.h
expect compiles net/tcp same net/tcp/wire.h
expect compiles plugin/net down net/api/net_api.h
expect fails core up plugin/services/plugin_services.h
expect fails common up core/registry.h
expect fails net/tcp up net/api/transport_registry.h
expect fails net/tcp side net/verbs/verbs_transport.h
expect fails profiler side net/transport.h
expect fails exporters/http up exporters/prometheus/metrics_endpoint.h
expect compiles exporters/otlp down exporters/prometheus/metric_families.h
expect fails exporters/prometheus up exporters/otlp/otlp_exporter.h
[ "$failures" -eq 0 ] && echo "layering_is_enforced: all 12 planted includes behaved as the layers say"
exit "$failures"
