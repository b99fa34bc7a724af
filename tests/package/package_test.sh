#!/usr/bin/env bash
# The .deb loads and runs where only glibc, libstdc++, libgcc and zlib are (only glibc and zlib in a portable
# build, cmake/portable_link.cmake): cpack builds the package from this build; a bare Debian root is made from
# Debian's own packages of those libraries and a shell (busybox-static), with no abseil, prometheus-cpp or
# nlohmann-json; the .deb is unpacked into it; then, chrooted there, the
# installed ncclscope-loadcheck loads the installed plugin and the installed ncclscope-sim runs a 2-rank job
# through it. The job's dumps are read by the installed ncclscope-analyze, and the .tar.gz is checked to run
# from wherever it is unpacked.
#
# Usage: package_test.sh BUILD_DIR [GLIBC_FLOOR]
# GLIBC_FLOOR: given for a portable build; the Depends line must then ask for libc6 (>= GLIBC_FLOOR), name neither
# libstdc++6 nor libgcc-s1, the root holds neither, and the installed plugin and tools pass tests/abi/glibc_floor.sh.
# Downloads the Debian packages once into BUILD_DIR/package-test/debs (a rerun is offline); fails, saying
# so, where Debian's archive cannot be reached. Needs root (chroot).
set -euo pipefail
build=$(cd "${1:?usage: package_test.sh BUILD_DIR [GLIBC_FLOOR]}" && pwd)
floor=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$build/package-test
root=$work/root
debs=$work/debs
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "the package test chroots into a bare Debian root and needs root (run ctest as root)"
chroot=$(command -v chroot) || fail "no chroot command (coreutils)"

