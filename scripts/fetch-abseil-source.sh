#!/usr/bin/env bash
# fetch-abseil-source.sh DIR: unpacks Debian's source of abseil (with Debian's patches) into DIR/abseil-<version>/
# and prints that path. The release of the installed libabsl-dev is preferred; where the archive no longer has it
# (superseded by an update), the archive's current one is taken. Idempotent: an unpacked tree is reused, offline.
#
# Why: the static abseil linked into the plugin (cmake/static_abseil.cmake) is compiled from this tree, since
# libabsl-dev's own archives are -fPIE and cannot go into a shared object (docs/install.md).
# Needs Debian's source archive (deb-src of the mirror apt uses); apt's configuration and state stay untouched.
set -euo pipefail
dir=${1:?usage: fetch-abseil-source.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
installed=$(dpkg-query -W -f='${source:Version}' libabsl-dev 2>/dev/null || true)

tree_of() { local v=${1#*:}; echo "$dir/abseil-${v%%-*}"; }  # 20220623.1-1+deb12u2 -> abseil-20220623.1
unpacked() { [ -f "$1/.ncclscope-version" ] && [ -f "$1/absl/base/options.h" ]; }

# Reuse: the installed release's tree, else any tree unpacked before.
if [ -n "$installed" ] && unpacked "$(tree_of "$installed")" &&
   [ "$(cat "$(tree_of "$installed")/.ncclscope-version")" = "$installed" ]; then
  tree_of "$installed"; exit 0
fi
for t in "$dir"/abseil-*/; do
  if unpacked "${t%/}"; then echo "${t%/}"; exit 0; fi
done

work=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A private sources list naming the mirror apt already uses, as deb-src (and its security archive, where
# abseil's updates come from): the system's apt configuration and package lists stay as they are.
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p; s/^deb \[[^]]*\] *\(http[^ ]*debian\) .*/\1/p; s/^deb \(http[^ ]*debian\) .*/\1/p' |
  head -n1) || true
mirror=${mirror:-http://deb.debian.org/debian}
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
key=/usr/share/keyrings/debian-archive-keyring.gpg
mkdir -p "$work/lists/partial"
{
  echo "deb-src [signed-by=$key] $mirror $codename main"
  echo "deb-src [signed-by=$key] $mirror $codename-updates main"
  echo "deb-src [signed-by=$key] ${mirror%/debian}/debian-security $codename-security main"
} >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o APT::Sandbox::User=root -qq)
apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; echo "fetch-abseil-source: cannot read Debian's source archive at $mirror" >&2; exit 1; }
got=""
for want in ${installed:+"abseil=$installed"} abseil; do
  if (cd "$work" && apt-get "${apt_opts[@]}" source --download-only "$want") >>"$work/apt.log" 2>&1; then
    got=$want; break
  fi
done
[ -n "$got" ] || { cat "$work/apt.log" >&2; echo "fetch-abseil-source: could not download abseil's source" >&2; exit 1; }
dsc=$(ls "$work"/abseil_*.dsc)
version=$(sed -n 's/^Version: //p' "$dsc")
[ "$got" = abseil ] && [ -n "$installed" ] &&
  echo "fetch-abseil-source: the archive no longer has abseil $installed; using its $version" >&2
tree=$(tree_of "$version")
rm -rf "$tree"
(cd "$work" && dpkg-source --no-check --no-copy -x "$dsc" "$tree") >"$work/unpack.log" 2>&1 ||
  { cat "$work/unpack.log" >&2; exit 1; }
echo "$version" >"$tree/.ncclscope-version"
echo "$tree"
