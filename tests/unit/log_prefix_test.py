#!/usr/bin/env python3
"""One prefix per log line: src/common/log.cc writes "ncclscope: " before every message it hands NCCL's logger
(and "[ncclscope]" on stderr), so no NCCLSCOPE_INFO/WARN/TRACE/LOG_ONCE call in src/ may start its format with
"ncclscope" again (lines read "ncclscope: ncclscope: ..." otherwise). The captured lines of a real job are
checked by e2e_version_and_logs; this catches a new call site before any job runs it.
Usage: log_prefix_test.py SOURCE_ROOT"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1])
# The macro, its subsystem argument (possibly a call such as f(x)), then the format's first literal.
CALL = re.compile(r'NCCLSCOPE_(?:INFO|WARN|TRACE)\s*\(\s*[^,()]*(?:\([^()]*\))?[^,()]*,\s*"([^"]{0,60})', re.S)
ONCE = re.compile(r'NCCLSCOPE_LOG_ONCE\s*\(\s*NCCLSCOPE_\w+\s*,\s*[^,]*,\s*"([^"]{0,60})', re.S)

calls, bad = 0, []
for f in sorted((ROOT / "src").rglob("*")):
    if f.suffix not in (".cc", ".h", ".inc") or f.name == "log.h":
        continue
    text = f.read_text(errors="replace")
    for pattern in (CALL, ONCE):
        for m in pattern.finditer(text):
            calls += 1
            if re.match(r"ncclscope\b", m.group(1), re.I):
                bad.append(f"{f.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: \"{m.group(1)}...\"")
print(f"{calls} log calls checked")
if calls < 60:
    print("FAIL: too few log calls found: the pattern no longer matches the macros")
    sys.exit(1)
for b in bad:
    print(f"FAIL: a second 'ncclscope' prefix: {b}")
sys.exit(1 if bad else 0)
