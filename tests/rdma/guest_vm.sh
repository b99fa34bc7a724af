#!/usr/bin/env bash
# guest_vm.sh CMD [ARG...] — run CMD as root in a throwaway QEMU guest that has real verbs devices
# (soft-RoCE, the kernel's rdma_rxe driver), on any x86-64 Linux machine: no RDMA hardware and no KVM
# needed (QEMU's software emulation, TCG, with -cpu max: about 10x slower than the host).
#
# The guest boots Debian's own kernel (downloaded once from the Debian archive and extracted, never
# installed). Its / is the host's / (9p, read-only) under a tmpfs overlay: every host file is visible
# at the same path, guest writes are thrown away, except in the directories named in RXE_VM_RW
# (colon-separated), which are shared read-write. CMD runs in the current directory with the host's
# environment (plus RXE_GID and NCCLSCOPE_RDMA_GUEST=1); its stdout, then its stderr, then any kernel
# warnings are printed once the guest has powered off, and its exit status is returned.
#
# Devices: rxe0 on a dummy netdev with 198.51.100.1/24; with RXE_VM_NDEV=2 also rxe1 on a second
# dummy netdev with 203.0.113.1/24. $RXE_GID is rxe0's RoCE v2 (IPv4-mapped) GID index. Two devices in
# one guest cannot exchange traffic (packets between two local addresses go through lo, which rxe
# drops); one device talks to itself, so two processes on rxe0 is the tested shape. Two guests on a
# QEMU socket network give real two-host traffic: see RXE_VM_NET below.
#
# Exit status: CMD's; 124 the guest timed out; 125 the guest never reported a status; 77 (with a
# "SKIP: <reason>" line) the guest cannot be started on this machine: QEMU or the rdma tools are
# missing and cannot be installed (not root, no apt-get), or the kernel cannot be downloaded. When CI
# is set (CI=true), those are failures (status 1) instead: scripts/install-deps.sh installs everything
# CI needs, so the tier must really run there.
#
# Knobs (environment):
#   RXE_VM_CACHE   where the kernel and the initramfs are kept (default /tmp/rxe-vm-cache-v2); must be
#                  an absolute path the guest sees through the 9p share of / (any host path does)
#   RXE_VM_TIMEOUT seconds before the guest is killed (600)
#   RXE_VM_SMP     guest CPUs (2)        RXE_VM_MEM  guest memory (2G)
#   RXE_VM_MTU     netdev MTU (1500; 9000 gives active_mtu 4096 and more bandwidth)
#   RXE_VM_NDEV    1 or 2 soft-RoCE devices (1)
#   RXE_VM_RW      colon-separated host directories shared read-write (results come back through them)
#   RXE_VM_NET     listen=127.0.0.1:PORT on one guest, connect=127.0.0.1:PORT on another: a virtio NIC
#                  on a QEMU socket network carries rxe0 (RXE_VM_IP, default 198.51.100.1, /24;
#                  RXE_VM_MAC must differ between the guests); RXE_VM_NET2/RXE_VM_IP2/RXE_VM_MAC2 add
#                  a second NIC with rxe1 on it. Any other -netdev socket options work too, e.g.
#                  udp=127.0.0.1:PEER_PORT,localaddr=127.0.0.1:OWN_PORT (no start order), and a value
#                  beginning tap, is a -netdev tap instead (tap,ifname=TAP,script=no,downscript=no: a tap
#                  the caller made and put on a bridge; run_two_host_tier.sh)
#   RXE_VM_PIDFILE QEMU writes its pid there (a host-side runner can SIGSTOP/SIGCONT the guest)
#   RXE_VM_MONITOR a unix socket path for QEMU's human monitor (a runner can flap a NIC's carrier:
#                  set_link n0 off, the NIC on RXE_VM_NET; n1 the one on RXE_VM_NET2)
# Several guests may run at once (run_two_host_tier.sh boots two): each has its own mktemp out dir, the
# kernel cache is built under a lock and then only read, and a directory may be in several RXE_VM_RW.
# Paths must not contain spaces or commas (QEMU's -virtfs and the kernel command line split on them).
# Derived from shared/tools/softroce-vm.sh (see softroce-vm.md there for measurements and pitfalls).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }

