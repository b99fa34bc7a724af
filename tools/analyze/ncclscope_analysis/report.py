"""Per-communicator analysis, the verdict lines, text and JSON output (cli.py has the command line).

Text output: one verdict line for the whole job, one per communicator, then per communicator the findings in
detail and its summary table.
"""
import sys

from . import hang, stragglers
from .progress import op_name
from .summary import summarize

PROBLEMS = ("behind", "missing", "stuck", "straggler")
REPORT_SCHEMA = "ncclscope.analyze.v1"


def analyze_comm(comm, ranks):
    nranks = next(iter(ranks.values()))["nranks"]
    findings = hang.diagnose(ranks, nranks)
    straggler = None
    if not any(f["kind"] in PROBLEMS for f in findings):
        straggler = stragglers.diagnose(ranks)
        if straggler and straggler["is_straggler"]:
            findings.append(stragglers.finding(straggler))
    problems = [f for f in findings if f["kind"] in PROBLEMS]
    culprits = []
    for f in sorted(problems, key=lambda f: (not f.get("root", True), PROBLEMS.index(f["kind"]))):
        culprits += [r for r in f["ranks"] if r not in culprits]
    entry = {"comm_hash": comm, "summary": summarize(ranks), "findings": findings, "straggler": straggler,
             "status": _status(problems), "culprits": culprits}
    entry["verdict"] = comm_verdict(entry)
    return entry


def _status(problems):
    kinds = {f["kind"] for f in problems}
    if kinds & {"behind", "stuck"} or ("missing" in kinds and any(f.get("waiting") for f in problems)):
        return "hang"
    if "missing" in kinds:
        return "missing"
    return "straggler" if "straggler" in kinds else "healthy"


def _comm_label(entry):
    name = entry["summary"]["comm_name"]
    return f"comm {entry['comm_hash']}" + (f" ({name})" if name else "")


def comm_verdict(entry):
    s = entry["summary"]
    problems = [f for f in entry["findings"] if f["kind"] in PROBLEMS]
    if not problems:
        ops = sum(f["ops_per_rank"] if isinstance(f["ops_per_rank"], int) else f["ops_per_rank"][1]
                  for f in s["functions"])
        busy = [f for f in entry["findings"] if f["kind"] == "in_flight"]
        return (f"{_comm_label(entry)}: healthy, {len(s['ranks_found'])}/{s['nranks']} ranks, {ops} operations "
                f"per rank, " + (f"{len(busy)} rank(s) with young operations in flight" if busy else "nothing in flight"))
    roots = [f for f in problems if f.get("root", True)]
    return f"{_comm_label(entry)}: {entry['status'].upper()}: " + "; ".join(f["headline"] for f in roots)


def job_verdict(report):
    bad = [e for e in report if e["status"] != "healthy"]
    if not bad:
        return f"healthy: {len(report)} communicator(s), no rank missing, stuck or late"
    parts = []
    for e in bad:
        roots = sorted({r for f in e["findings"] if f["kind"] in PROBLEMS and f.get("root", True) for r in f["ranks"]})
        parts.append(f"{e['status']} in {_comm_label(e)}: {', '.join(f'rank {r}' for r in roots)}")
    return "PROBLEM: " + "; ".join(parts)


def _process(d):
    return (d.get("host"), d["pid"]) if "pid" in d else None


def _cross_comm(report, comms):
    """A rank behind in one communicator may be waiting in another (its process has dumps of both): say where,
    since that other communicator's hang is then the one to follow."""
    waits = {}
    for comm, ranks in comms.items():
        for r, d in ranks.items():
            ops = hang.waiting_ops(d)
            if ops and _process(d):
                waits.setdefault(_process(d), []).append((comm, d.get("comm_name"), r, ops[0]))
    for e in report:
        ranks = comms[e["comm_hash"]]
        for f in [f for f in e["findings"] if f["kind"] == "behind"]:
            for r in f["ranks"]:
                for comm, name, their_rank, op in waits.get(_process(ranks[r]), []) if r in ranks else []:
                    if comm != e["comm_hash"]:
                        e["findings"].append({
                            "kind": "elsewhere", "ranks": [r], "comm_hash": comm,
                            "text": f"rank {r} (pid {ranks[r]['pid']}) is itself waiting in comm {comm}"
                                    + (f" ({name})" if name else "") + f" as its rank {their_rank}: {op_name(op)}"})


def analyze(comms):
    report = [analyze_comm(comm, ranks) for comm, ranks in sorted(comms.items())]
    _cross_comm(report, comms)
    return report


def _fmt_span(v):
    return str(v) if isinstance(v, int) else f"{v[0]}..{v[1]}"


def print_text(report, out=None):
    out = out or sys.stdout
    print(job_verdict(report), file=out)
    for e in report:
        print(e["verdict"], file=out)
    for e in report:
        s = e["summary"]
        hosts = sorted({h for h in s["hosts"].values() if h})
        reasons = sorted({x for x in s["dump_reasons"].values() if x})
        print(f"\n== {_comm_label(e)}: {len(s['ranks_found'])}/{s['nranks']} ranks"
              + (f", missing {s['missing']}" if s["missing"] else "")
              + (f" on {', '.join(hosts)}" if hosts else "") + (f"; dumps at {', '.join(reasons)}" if reasons else "")
              + (f"; stall watch fired on {s['stalled']}" if s["stalled"] else ""), file=out)
        for f in e["findings"]:
            print(f"  {f['kind']:9s} {f['text']}", file=out)
        st = e["straggler"]
        if st and not st["is_straggler"]:
            lead = st["median_lead_over_others_ns"] / 1e6
            print(f"  arrivals  no straggler: last to arrive most often rank {st['rank']} ({st['last_count']}/{st['ops']} "
                  f"collectives), median {abs(lead):.2f} ms {'after' if lead >= 0 else 'before'} the latest other rank "
                  f"({'host clock' if st['method'] == 'host_clock' else 'kernel durations'})", file=out)
        print(f"  {'function':16s} {'ops/rank':>9s} {'bytes/rank':>14s} {'busbw GB/s':>11s}  last seq per rank", file=out)
        for f in s["functions"]:
            bw = f"{f['busbw_gbps']:.2f}" if f["busbw_gbps"] else "-"
            seqs = " ".join(f"{r}:{q}" for r, q in f["last_seq"].items())
            print(f"  {f['kind'] + ' ' + f['func']:16s} {_fmt_span(f['ops_per_rank']):>9s} "
                  f"{_fmt_span(f['bytes_per_rank']):>14s} {bw:>11s}  {seqs}", file=out)
        print(f"  dropped events: {s['dropped'] if s['dropped'] else 'none'}"
              + (f"; flight recorder overwritten: {s['flight_recorder_overwritten']}"
                 if s["flight_recorder_overwritten"] else ""), file=out)


def to_json(report):
    return {"schema": REPORT_SCHEMA, "status": "healthy" if all(e["status"] == "healthy" for e in report) else "problem",
            "verdict": job_verdict(report), "communicators": report}

