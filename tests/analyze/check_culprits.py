#!/usr/bin/env python3
"""Checks an `ncclscope-analyze --json` report names exactly one root cause, the expected one, and nothing
else as a culprit:

  check_culprits.py REPORT.json KIND COMM_NAME RANK SEQ [--global-rank G] [--or-where COMM_NAME:RANK]
                    [--class CLASS]

KIND: hang, dead, process, mismatch, straggler, link, kernel ('hang' accepts the analyzer's behind/missing kinds,
'process' its missing/dead/unresponsive ones; a link culprit's other end, `peer`, is not an extra blamed rank);
SEQ '-' skips the sequence check (stragglers). --or-where accepts a second first place where the process
stopped, for a scenario where it is blamed in two communicators at the same sequence and either could be where
it stopped. --class checks the culprit's `class`, the live alert's (rules/ncclscope-hang.yml: not_joined,
process, mismatch, kernel, link; straggler for NcclscopeStraggler).
Exit 1 with the report's culprits printed when anything differs.
"""
import argparse
import json
import sys

KINDS = {"hang": ("behind", "missing"), "dead": ("dead",), "process": ("missing", "dead", "unresponsive"),
         "mismatch": ("mismatch",), "straggler": ("straggler",),
         "link": ("link",), "kernel": ("kernel",)}

ap = argparse.ArgumentParser()
ap.add_argument("report")
ap.add_argument("kind", choices=sorted(KINDS))
ap.add_argument("comm_name")
ap.add_argument("rank", type=int)
ap.add_argument("seq")
ap.add_argument("--global-rank", type=int)
ap.add_argument("--or-where", help="COMM_NAME:RANK, also accepted as the first place")
ap.add_argument("--class", dest="cls", choices=("not_joined", "process", "mismatch", "kernel", "link", "straggler"))
a = ap.parse_args()
r = json.load(open(a.report))
culprits = r["culprits"]
problems = []
if r["status"] != "problem":
    problems.append(f"status {r['status']}, expected problem")
if len(culprits) != 1:
    problems.append(f"{len(culprits)} culprits, expected exactly 1")
else:
    c = culprits[0]
    w = c["where"][0]
    if c["kind"] not in KINDS[a.kind]:
        problems.append(f"kind {c['kind']}, expected {a.kind}")
    accepted = {(a.comm_name, a.rank)}
    if a.or_where:
        name, rank = a.or_where.rsplit(":", 1)
        accepted.add((name, int(rank)))
    if (w["comm_name"] or "", w["rank"]) not in accepted:
        problems.append(f"blamed rank {w['rank']} of {w['comm_name']}, expected rank {a.rank} of {a.comm_name}")
    if a.seq != "-" and w["seq"] != int(a.seq):
        problems.append(f"seq {w['seq']}, expected {a.seq}")
    if a.global_rank is not None and c["global_rank"] != a.global_rank:
        problems.append(f"global rank {c['global_rank']}, expected {a.global_rank}")
    if a.cls is not None and c.get("class") != a.cls:
        problems.append(f"class {c.get('class')}, expected {a.cls}")
    if not c.get("next_step"):
        problems.append("no next step")
    for comm in r["communicators"]:  # a victim is never listed as a culprit of its communicator
        peer_end = (w["comm_name"], (c.get("peer") or {}).get("rank"))  # a link's other end
        extra = [x for x in comm["culprits"] if (comm["summary"]["comm_name"], x) != (w["comm_name"], w["rank"])
                 and (comm["summary"]["comm_name"], x) != peer_end
                 and not any((p["comm_name"], p["rank"]) == (comm["summary"]["comm_name"], x) for p in c["where"])]
        if extra:
            problems.append(f"{comm['summary']['comm_name']} also blames ranks {extra}")
if problems:
    print("FAIL: " + "; ".join(problems))
    print(json.dumps(culprits, indent=1))
    sys.exit(1)
print(f"culprit ok: {culprits[0]['kind']} [class {culprits[0].get('class')}] global rank "
      f"{culprits[0].get('global_rank')}: {culprits[0]['line'][:160]}")
