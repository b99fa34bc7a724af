#!/usr/bin/env bash
# Installs the Debian packages ncclscope's build, tests and demo need. Idempotent: packages already
# present are skipped, so a second run costs a dpkg query and nothing else.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libabsl-dev prometheus-cpp-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libibverbs-dev
  prometheus prometheus-node-exporter curl python3 python3-hypothesis procps iproute2 binutils
  # The rules and dashboard are generated from mixin/ (scripts/gen-mixin.sh); the Alertmanager example is
  # tested with the real Alertmanager (tests/prometheus/hang_live.py) and amtool; those tests read YAML in Python.
  jsonnet prometheus-alertmanager python3-yaml
  # The endpoint's OpenMetrics is read back by prometheus_client's strict parser
  # (tests/prometheus/endpoint_parity_live.py).
  python3-prometheus-client
  # The packages (cpack: dpkg-deb, dpkg-shlibdeps; docs/install.md) and their tests (tests/package): the analyzer
  # installs offline into a venv with Debian's setuptools; a bare Debian root is made with apt-get download and
  # dpkg -x and entered with chroot and unshare. Static abseil compiles Debian's source (scripts/fetch-abseil-source.sh).
  dpkg-dev python3-setuptools python3-wheel python3-venv util-linux coreutils
  # The TLS + basic-auth endpoint test (tests/prometheus/tls_auth_scrape.sh) makes its certificates with
  # the openssl CLI; the plugin dlopens libssl3 and libcrypt1 at run time only when a web config asks.
  openssl libssl3 libcrypt1
  # The deploy/ manifests' check (tests/deploy/check_manifests.py) parses them with PyYAML.
  python3-yaml
  # The guest test tier (tests/rdma/guest_vm.sh, ctest -L rdma): QEMU, the initramfs tools and the
  # soft-RoCE userspace; Debian's kernel itself is downloaded by the runner into the build dir.
  qemu-system-x86 busybox-static cpio kmod
  rdma-core ibverbs-providers ibverbs-utils perftest
  # The Kubernetes init-container image (deploy/kubernetes/image/build.sh, tests/deploy/init_image_test.sh) is
  # built and run with podman; runc runs it where crun cannot (cgroups v1 or hybrid). The manifests are checked
  # against the Kubernetes API's types as the Python client carries them (tests/deploy/check_pod_security.py).
  podman runc python3-kubernetes
  # The stress stage (scripts/stress-test.sh): the main tier under a CPU hog.
  stress-ng
  # scripts/test.sh compiles through ccache: the minimal build reuses the main build's abseil objects.
  ccache
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