# cannot REASON: the guest cannot be started here. Skip (77) on a developer's machine; fail in CI.
cannot() {
  if [ -n "${CI:-}" ]; then
    echo "FAIL: cannot start the soft-RoCE guest: $1 (CI must run this tier: see scripts/install-deps.sh)" >&2
    exit 1
  fi
  echo "SKIP: cannot start the soft-RoCE guest on this machine: $1"
  exit 77
}

export PATH=$PATH:/usr/sbin:/sbin  # depmod, modprobe (not on a non-root user's PATH)
C=${RXE_VM_CACHE:-/tmp/rxe-vm-cache-v2}
mkdir -p "$C" && C=$(realpath -e "$C")

# --- one-time setup 1: host packages -----------------------------------------------------------
# qemu (the guest), busybox/cpio/kmod (the initramfs), rdma-core + ibverbs-providers (the rxe
# userspace provider, /etc/libibverbs.d/rxe.driver), ibverbs-utils (ibv_devinfo), iproute2 (ip, rdma).
# The guest uses the HOST's userspace (its / is the host's /), so these must be on the host.
need() { for t in "$@"; do command -v "$t" >/dev/null || return 1; done; }
tools=(qemu-system-x86_64 busybox cpio depmod modprobe ibv_devinfo rdma ip)
if ! need "${tools[@]}" || [ ! -e /etc/libibverbs.d/rxe.driver ]; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null || cannot "missing packages (qemu-system-x86 rdma-core ibverbs-providers ibverbs-utils busybox-static cpio kmod iproute2) and not root (run scripts/install-deps.sh)"
    sudo_cmd=(sudo -n)
  fi
  command -v apt-get >/dev/null || cannot "missing packages and no apt-get to install them"
  echo "guest_vm: installing the guest's host packages (one time)" >&2
  { "${sudo_cmd[@]}" apt-get update -qq &&
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      qemu-system-x86 busybox-static cpio kmod iproute2 rdma-core ibverbs-providers ibverbs-utils >/dev/null
  } || cannot "apt-get could not install qemu-system-x86 and the rdma packages"
  need "${tools[@]}" && [ -e /etc/libibverbs.d/rxe.driver ] || cannot "packages installed but tools still missing: ${tools[*]}"
fi

# --- one-time setup 2: Debian's kernel (extracted, not installed) and the stage-1 initramfs -------
# Serialised with flock so that two runs sharing a cache never build it at once.
exec 9>"$C.lock"
flock 9
if [ ! -f "$C/initrd.gz" ]; then
  echo "guest_vm: downloading Debian's kernel and building the initramfs in $C (one time, ~35 s)" >&2
  rm -rf "$C" && mkdir -p "$C/ird/mod"
  (
    cd "$C"
    apt-cache show linux-image-amd64 >/dev/null 2>&1 || apt-get update -qq || true
    # linux-image-amd64 is the meta package; its first Depends is the versioned kernel package.
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ && !p {print $2; p=1}')
    [ -n "$pkg" ] || exit 3
    apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null || exit 3
    dpkg-deb -x linux-image-*.deb k && rm linux-image-*.deb
    K=$(ls k/lib/modules) && depmod -b k "$K" && cp k/boot/vmlinuz-* vmlinuz && echo "$K" > kver
    # Modules stage 1 needs before / exists (in dependency order): virtio, 9p, overlayfs, virtio-net.
    for m in virtio_pci 9pnet_virtio 9p overlay virtio_net; do modprobe -d k -S "$K" --show-depends $m; done |
      awk '!seen[$2]++ {print $2}' | while read -r f; do cp "$f" ird/mod/; basename "$f"; done > ird/mod/order
    mkdir ird/bin ird/dev ird/proc ird/sys ird/mnt && cp "$(command -v busybox)" ird/bin/
    cat > ird/init <<'EOF'
#!/bin/busybox sh
# Stage 1 (PID 1 in the initramfs): host / (9p, read-only) + tmpfs overlay -> /mnt; the per-run out
# dir and the RXE_VM_RW dirs (9p, read-write) on top; then switch_root into the run's stage 2.
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /mod/order); do insmod /mod/$m; done
o=trans=virtio,version=9p2000.L,msize=262144
mkdir /lower /upper; mount -t 9p -o $o,ro host /lower; mount -t tmpfs tmp /upper
mkdir /upper/u /upper/w; mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w root /mnt
mount -t 9p -o $o out /mnt$rxe_out
i=0; for d in $(echo "$rxe_rw" | tr : ' '); do mount -t 9p -o $o rw$i /mnt$d; i=$((i+1)); done
for d in proc sys dev; do mount --move /$d /mnt/$d; done
exec switch_root /mnt /bin/sh $rxe_out/stage2.sh
EOF
    chmod +x ird/init && (cd ird && find . | cpio -o -H newc --quiet | gzip -1 > ../initrd.gz)
  ) || { rm -rf "$C"; cannot "could not download or unpack Debian's kernel package (linux-image-amd64) into $C"; }
