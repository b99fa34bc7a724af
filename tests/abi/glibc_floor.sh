#!/usr/bin/env bash
# The portable link (cmake/portable_link.cmake) holds: each file given needs no GLIBC_ version above FLOOR, no
# GLIBCXX_/CXXABI_ version (libstdc++ is linked in) and neither libstdc++.so.6 nor libgcc_s.so.1.
# The versions come from the files' version references (objdump -p: what the dynamic loader checks before it
# loads them); each offending symbol is named from the dynamic symbol table (objdump -T).
#
# Usage: glibc_floor.sh FLOOR FILE...     e.g. glibc_floor.sh 2.17 build/lib/libnccl-net-ncclscope.so
set -uo pipefail
floor=${1:?usage: glibc_floor.sh FLOOR FILE...}
shift
[ $# -gt 0 ] || { echo "usage: glibc_floor.sh FLOOR FILE..." >&2; exit 2; }
command -v objdump >/dev/null || { echo "FAIL: no objdump (binutils)" >&2; exit 1; }
# 1 when version $1 > version $2 (dotted numbers).
newer() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n1)" = "$1" ]; }

status=0
for f in "$@"; do
  [ -f "$f" ] || { echo "FAIL: $f: no such file"; status=1; continue; }
  refs=$(objdump -p "$f" | sed -n '/^Version References:/,/^$/p')
  needed=$(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}')
  versions=$(grep -oE '(GLIBC|GLIBCXX|CXXABI)_[0-9A-Z.]+' <<<"$refs" | sort -uV)
  highest=$(grep -E '^GLIBC_[0-9.]+$' <<<"$versions" | sort -V | tail -n1)
  bad=""
  for lib in libstdc++.so.6 libgcc_s.so.1; do
    grep -qxF "$lib" <<<"$needed" && bad+=" NEEDED $lib;"
  done
  for v in $versions; do
    case $v in
      GLIBCXX_* | CXXABI_*) ;;
      GLIBC_PRIVATE) ;;
      GLIBC_*) newer "${v#GLIBC_}" "$floor" || continue ;;
    esac
    syms=$(objdump -T "$f" | awk -v v="($v)" '$0 ~ /\*UND\*/ && index($0, v) {print $NF}' | sort -u)
    more=$(($(grep -c . <<<"$syms") - 8))
    syms=$(head -n 8 <<<"$syms" | tr '\n' ' ')
    [ "$more" -gt 0 ] && syms+="and $more more "
    bad+=" $v (${syms% });"
  done
  if [ -n "$bad" ]; then
    echo "FAIL: $f needs more than glibc $floor:$bad"
    status=1
  else
    echo "ok: $f: highest $highest (floor $floor), NEEDED $(tr '\n' ' ' <<<"$needed")"
  fi
done
exit $status
