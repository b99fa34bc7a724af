#!/usr/bin/env bash
# Regenerates README.md's configuration table from src/common/param_list.inc (through ncclscope-params).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" ncclscope-params >/dev/null
table=$("$build"/bin/ncclscope-params)
python3 - "$table" <<'PY'
import re, sys
table = sys.argv[1] + "\n"
text = open("README.md").read()
new = re.sub(r"(<!-- params:begin -->\n).*?(<!-- params:end -->)", lambda m: m.group(1) + table + m.group(2),
             text, flags=re.S)
open("README.md", "w").write(new)
PY
echo "README.md configuration table regenerated"
