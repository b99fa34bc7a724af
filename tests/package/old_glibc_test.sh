#!/usr/bin/env bash
# The portable plugin and tools (cmake/portable_link.cmake) run on an older glibc: a root is made from Debian 11's
# (bullseye: glibc 2.31, libpthread and libdl still separate, no libstdc++) libc6, zlib1g and busybox-static, the
# built plugin, ncclscope-loadcheck, ncclscope-sim and the portable probe (tests/abi/portable_probe.c) are copied
# in, and, chrooted there, the probe checks constructors and exceptions, loadcheck loads the plugin and the sim
# runs a 2-rank job over TCP with ncclscope as net and profiler plugin, found by name. In that root
# every library the programs load is bullseye's: its dynamic loader, libc, libpthread, libdl and zlib.
#
# Usage: old_glibc_test.sh BUILD_DIR
# Downloads the three packages once into BUILD_DIR/old-glibc-test/debs with private apt lists (apt's own state is
# left as it is; a rerun is offline); fails, saying so, where Debian's archive cannot be reached. Needs root
# (chroot, and unshare for the sim's /proc).
set -euo pipefail
build=$(cd "${1:?usage: old_glibc_test.sh BUILD_DIR}" && pwd)
suite=bullseye
work=$build/old-glibc-test
root=$work/root
debs=$work/debs
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "the test chroots into a $suite root and needs root (run ctest as root)"
chroot=$(command -v chroot) || fail "no chroot command (coreutils)"
unshare=$(command -v unshare) || fail "no unshare command (util-linux)"
for f in lib/libnccl-net-ncclscope.so bin/ncclscope-loadcheck bin/ncclscope-sim bin/portable_probe \
         lib/libportable_probe_module.so; do
  [ -f "$build/$f" ] || fail "$build/$f is not built (ninja ncclscope_plugin ncclscope-loadcheck ncclscope-sim portable_probe)"
done

echo "=== Debian $suite: libc6, zlib1g, busybox-static ==="
packages=(libc6 zlib1g busybox-static)
mkdir -p "$debs"
missing=()
for p in "${packages[@]}"; do
  compgen -G "$debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # Private sources and lists, and no dpkg status (so that the host's newer libc6 is not the candidate).
  apt=$work/apt
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
  echo "deb ${mirror:-http://deb.debian.org/debian} $suite main" >"$apt/sources.list"
  apt_opts=(-qq -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null
            -o APT::Sandbox::User=root)
  if ! apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 ||
     ! (cd "$debs" && apt-get "${apt_opts[@]}" download "${missing[@]}") >>"$work/apt.log" 2>&1; then
    cat "$work/apt.log" >&2
    fail "could not download ${missing[*]} from Debian's $suite archive (apt-get download): the test needs the archive once; later runs use $debs"
  fi
fi
ls "$debs"
rm -rf "$root"
mkdir -p "$root/tmp" "$root/proc" "$root/usr/lib" "$root/usr/bin"
chmod 1777 "$root/tmp"
for f in "$debs"/*.deb; do dpkg -x "$f" "$root"; done
for applet in $("$root/bin/busybox" --list); do
  [ -e "$root/bin/$applet" ] || [ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
glibc=$(ls "$root"/lib/x86_64-linux-gnu/libc-*.so | sed 's/.*libc-\(.*\)\.so/\1/')
echo "glibc $glibc in the root; no libstdc++: $(find "$root" -name 'libstdc++*' | wc -l) files"
[ -z "$(find "$root" -name 'libstdc++*' -o -name 'libgcc_s*')" ] || fail "the root holds libstdc++ or libgcc_s"

cp "$build/lib/libnccl-net-ncclscope.so" "$root/usr/lib/"
ln -s libnccl-net-ncclscope.so "$root/usr/lib/libnccl-profiler-ncclscope.so"
cp "$build/bin/ncclscope-loadcheck" "$build/bin/ncclscope-sim" "$build/bin/portable_probe" "$root/usr/bin/"
cp "$build/lib/libportable_probe_module.so" "$root/usr/lib/"

in_root() { env -i PATH=/usr/bin:/bin HOME=/tmp NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_PORT=-1 "$@"; }

echo "=== chroot ($suite, glibc $glibc): portable_probe (constructors; exceptions inside a portable module) ==="
in_root "$chroot" "$root" /usr/bin/portable_probe /usr/lib/libportable_probe_module.so ||
  fail "portable_probe failed on glibc $glibc"

echo "=== chroot ($suite, glibc $glibc): ncclscope-loadcheck /usr/lib/libnccl-net-ncclscope.so ==="
in_root "$chroot" "$root" /usr/bin/ncclscope-loadcheck /usr/lib/libnccl-net-ncclscope.so >"$work/loadcheck.log" 2>&1 ||
  { cat "$work/loadcheck.log"; fail "ncclscope-loadcheck failed on glibc $glibc"; }
cat "$work/loadcheck.log"
grep -q "^OK: " "$work/loadcheck.log" || fail "ncclscope-loadcheck printed no OK line"

echo "=== chroot ($suite, glibc $glibc): ncclscope-sim, 2 ranks over TCP, ncclscope as net and profiler plugin ==="
rm -rf "$root/tmp/dumps"
in_root NCCLSCOPE_TRANSPORT=tcp NCCLSCOPE_DUMP_DIR=/tmp/dumps NCCL_NET_PLUGIN=ncclscope NCCL_PROFILER_PLUGIN=ncclscope \
  timeout 180 "$unshare" --mount --propagation private -- "$chroot" "$root" \
  /bin/sh -c 'mount -t proc proc /proc && cd /tmp &&
              exec timeout 120 ncclscope-sim --ranks 2 --ops allreduce,allgather --sizes 8:1M --iters 3 --json' \
  >"$work/sim.json" 2>"$work/sim.log" || { cat "$work/sim.log"; fail "ncclscope-sim failed on glibc $glibc"; }
python3 - "$work/sim.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
results = job["results"]
wrong = sum(r["wrong"] for r in results)
print(f"sim: ok={job['ok']} net={job['net']!r} profiler={job['profiler']!r} ranks={job['ranks']} "
      f"{len(results)} (function, size) rows of {', '.join(sorted({r['func'] for r in results}))}, {wrong} wrong elements")
assert job["ok"] is True and job["ranks"] == 2, "the job did not succeed"
assert job["net"].startswith("ncclscope") and job["profiler"].startswith("ncclscope"), "ncclscope was not loaded"
assert len(results) >= 2 and wrong == 0, "no completed operations, or wrong bytes"
PY
dumps=$(find "$root/tmp/dumps" -type f | wc -l)
echo "$dumps dump files written"
[ "$dumps" -gt 0 ] || fail "the job wrote no dumps"
echo "PASS: the plugin and the sim run on Debian $suite's glibc $glibc without libstdc++ or libgcc_s"
