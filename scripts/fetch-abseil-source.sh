#!/usr/bin/env bash
# fetch-abseil-source.sh DIR: unpacks Debian's source of the installed libabsl-dev (the same release, with
# Debian's patches) into DIR/abseil-<version>/ and prints that path. Idempotent: an unpacked tree is reused.
#
# Why: a static abseil inside the plugin (cmake/static_abseil.cmake) comes from libabsl-dev's archives, but four
# of their objects were compiled position-independent for executables only (thread-locals in the local-exec TLS
# model, which a shared object cannot hold); the build recompiles those four files from this tree.
# Needs Debian's source archive (deb-src of the configured mirror); reads apt's state, never changes it.
set -euo pipefail
dir=${1:?usage: fetch-abseil-source.sh DIR}
version=$(dpkg-query -W -f='${source:Version}' libabsl-dev 2>/dev/null) ||
  { echo "fetch-abseil-source: libabsl-dev is not installed (scripts/install-deps.sh)" >&2; exit 1; }
upstream=${version%%-*}
upstream=${upstream#*:}
tree="$dir/abseil-$upstream"
if [ -f "$tree/.ncclscope-version" ] && [ "$(cat "$tree/.ncclscope-version")" = "$version" ]; then
  echo "$tree"; exit 0
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tree="$dir/abseil-$upstream"
work=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A private sources list naming the mirror apt already uses, as deb-src: the system's apt configuration and
# package lists stay as they are.
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p; s/^deb \[[^]]*\] *\(http[^ ]*debian\) .*/\1/p; s/^deb \(http[^ ]*debian\) .*/\1/p' |
  head -n1) || true
mirror=${mirror:-http://deb.debian.org/debian}
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
mkdir -p "$work/lists/partial"
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\ndeb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s-updates main\n' \
  "$mirror" "$codename" "$mirror" "$codename" >"$work/sources.list"
# Security updates of abseil come as new source versions (the installed one may be one of them).
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s-security main\n' \
  "${mirror%/debian}/debian-security" "$codename" >>"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o APT::Sandbox::User=root -qq)
if ! apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 ||
   ! (cd "$work" && apt-get "${apt_opts[@]}" source --download-only "abseil=$version") >>"$work/apt.log" 2>&1; then
  cat "$work/apt.log" >&2
  echo "fetch-abseil-source: could not download Debian's source of abseil $version from $mirror" >&2
  exit 1
fi
rm -rf "$tree"
(cd "$work" && dpkg-source --no-check --no-copy -x ./*.dsc "$tree") >"$work/unpack.log" 2>&1 ||
  { cat "$work/unpack.log" >&2; exit 1; }
echo "$version" >"$tree/.ncclscope-version"
echo "$tree"