echo "=== cpack: the .deb and the .tar.gz of this build ==="
rm -rf "$work/out"
mkdir -p "$work/out"
(cd "$work/out" && cpack --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
deb=$(ls "$work"/out/ncclscope_*.deb)
tgz=$(ls "$work"/out/ncclscope-*.tar.gz)
ls -l "$deb" "$tgz"
dpkg-deb -f "$deb" Package Version Depends
# The Depends line must name what the installed files need and nothing of abseil, prometheus-cpp or json.
depends=$(dpkg-deb -f "$deb" Depends)
names=$(tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/ .*//')
if [ -n "$floor" ]; then
  expected="libc6 zlib1g python3"
  libc=$(tr ',' '\n' <<<"$depends" | sed -n 's/^ *libc6 (>= \(.*\))$/\1/p')
  [ "$libc" = "$floor" ] || fail "Depends asks for libc6 (>= ${libc:-?}), not the floor $floor: $depends"
else
  expected="libc6 libstdc++6 libgcc-s1 zlib1g python3"
fi
for p in $expected; do
  grep -qxF "$p" <<<"$names" || fail "Depends lacks $p: $depends"
done
extra=$(grep -vxF -f <(tr ' ' '\n' <<<"$expected") <<<"$names" || true)
[ -z "$extra" ] || fail "Depends names more than $expected: $extra"

echo "=== the .deb's metadata: Maintainer, Recommends, copyright, the dump helper on PATH ==="
maintainer=$(dpkg-deb -f "$deb" Maintainer)
grep -qE '^[^<>]+ <[^<>@ ]+@[^<>@ ]+\.[^<>@ ]+>$' <<<"$maintainer" ||
  fail "Maintainer is '$maintainer', not 'Name <e-mail>'"
# OpenSSL 3 for a TLS endpoint, dlopen'd only then: recommended, not a Depends (cmake/install.cmake says why).
recommends=$(dpkg-deb -f "$deb" Recommends)
grep -qE '(^|[ ,|])libssl3([ ,|]|$)' <<<"$recommends" || fail "Recommends lacks libssl3: '$recommends'"
echo "Maintainer: $maintainer; Recommends: $recommends"
contents=$(dpkg-deb -c "$deb")
grep -qE ' \./usr/share/doc/ncclscope/copyright$' <<<"$contents" || fail "no /usr/share/doc/ncclscope/copyright"
grep -qE '^l.* \./usr/bin/ncclscope-dump -> ' <<<"$contents" || fail "no /usr/bin/ncclscope-dump symlink"
copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/ncclscope/copyright)
[ "$(head -n1 <<<"$copyright")" = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ] ||
  fail "the copyright file is not in Debian's machine-readable format: $(head -n1 <<<"$copyright")"
for field in "Upstream-Name: ncclscope" "Files: *" "License: Apache-2.0" "Upstream-Contact: $maintainer"; do
  grep -qxF "$field" <<<"$copyright" || fail "the copyright file has no line '$field'"
done
echo "copyright: $(grep -c '^Files:' <<<"$copyright") Files paragraphs," \
  "$(grep -c '^License:' <<<"$copyright") License lines"

if [ -n "$floor" ]; then
  packages=(libc6 zlib1g busybox-static)
else
  packages=(libc6 libgcc-s1 libstdc++6 zlib1g busybox-static)
fi
echo "=== a bare Debian root: ${packages[*]} ==="
mkdir -p "$debs"
missing=()
for p in "${packages[@]}"; do
  compgen -G "$debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # Private apt lists (apt's own state is left as it is): the archive the host's apt uses, as of now.
  lists=$work/apt-lists
  mkdir -p "$lists/partial"
  apt_opts=(-o "Dir::State::Lists=$lists" -o APT::Sandbox::User=root -qq)
  if ! apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 ||
     ! (cd "$debs" && apt-get "${apt_opts[@]}" download "${missing[@]}") >>"$work/apt.log" 2>&1; then
    cat "$work/apt.log" >&2
    fail "could not download ${missing[*]} from Debian's archive (apt-get download): the package test needs the archive once; later runs use $debs"
  fi
fi
ls "$debs"
rm -rf "$root"
mkdir -p "$root/tmp"
chmod 1777 "$root/tmp"
for p in "${packages[@]}"; do
  for f in "$debs/${p}"_*.deb; do dpkg -x "$f" "$root"; done  # only these: $debs may hold more from other builds
done
dpkg -x "$deb" "$root"
# A shell and its tools: busybox's applets as links (what busybox --install would make, without needing /proc).
for applet in $("$root/bin/busybox" --list); do
  [ -e "$root/bin/$applet" ] || [ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done

echo "=== no abseil, prometheus-cpp or nlohmann-json in the root ==="
found=$(find "$root" \( -name 'libabsl*' -o -name 'libprometheus*' -o -name 'nlohmann' -o -name '*json.hpp' \) -print)
[ -z "$found" ] || fail "the bare root holds $found"
echo "none"

plugin=$(cd "$root" && ls usr/lib/*/libnccl-net-ncclscope.so usr/lib/libnccl-net-ncclscope.so 2>/dev/null | head -n1) || true
[ -n "$plugin" ] || fail "the .deb installed no libnccl-net-ncclscope.so under /usr/lib"
[ -L "$root/$(dirname "$plugin")/libnccl-profiler-ncclscope.so" ] || fail "no libnccl-profiler-ncclscope.so symlink"
for tool in ncclscope-sim ncclscope-loadcheck ncclscope-params ncclscope-cleanup ncclscope-analyze; do
  [ -x "$root/usr/bin/$tool" ] || fail "the .deb installed no /usr/bin/$tool"
done
for dir in dashboards rules docs mixin deploy/alertmanager deploy/kubernetes deploy/slurm python/ncclscope-analyze; do
  [ -n "$(ls -A "$root/usr/share/ncclscope/$dir" 2>/dev/null)" ] || fail "the .deb installed nothing in /usr/share/ncclscope/$dir"
done
[ -x "$root/usr/share/ncclscope/deploy/slurm/ncclscope-dump.sh" ] || fail "ncclscope-dump.sh installed without its execute bit"
# The helper on PATH resolves (a relative link, inside the root) and runs: with no job it prints its usage, exit 2
# (bash from the host: the bare root has only busybox's sh).
helper=$root/usr/share/ncclscope/deploy/slurm/ncclscope-dump.sh
[ "$(readlink -f "$root/usr/bin/ncclscope-dump")" = "$(readlink -f "$helper")" ] ||
  fail "/usr/bin/ncclscope-dump does not resolve to the installed helper: $(readlink "$root/usr/bin/ncclscope-dump")"
rc=0
usage=$(env -i PATH=/usr/bin:/bin bash "$root/usr/bin/ncclscope-dump" 2>&1) || rc=$?
[ "$rc" -eq 2 ] && grep -q "^usage: " <<<"$usage" ||
  fail "ncclscope-dump with no job: exit $rc, '$usage' (want its usage, exit 2)"
# Log lines name their file relative to the repository (-fmacro-prefix-map, CMakeLists.txt): the installed (stripped)
# plugin and tools hold no path of the source tree.
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
[ -n "$source_dir" ] || fail "no CMAKE_HOME_DIRECTORY in $build/CMakeCache.txt"
for f in "$root/$plugin" "$root"/usr/bin/ncclscope-{sim,loadcheck,params,cleanup}; do
  leaked=$(strings -a "$f" | grep -F "$source_dir/" | head -n3 || true)
  [ -z "$leaked" ] || fail "${f#"$root"} names the build host's source tree ($source_dir): $leaked"
done
echo "no path of $source_dir in the installed plugin and tools"
echo "=== readelf -d /$plugin (installed) ==="
needed=$(readelf -d "$root/$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed" | sed 's/^/NEEDED /'
bad=$(grep -vE '^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libz\.so\.1|ld-linux-x86-64\.so\.2)$' <<<"$needed" || true)
[ -z "$bad" ] || fail "the installed plugin needs more than glibc, libstdc++, libgcc_s and zlib: $bad"
if [ -n "$floor" ]; then
  # The portable Depends line is written out (cmake/install.cmake): every installed program needs only glibc and zlib.
  for f in "$root/$plugin" "$root"/usr/bin/ncclscope-{sim,loadcheck,params,cleanup}; do
    other=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
            grep -vE '^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|libz\.so\.1|ld-linux-x86-64\.so\.2)$' || true)
    [ -z "$other" ] || fail "${f#"$root"} needs $other, which the Depends line does not name"
  done
  echo "=== the installed plugin and tools need glibc <= $floor and no libstdc++ (glibc_floor.sh) ==="
  "$here/../abi/glibc_floor.sh" "$floor" "$root/$plugin" "$root"/usr/bin/ncclscope-{sim,loadcheck,params,cleanup} ||
    fail "the installed files need more than glibc $floor"
fi
exported=$(nm -D --defined-only "$root/$plugin" | awk '{print $NF}' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' |
           grep -vE '^ncclNetPlugin_v[0-9]+$|^ncclProfiler_v[0-9]+$' || true)
[ -z "$exported" ] || fail "the installed plugin exports more than NCCL's tables: $exported"

# Only what the chroot needs, and the job's environment alone. The plugin needs nothing mounted; the sim starts
# its ranks through /proc/self/exe, so its run mounts /proc, inside a private mount namespace of its own (the
# mount goes with it, however the run ends: nothing is left mounted on the host).
in_root() { env -i PATH=/usr/bin:/bin HOME=/tmp NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_PORT=-1 "$@"; }
unshare=$(command -v unshare) || fail "no unshare command (util-linux)"
mkdir -p "$root/proc"

echo "=== chroot: ncclscope-loadcheck /$plugin ==="
in_root "$chroot" "$root" /usr/bin/ncclscope-loadcheck "/$plugin" >"$work/loadcheck.log" 2>&1 ||
  { cat "$work/loadcheck.log"; fail "ncclscope-loadcheck failed in the bare root"; }
cat "$work/loadcheck.log"
grep -q "^OK: " "$work/loadcheck.log" || fail "ncclscope-loadcheck printed no OK line"

echo "=== chroot: ncclscope-sim, 2 ranks, ncclscope as net and profiler plugin (found by name) ==="
rm -rf "$root/tmp/dumps"
in_root NCCLSCOPE_DUMP_DIR=/tmp/dumps timeout 180 "$unshare" --mount --propagation private -- "$chroot" "$root" \
  /bin/sh -c 'mount -t proc proc /proc && cd /tmp &&
              exec timeout 120 ncclscope-sim --ranks 2 --ops allreduce,allgather --sizes 8:1M --iters 2 --json' \
  >"$work/sim.json" 2>"$work/sim.log" || { cat "$work/sim.log"; fail "ncclscope-sim failed in the bare root"; }
python3 - "$work/sim.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
results = job["results"]
ops = sorted({r["func"] for r in results})
wrong = sum(r["wrong"] for r in results)
print(f"sim: ok={job['ok']} net={job['net']!r} profiler={job['profiler']!r} ranks={job['ranks']} "
      f"{len(results)} (function, size) rows of {', '.join(ops)}, {wrong} wrong elements")
assert job["ok"] is True and job["ranks"] == 2, "the job did not succeed"
assert job["net"].startswith("ncclscope") and job["profiler"].startswith("ncclscope"), "ncclscope was not loaded"
assert len(results) >= 2 and wrong == 0, "no completed operations, or wrong bytes"
PY

echo "=== the installed ncclscope-analyze on the job's dumps ==="
ls "$root/tmp/dumps"
# Healthy: exit 0. On a loaded host one rank may really arrive last in most collectives (CPU contention), and the
# analyzer then names it a straggler, exit 6, as documented; a straggler is all it may find in this job.
rc=0
python3 "$root/usr/bin/ncclscope-analyze" --json "$root/tmp/dumps" >"$work/analyze.json" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 6 ] || fail "the installed ncclscope-analyze exited $rc on a healthy job's dumps"
python3 - "$work/analyze.json" "$rc" <<'PY'
import json, sys
report, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
comm = report["communicators"][0]["summary"]
print(f"analyze (exit {rc}): {report['verdict']}; {comm['ops_per_rank']} operations per rank on ranks {comm['ranks_found']}")
assert comm["ranks_found"] == [0, 1] and comm["ops_per_rank"] > 0
kinds = [c["kind"] for c in report["culprits"]]
assert (rc, report["status"], kinds) == (0, "healthy", []) or (rc == 6 and set(kinds) == {"straggler"}), \
    f"a healthy job's dumps: exit {rc}, status {report['status']}, culprits {kinds}"
PY

echo "=== the .tar.gz runs from wherever it is unpacked ==="
rm -rf "$work/tgz"
mkdir -p "$work/tgz"
tar -C "$work/tgz" -xzf "$tgz"
top=$(ls -d "$work"/tgz/ncclscope-*)
NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_PORT=-1 "$top/bin/ncclscope-loadcheck" "$top/lib/libnccl-net-ncclscope.so" |
  grep "^OK: " || fail "the unpacked tarball's plugin does not load"
python3 "$top/bin/ncclscope-analyze" --json "$root/tmp/dumps" >/dev/null || fail "the unpacked tarball's analyzer failed"
[ -f "$top/share/ncclscope/dashboards/ncclscope-overview.json" ] && [ -d "$top/share/ncclscope/rules" ] &&
  [ -f "$top/share/doc/ncclscope/LICENSE" ] || fail "the tarball lacks dashboards, rules or LICENSE"
echo "PASS: the .deb runs in a bare Debian root without abseil, prometheus-cpp or nlohmann-json"