fi
flock -u 9
K=$(cat "$C/kver")

# --- per run: out dir (shared read-write) holding the environment, the command and stage 2 ------
out=$(mktemp -d /tmp/rxe-vm.XXXXXX)
trap 'rm -rf "$out"' EXIT
export -p > "$out/env"
{ printf '. %q/env; cd %q && ' "$out" "$PWD"; printf '%q ' "$@"; } > "$out/cmd"
cat > "$out/stage2.sh" <<EOF
# Stage 2: PID 1 in the guest, on the host's /. Bring up the soft-RoCE devices, run the command,
# record its status, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mkdir -p /dev/shm /dev/pts; mount -t tmpfs tmp /dev/shm; mount -t devpts pts /dev/pts
mkdir -p /lib/modules; ln -s $C/k/lib/modules/$K /lib/modules/$K
modprobe -a rdma_rxe rdma_ucm dummy
ip link set lo up
if [ -n "${RXE_VM_NET:-}" ]; then  # a virtio NIC on a QEMU socket network shared with another guest
  # TX completions reaped at each transmit, not by TX interrupts: napi_tx off, the NICs re-probed with it. With
  # napi_tx this guest kernel (Debian 12's 6.1) left eth0's queue stopped for good ("TX timeout" every 5 s
  # from then on) once its peer went quiet: in two CI runs, and here once with the peer guest frozen.
  echo N > /sys/module/virtio_net/parameters/napi_tx; d=/sys/bus/virtio/drivers/virtio_net
  for v in \$(ls \$d | grep '^virtio'); do echo \$v > \$d/unbind; echo \$v > \$d/bind; done
  nic=\$(ls /sys/class/net | grep -v -e lo -e dummy | head -n 1)
  ip link set \$nic mtu ${RXE_VM_MTU:-1500}; ip addr add ${RXE_VM_IP:-198.51.100.1}/24 dev \$nic; ip link set \$nic up
  rdma link add rxe0 type rxe netdev \$nic
  if [ -n "${RXE_VM_NET2:-}" ]; then
    nic2=\$(ls /sys/class/net | grep -v -e lo -e dummy -e \$nic | head -n 1)
    ip addr add ${RXE_VM_IP2:-203.0.113.1}/24 dev \$nic2; ip link set \$nic2 up; rdma link add rxe1 type rxe netdev \$nic2
  fi
else
  ip link add rxenet0 mtu ${RXE_VM_MTU:-1500} type dummy
  ip addr add 198.51.100.1/24 dev rxenet0; ip link set rxenet0 up
  rdma link add rxe0 type rxe netdev rxenet0
