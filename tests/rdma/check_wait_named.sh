#!/usr/bin/env bash
# check_wait_named.sh CHECK_OPTION… -- CMD [ARG…] — one side of rdma2_link_down_named: runs CMD (sim_ranks.sh
# and the job) with NCCLSCOPE_DUMP_DIR=$RDMA2_OUT/dumps, then check_wait_named.py CHECK_OPTION… over the
# dumps. Bash, not Python, starts the job: Python's start-up in a TCG guest on a loaded host once took ~20 s,
# and one side's ranks then started seconds after the other's, too late for the other side's link-down time.
# Exits with CMD's status when it failed, else with the check's.
set -uo pipefail
check=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do check+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: $0 CHECK_OPTION… -- CMD [ARG…]" >&2; exit 2; }
shift
mkdir -p "$RDMA2_OUT/dumps"
NCCLSCOPE_DUMP_DIR=$RDMA2_OUT/dumps "$@"; rc=$?
t=$SECONDS
python3 "$(dirname "$0")/check_wait_named.py" "${check[@]}"; c=$?
echo "check_wait_named: the check took $((SECONDS - t)) s"
[ $rc -ne 0 ] && exit $rc; exit $c
