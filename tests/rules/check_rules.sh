#!/usr/bin/env bash
# The shipped Prometheus rules (rules/*.yml): promtool's syntax and semantic check, then the unit tests in
# rules/tests/*.yml (synthetic series in, recorded series and alerts with their labels and annotations out).
set -euo pipefail
rules=${1:?usage: check_rules.sh RULES_DIR}
if ! command -v promtool >/dev/null; then
  echo "SKIP: promtool is not installed (Debian's prometheus package has it)"; exit 77
fi
shopt -s nullglob
files=("$rules"/*.yml) tests=("$rules"/tests/*.yml)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no rule files in $rules"; exit 1; }
[ ${#tests[@]} -gt 0 ] || { echo "FAIL: no unit tests in $rules/tests"; exit 1; }
promtool check rules "${files[@]}"
# Every rule file is loaded by some test.
for f in "${files[@]}"; do
  grep -qF "../$(basename "$f")" "${tests[@]}" || { echo "FAIL: no test in $rules/tests loads $(basename "$f")"; exit 1; }
done
promtool test rules "${tests[@]}"
echo "PASS: ${#files[@]} rule files checked, ${#tests[@]} unit test files passed"
