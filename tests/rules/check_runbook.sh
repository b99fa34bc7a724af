#!/usr/bin/env bash
# Every alert of rules/*.yml has a runbook_url ending in its anchor (the name in lower case) and a section
# "## <AlertName>" in docs/runbook.md (which gives that anchor).
set -euo pipefail
root=${1:?usage: check_runbook.sh REPO_ROOT}
runbook=$root/docs/runbook.md
python3 - "$root" "$runbook" <<'PY'
import glob, re, sys, yaml
root, runbook = sys.argv[1], sys.argv[2]
sections = set(re.findall(r"^## (\w+)\s*$", open(runbook).read(), re.M))
errors, n = [], 0
for f in sorted(glob.glob(root + "/rules/*.yml")):
    for g in yaml.safe_load(open(f))["groups"]:
        for r in g["rules"]:
            if "alert" not in r:
                continue
            n += 1
            name, url = r["alert"], r.get("annotations", {}).get("runbook_url", "")
            if not url.endswith("runbook.md#" + name.lower()):
                errors.append(f"{name}: runbook_url '{url}' does not point at docs/runbook.md#{name.lower()}")
            if name not in sections:
                errors.append(f"{name}: no section '## {name}' in docs/runbook.md")
for e in errors:
    print("FAIL:", e)
print(f"{n} alerts, {len(errors)} problems")
sys.exit(1 if errors or n == 0 else 0)
PY
