#!/usr/bin/env bash
# check_wait_named.sh CHECK_OPTION… -- CMD [ARG…] — one side of rdma2_link_down_named: runs CMD (sim_ranks.sh
# and the job) with NCCLSCOPE_DUMP_DIR=$RDMA2_OUT/dumps, then check_wait_named.py CHECK_OPTION… over the
# dumps. Bash, not Python, starts the job: in a TCG guest on a loaded host Python's start-up once took ~20 s
# (the check alone takes 7-70 s there), and one side's ranks then started too late for the other side's
# link-down time.
# Exits with CMD's status when it failed, else with the check's.
set -uo pipefail
check=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do check+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: $0 CHECK_OPTION… -- CMD [ARG…]" >&2; exit 2; }
shift
mkdir -p "$RDMA2_OUT/dumps"
date +%s.%N > "$RDMA2_OUT/clock.at"  # this guest's clock against the host's (the file's mtime on the 9p share)
NCCLSCOPE_DUMP_DIR=$RDMA2_OUT/dumps "$@"; rc=$?
t=$SECONDS
python3 "$(dirname "$0")/check_wait_named.py" "${check[@]}"; c=$?
echo "check_wait_named: the check took $((SECONDS - t)) s"
[ $rc -ne 0 ] && exit $rc; exit $c
