#!/usr/bin/env bash
# expect_exit.sh STATUS CMD [ARGS...]: runs CMD and succeeds only when it exits with STATUS (for guest tests of
# commands whose expected outcome is a specific failure status, e.g. ncclscope-sim's 3 after --kill).
want=$1
shift
"$@"
rc=$?
echo "expect_exit: $1 exited $rc ($want expected)"
[ "$rc" -eq "$want" ]
