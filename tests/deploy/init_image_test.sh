#!/usr/bin/env bash
# deploy/kubernetes/image: builds the init-container image with podman (offline: FROM scratch, Debian's static
# busybox, this build's files), runs its entrypoint as the example pod's init container runs it (a non-root user,
# read-only root, no capabilities, no privilege escalation) into an empty volume, and checks what arrived: every
# file equal to the build's, the profiler name a link to the net plugin, and the copied plugin loaded by NCCL's
# rules (names on LD_LIBRARY_PATH, as the pod sets them) by ncclscope-sim, whose dumps the copied analyzer reads;
# and that the entrypoint fails a copy whose file differs from the image's checksums.
# Where this host cannot run a container (a nested one without cgroups or rlimits), the image's root file system
# is unpacked and its entrypoint run under chroot instead, saying so. Exit 77 (skip), saying why, only where
# podman is missing or cannot build at all.
set -u
build=${1:?usage: init_image_test.sh BUILD_DIR SIM}
sim=${2:?usage: init_image_test.sh BUILD_DIR SIM}
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v podman >/dev/null; then
  echo "SKIP: no podman (Debian: podman and runc, in scripts/install-deps.sh)"
  exit 77
fi
work=$(mktemp -d /tmp/ncclscope-init-image-XXXXXX)
tag=localhost/ncclscope-init-test:$$
# A private image store, so the test neither needs nor touches the host's images.
podman_opts="--storage-driver vfs --root $work/storage --runroot $work/runroot"
# shellcheck disable=SC2086  # podman_opts is a list of words
pm() { podman $podman_opts "$@"; }
cleanup() {
  pm rmi -f "$tag" >/dev/null 2>&1
  # A rootless store holds files of the user namespace's other ids, which only that namespace can remove.
  [ "$(id -u)" = 0 ] || podman unshare rm -rf "$work/storage" 2>/dev/null
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail=0

if ! STAGE_DIR=$work/stage IMAGE_TOOL_OPTS=$podman_opts "$src/deploy/kubernetes/image/build.sh" "$build" "$tag" \
    >"$work/build.log" 2>&1; then
  cat "$work/build.log"
  if grep -q 'is missing\|no /bin/busybox\|dynamically linked' "$work/build.log"; then exit 1; fi
  echo "SKIP: podman cannot build an image on this host (its output above)"
  exit 77
fi
echo "built $tag: $(pm image inspect --format '{{.Size}}' "$tag") bytes"
user=$(pm image inspect --format '{{.Config.User}}' "$tag")
[ "${user%%:*}" != 0 ] && [ -n "$user" ] || { echo "FAIL: the image runs as '$user', not a non-root user"; fail=1; }

# The pod's init container: runAsUser 1000, readOnlyRootFilesystem, drop ALL, allowPrivilegeEscalation false.
restricted=(--rm --network none --user 1000:1000 --read-only --cap-drop ALL --security-opt no-new-privileges)
# A nested container host may refuse raising rlimits and crun's cgroup setup; runc with cgroupfs and the
# limits lowered runs there (the second try).
tries=("" "--runtime runc --cgroup-manager cgroupfs --ulimit nofile=1024:1024 --ulimit nproc=1024:1024")
ran=""
for extra in "${tries[@]}"; do
  rm -rf "$work/out" && mkdir -m 0777 "$work/out"
  # shellcheck disable=SC2086  # extra is a list of words
  if pm run $extra "${restricted[@]}" -v "$work/out:/opt/ncclscope" "$tag" >"$work/run.log" 2>&1; then
    ran="podman run ${extra:-(default runtime)}"
    # The entrypoint refuses a destination it cannot write, with a usage error.
    # shellcheck disable=SC2086
    pm run $extra "${restricted[@]}" "$tag" /opt/missing >"$work/bad.log" 2>&1
    rc=$?
    [ "$rc" = 2 ] && grep -q 'not a writable directory' "$work/bad.log" ||
      { echo "FAIL: a missing destination gave exit $rc: $(cat "$work/bad.log")"; fail=1; }
    break
  fi
  echo "podman run ${extra:-(default runtime)} failed: $(tail -1 "$work/run.log")"
done
if [ -z "$ran" ]; then
  # No container here: the image's own root file system and entrypoint, under chroot as user 1000.
  mkdir -p "$work/rootfs"
  if pm create --name "ncclscope-init-test-$$" "$tag" >/dev/null 2>&1 &&
     pm export "ncclscope-init-test-$$" | tar -x -C "$work/rootfs" 2>"$work/tar.log"; then
    format='{{range .Config.Entrypoint}}{{.}} {{end}}{{range .Config.Cmd}}{{.}} {{end}}'
    entry=$(pm image inspect --format "$format" "$tag")
    mkdir -p "$work/rootfs/opt/ncclscope" && chmod 0777 "$work/rootfs/opt/ncclscope"
    chroot_cmd=(chroot --userspec=1000:1000 "$work/rootfs")
    [ "$(id -u)" = 0 ] || chroot_cmd=(unshare -r "${chroot_cmd[@]}")
    # shellcheck disable=SC2086  # entry is the image's ENTRYPOINT and CMD, one word each
    if "${chroot_cmd[@]}" $entry >"$work/run.log" 2>&1; then
      ran="the image's entrypoint ($entry) under chroot in its exported root file system"
      rm -rf "$work/out" && mv "$work/rootfs/opt/ncclscope" "$work/out"
    fi
  fi
  pm rm -f "ncclscope-init-test-$$" >/dev/null 2>&1
  [ -n "$ran" ] || { cat "$work/run.log"; echo "SKIP: neither podman run nor chroot runs the image here"; exit 77; }
fi
echo "ran: $ran"
cat "$work/run.log"
grep -q 'verified' "$work/run.log" || { echo "FAIL: the entrypoint did not verify its copies"; fail=1; }

# The entrypoint's own check: a file that differs from the image's checksums fails the copy (exit 1). Run on the
# staged root file system under chroot, one file changed.
bad=$work/stage/rootfs
echo '# changed' >>"$bad/ncclscope/bin/ncclscope-dump.sh"
mkdir -p "$bad/opt/ncclscope" && chmod 0777 "$bad/opt/ncclscope"
chroot_cmd=(chroot --userspec=1000:1000 "$bad")
[ "$(id -u)" = 0 ] || chroot_cmd=(unshare -r "${chroot_cmd[@]}")
"${chroot_cmd[@]}" /bin/busybox sh /ncclscope-install.sh /opt/ncclscope >"$work/changed.log" 2>&1
rc=$?
if grep -q 'Operation not permitted\|unshare failed' "$work/changed.log"; then
  echo "not checked here (no chroot): a changed file failing the copy"
elif [ "$rc" != 1 ] || ! grep -q 'differ from the image' "$work/changed.log"; then
  cat "$work/changed.log"
  echo "FAIL: a changed file gave exit $rc, not the entrypoint's checksum failure"
  fail=1
fi

out=$work/out
same() {  # same COPY ORIGINAL: the copy exists and has the original's bytes
  if [ ! -f "$1" ]; then echo "FAIL: ${1#"$out"/} did not arrive"; fail=1; return; fi
  [ "$(sha256sum <"$1")" = "$(sha256sum <"$2")" ] || { echo "FAIL: ${1#"$out"/} differs from $2"; fail=1; }
}
same "$out/lib/libnccl-net-ncclscope.so" "$build/lib/libnccl-net-ncclscope.so"
same "$out/bin/ncclscope-analyze" "$build/bin/ncclscope-analyze"
same "$out/bin/ncclscope-dump.sh" "$src/deploy/slurm/ncclscope-dump.sh"
n=0
for f in "$build"/bin/ncclscope_analysis/*.py; do
  same "$out/bin/ncclscope_analysis/$(basename "$f")" "$f"
  n=$((n + 1))
done
[ "$(readlink "$out/lib/libnccl-profiler-ncclscope.so")" = libnccl-net-ncclscope.so ] ||
  { echo "FAIL: lib/libnccl-profiler-ncclscope.so is not a link to libnccl-net-ncclscope.so"; fail=1; }
for x in lib/libnccl-net-ncclscope.so bin/ncclscope-analyze bin/ncclscope-dump.sh; do
  [ -x "$out/$x" ] || { echo "FAIL: $x lost its execute bit"; fail=1; }
done
echo "copied and equal to the build's: the plugin, its profiler link, ncclscope-analyze ($n modules), the dump helper"

# The copied plugin, found as the pod finds it: NCCL's plugin names, LD_LIBRARY_PATH the volume's lib/ only.
run_sim() {
  env NCCLSCOPE_PROM_PORT=-1 NCCL_NET_PLUGIN=ncclscope NCCL_PROFILER_PLUGIN=ncclscope "$@" \
    "$sim" --ranks 2 --ops allreduce --sizes 64K:64K --iters 3 --timeout 60
}
if env -u LD_LIBRARY_PATH bash -c "$(declare -f run_sim); sim='$sim'; run_sim" >"$work/control.log" 2>&1; then
  echo "FAIL: the sim found an ncclscope plugin without LD_LIBRARY_PATH: the check below would prove nothing"
  fail=1
fi
run_sim LD_LIBRARY_PATH="$out/lib" NCCLSCOPE_DUMP_DIR="$work/dumps" >"$work/sim.log" 2>&1 ||
  { cat "$work/sim.log"; echo "FAIL: ncclscope-sim with the copied plugin failed"; fail=1; }
grep -q 'net plugin: ncclscope .*profiler plugin: ncclscope' "$work/sim.log" ||
  { cat "$work/sim.log"; echo "FAIL: the sim did not load both halves from the copy"; fail=1; }
"$out/bin/ncclscope-analyze" "$work/dumps" >"$work/analyze.log" 2>&1
grep -q '^healthy: 1 communicator(s), 2 rank dumps' "$work/analyze.log" ||
  { cat "$work/analyze.log"; echo "FAIL: the copied analyzer did not read the copied plugin's 2 dumps"; fail=1; }
[ "$fail" = 0 ] && echo "PASS: the init image copied the plugin and tools intact; the copy loads and dumps"
exit "$fail"
