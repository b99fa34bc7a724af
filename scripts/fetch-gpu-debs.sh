#!/usr/bin/env bash
# Fills DIR (default .deps, ignored by git) with what tests/gpu/device_proof.sh needs on a GPU machine that
# cannot install anything: Debian's .deb files of our build dependencies (unpacked there, never installed)
# and the CUDA toolkit's nccl.h as a fallback for an NCCL wheel without headers. With NCCL_GIT naming a clone of
# NVIDIA/nccl, its newest release tag goes there too (nccl-src.tgz), which device_proof.sh builds and proves.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-.deps}
mkdir -p "$dir/nccl-include"
cd "$dir"
apt-get download libabsl-dev libabsl20220623 prometheus-cpp-dev libprometheus-cpp-core1.0 \
  libprometheus-cpp-pull1.0 libprometheus-cpp-push1.0 libcivetweb-dev libcivetweb1 civetweb nlohmann-json3-dev \
  libbenchmark-dev libbenchmark1debian libgtest-dev googletest zlib1g-dev zlib1g libcurl4-openssl-dev libcurl4
# Debian's abseil source, for the static abseil the packages ship (device_proof.sh builds with it).
"$here/fetch-abseil-source.sh" abseil-source
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
cp "$cuda/include/nccl.h" nccl-include/
if [ -n "${NCCL_GIT:-}" ]; then
  tag=$(git -C "$NCCL_GIT" tag --sort=-creatordate | grep -m1 -E '^v2\.[0-9]+\.[0-9]+-[0-9]+$')
  git -C "$NCCL_GIT" archive --format=tar.gz --prefix=nccl/ "$tag" >nccl-src.tgz
  echo "NCCL source: $tag"
fi
ls -la