fi
if [ "${RXE_VM_NDEV:-1}" -ge 2 ] && [ -z "${RXE_VM_NET2:-}" ]; then  # a second device on another subnet
  ip link add rxenet1 mtu ${RXE_VM_MTU:-1500} type dummy; ip addr add 203.0.113.1/24 dev rxenet1
  ip link set rxenet1 up; rdma link add rxe1 type rxe netdev rxenet1
fi
for i in \$(seq 50); do  # wait for the IPv4-mapped (RoCE v2) GID to show up
  RXE_GID=\$(grep -l 0000:0000:0000:0000:0000:ffff: /sys/class/infiniband/rxe0/ports/1/gids/* | sed 's,.*/,,' | head -n 1)
  [ -n "\$RXE_GID" ] && break; sleep 0.1
done 2>/dev/null
export RXE_GID NCCLSCOPE_RDMA_GUEST=1; ulimit -l unlimited
bash $out/cmd > $out/stdout 2> $out/stderr < /dev/null; echo \$? > $out/rc
# Leave at once: sysrq b resets the guest immediately (QEMU exits: -no-reboot). The status and the
# results are already on the host (9p writes go straight through). An orderly sysrq o power-off took
# up to a minute here, and tears down the 9p root under PID 1 (which must never exit: kernel panic).
sync; echo b > /proc/sysrq-trigger; while :; do sleep 1; done
EOF

RW=${RXE_VM_RW:-}; dirs=(); share=()
for d in ${RW//:/ }; do d=$(realpath -e "$d")
  share+=(-virtfs "local,path=$d,mount_tag=rw${#dirs[@]},security_model=none,multidevs=remap"); dirs+=("$d"); done
rw=$(IFS=:; echo "${dirs[*]}")
netargs=(-nic none)
if [ -n "${RXE_VM_NET:-}" ]; then
  netdev() { case $2 in tap,*) echo "tap,id=$1,${2#tap,}" ;; *) echo "socket,id=$1,$2" ;; esac; }
  netargs=(-netdev "$(netdev n0 "$RXE_VM_NET")" -device "virtio-net-pci,netdev=n0,mac=${RXE_VM_MAC:-52:54:00:12:34:01}")
  [ -z "${RXE_VM_NET2:-}" ] || netargs+=(-netdev "$(netdev n1 "$RXE_VM_NET2")"
    -device "virtio-net-pci,netdev=n1,mac=${RXE_VM_MAC2:-52:54:00:12:36:01}")
fi
# -cpu max under TCG: no AVX-512, so host binaries must not be built with -march=native.
q=0; timeout "${RXE_VM_TIMEOUT:-600}" qemu-system-x86_64 -nodefaults -display none -no-reboot \
  "${netargs[@]}" -accel tcg,thread=multi -cpu max -smp "${RXE_VM_SMP:-2}" -m "${RXE_VM_MEM:-2G}" \
  -kernel "$C/vmlinuz" -initrd "$C/initrd.gz" -serial "file:$out/console" \
  -append "console=ttyS0 quiet panic=-1 rxe_out=$out rxe_rw=$rw" \
  -virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap" \
  -virtfs "local,path=$out,mount_tag=out,security_model=none" "${share[@]}" \
  ${RXE_VM_PIDFILE:+-pidfile "$RXE_VM_PIDFILE"} ${RXE_VM_MONITOR:+-monitor "unix:$RXE_VM_MONITOR,server=on,wait=off"} \
  </dev/null || q=$?
cat "$out/stdout" 2>/dev/null || true; cat "$out/stderr" >&2 2>/dev/null || true
grep -avE 'sysrq: Power Off|sysrq: Resetting|reboot: Power down' "$out/console" | tr -d '\r' > "$out/con" || true
[ -s "$out/con" ] && { echo "guest_vm: guest console (kernel messages):" >&2; tail -n 40 "$out/con" >&2; }
[ -s "$out/rc" ] && exit "$(cat "$out/rc")"
echo "guest_vm: the guest gave no exit status (qemu status $q; 124 = timeout)" >&2
[ $q = 124 ] && exit 124; exit 125
