#!/usr/bin/env bash
# ncclscope-analyze installs offline as a Python package with Debian's setuptools: pip install
# --no-build-isolation --no-index of the pip-installable copy the build stages (and the packages install under
# share/ncclscope/python/ncclscope-analyze) into a fresh venv gives a working `ncclscope-analyze` console script
# of the project's version, which then reads the dumps of a 2-rank emulated job.
#
# Usage: analyzer_pip_test.sh BUILD_DIR VERSION
set -euo pipefail
build=$(cd "${1:?usage: analyzer_pip_test.sh BUILD_DIR VERSION}" && pwd)
version=${2:?usage: analyzer_pip_test.sh BUILD_DIR VERSION}
work=$build/analyzer-pip-test
fail() { echo "FAIL: $*" >&2; exit 1; }

# Debian's python3 with python3-setuptools, python3-wheel and python3-venv (scripts/install-deps.sh); another
# python3 on PATH only if it has setuptools and wheel itself.
py=""
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -x "$candidate" ] && "$candidate" -c 'import setuptools, wheel, venv' 2>/dev/null; then py=$candidate; break; fi
done
[ -n "$py" ] || fail "no python3 with setuptools, wheel and venv (Debian: python3-setuptools python3-wheel python3-venv)"
echo "python: $py ($("$py" --version 2>&1), setuptools $("$py" -c 'import setuptools; print(setuptools.__version__)'))"

rm -rf "$work"
mkdir -p "$work"
# pip builds in the source directory (egg-info, build/): build from a copy, as a user would from the installed one.
cp -r "$build/python/ncclscope-analyze" "$work/src"
"$py" -m venv --system-site-packages "$work/venv"
(cd "$work" && "$work/venv/bin/python" -m pip install --no-build-isolation --no-index --no-cache-dir "$work/src") \
  >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; fail "pip install --no-build-isolation --no-index failed"; }
tail -n1 "$work/pip.log"
installed=$("$work/venv/bin/python" -m pip show ncclscope-analyze | sed -n 's/^Version: //p')
[ "$installed" = "$version" ] || fail "installed version '$installed', the project's is '$version'"
[ -x "$work/venv/bin/ncclscope-analyze" ] || fail "no ncclscope-analyze console script in the venv"
said=$(cd / && "$work/venv/bin/ncclscope-analyze" --version)
[ "$said" = "ncclscope-analyze $version" ] || fail "the console script's --version says '$said'"

# A 2-rank job's dumps, read by the console script from a directory with no copy of the package in reach.
mkdir -p "$work/job"
(cd "$work/job" && LD_LIBRARY_PATH="$build/lib" NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_PORT=-1 \
  NCCLSCOPE_DUMP_DIR="$work/job/dumps" timeout 120 "$build/bin/ncclscope-sim" --ranks 2 --ops allreduce \
  --sizes 8:64K --iters 2 >"$work/job/sim.log" 2>&1) || { cat "$work/job/sim.log"; fail "the 2-rank job failed"; }
rc=0
(cd / && env -u PYTHONPATH "$work/venv/bin/ncclscope-analyze" "$work/job/dumps" >"$work/analyze.txt") || rc=$?
[ "$rc" -eq 0 ] || { cat "$work/analyze.txt"; fail "the pip-installed ncclscope-analyze exited $rc on a healthy job"; }
cat "$work/analyze.txt"
where=$("$work/venv/bin/python" -c 'import ncclscope_analysis, os; print(os.path.dirname(ncclscope_analysis.__file__))')
case $where in "$work/venv/"*) ;; *) fail "ncclscope_analysis imported from $where, not the venv" ;; esac
grep -q "^healthy: 1 communicator(s), 2 rank dumps" "$work/analyze.txt" || fail "unexpected verdict"
echo "PASS: ncclscope-analyze $installed installed offline with pip into a venv ($where) and read a job's dumps"
