#!/usr/bin/env bash
# The shipped rule files and their promtool unit tests under VictoriaMetrics' own evaluator (vmalert-tool
# unittest, Debian 13's 1.112): the same files, unchanged, with the tests' one field spelled as vmalert-tool
# wants it (promql_expr_test -> metricsql_expr_test) and no `alertgroup` label expected.
#  - rules/tests/recording_test.yml and alerts_test.yml must pass: the recording and alert groups give the same
#    series and alerts, at the same times, on both engines.
#  - rules/tests/hang_test.yml is run and its differing cases counted, not judged: vmalert reads a series recorded
#    earlier in the same group only from a later evaluation, so the hang group's chain of recorded series names the
#    same culprits later there (docs/scaling.md, "The hang rules on vmalert").
# Usage: check_vmalert_unittest.sh REPO --vm-bin DIR (tests/scale/with_victoria_metrics.sh appends the option)
set -euo pipefail
repo=$1 bin=$3
work=$(mktemp -d /tmp/ncclscope-vmalert-tool-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rules/tests"
cp "$repo"/rules/*.yml "$work/rules/"
for f in "$repo"/rules/tests/*.yml; do
  sed 's/^\( *\)promql_expr_test:/\1metricsql_expr_test:/' "$f" >"$work/rules/tests/$(basename "$f")"
done
cd "$work/rules/tests"
run() { "$bin/vmalert-tool" unittest --disableAlertgroupLabel --files "$1" >"$1.log" 2>&1; }
status=0
for t in recording_test.yml alerts_test.yml; do
  if run "$t"; then
    echo "vmalert-tool: $t: SUCCESS"
  else
    echo "FAIL: vmalert-tool: $t differs from promtool's expectations:"; cut -c1-400 "$t.log"; status=1
  fi
done
if run hang_test.yml; then
  echo "vmalert-tool: hang_test.yml: SUCCESS (every case as on Prometheus)"
else
  later=$(grep -c 'groupname: , alertname\|^    expr: ' hang_test.yml.log || true)
  echo "vmalert-tool: hang_test.yml: $later checks differ (the same verdicts reached later, or older values read:" \
       "the chain of recorded series)"
fi
exit $status
