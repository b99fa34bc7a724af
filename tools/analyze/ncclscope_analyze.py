#!/usr/bin/env python3
"""ncclscope-analyze: post-mortem of an NCCL job from the ncclscope dumps of all its ranks.

Reads every ncclscope-comm-*.json (schema ncclscope.comm.v1, written at finalize, by the stall watch and on
SIGUSR2) under the given directories or files and answers, per communicator: which rank is stuck or missing,
which rank is slow, and what the communicator did.

  ncclscope-analyze DIR_OR_FILE... [--json] [--trace OUT.json]

Exit status: 0 healthy, 1 a problem was found (missing rank, hang, straggler), 2 bad input (the file is named).
"""
import argparse
import glob
import json
import os
import statistics
import sys

SCHEMA = "ncclscope.comm.v1"


class BadInput(Exception):
    pass


# ---------------------------------------------------------------------------------------------------- loading
def dump_files(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "**", "ncclscope-comm-*.json"), recursive=True))
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise BadInput(f"{p}: no such file or directory")
    if not files:
        raise BadInput(f"no ncclscope-comm-*.json dump under {', '.join(paths)}")
    return files


def load(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: not a readable JSON dump ({e})")
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise BadInput(f"{path}: not an ncclscope dump (schema {d.get('schema') if isinstance(d, dict) else None!r}, "
                       f"expected {SCHEMA!r})")
    for key in ("comm_hash", "rank", "nranks", "ops", "flight_recorder"):
        if key not in d:
            raise BadInput(f"{path}: dump without '{key}'")
    d["_path"] = path
    return d


def by_communicator(dumps):
    comms = {}
    for d in dumps:
        ranks = comms.setdefault(d["comm_hash"], {})
        old = ranks.get(d["rank"])
        # Several dumps of one rank (stall, then signal, then finalize): the latest snapshot wins.
        if old is None or d.get("snapshot_monotonic_ns", 0) >= old.get("snapshot_monotonic_ns", 0):
            ranks[d["rank"]] = d
    return comms


# -------------------------------------------------------------------------------------------------- diagnosis
def last_issued(d):
    """{(kind, func): last sequence number issued} of one rank."""
    return {(o["kind"], o["func"]): o["last_seq"] for o in d["ops"]}


def describe_in_flight(r):
    state = r.get("state", "?")
    detail = ""
    if state == "net_progress" or r.get("net_steps_total"):
        detail = f", network steps {r.get('net_steps_done', 0)}/{r.get('net_steps_total', 0)}"
    elif state == "kernel_started":
        detail = f", kernel channels done {r.get('kernel_channels_done', 0)}/{r.get('channels', 0)}"
    age = r.get("age_ns", 0) / 1e9
    return f"{r['func']} seq {r['seq']} ({r['bytes']} B), {state}{detail}, in flight {age:.1f} s"


def diagnose_hang(ranks, nranks):
    """Findings about ranks that are missing, behind or stuck; empty when every rank is idle and complete."""
    findings = []
    missing = sorted(set(range(nranks)) - set(ranks))
    if missing:
        findings.append({"kind": "missing", "ranks": missing,
                         "text": f"rank(s) {missing} wrote no dump: dead (killed, crashed) or alive with nothing "
                                 f"in flight (the stall watch dumps only ranks with a stuck operation; SIGUSR2 "
                                 f"makes any rank dump)"})
    in_flight = {r: d["flight_recorder"].get("in_flight", []) for r, d in ranks.items()}
    if not any(in_flight.values()) and not any(d.get("stalled") for d in ranks.values()):
        return findings
    issued = {r: last_issued(d) for r, d in ranks.items()}
    keys = set().union(*issued.values())
    for kind, func in sorted(keys):
        if kind != "coll":
            continue  # point-to-point numbers are per peer and direction: compared below through in-flight ops
        seqs = {r: issued[r].get((kind, func), -1) for r in ranks}
        top = max(seqs.values())
        behind = sorted(r for r, s in seqs.items() if s < top)
        waiting = sorted(r for r, s in seqs.items() if s == top)
        if behind:
            last = {r: seqs[r] for r in behind}
            findings.append({"kind": "behind", "ranks": behind, "func": func, "seq": top,
                             "text": f"rank(s) {behind} never issued {func} seq {top} that rank(s) {waiting} "
                                     f"are waiting in (their last {func}: {last})"})
    stuck = sorted(r for r, ops in in_flight.items() if ops)
    if stuck and not any(f["kind"] == "behind" for f in findings):
        oldest = {r: min(in_flight[r], key=lambda x: x.get("arrival", 0)) for r in stuck}
        ops = sorted({(o["func"], o["seq"]) for o in oldest.values()})
        if missing:
            text = (f"rank(s) {missing} are the likely cause: rank(s) {stuck} wait inside " +
                    ", ".join(f"{f} seq {q}" for f, q in ops) + f" and {missing} left no dump")
        else:
            text = ("every rank issued the same operations and is stuck inside: " +
                    "; ".join(f"rank {r}: {describe_in_flight(o)}" for r, o in oldest.items()))
        findings.append({"kind": "stuck", "ranks": missing or stuck, "text": text})
    for r in stuck:
        oldest = min(in_flight[r], key=lambda x: x.get("arrival", 0))
        where = f" on {ranks[r]['host']}" if ranks[r].get("host") else ""
        findings.append({"kind": "in_flight", "ranks": [r], "text": f"rank {r}{where}: {describe_in_flight(oldest)}"
                         + (" [stall watch fired]" if ranks[r].get("stalled") else "")})
    return findings


def diagnose_stragglers(ranks):
    """A rank that arrives late makes every other rank's kernel wait for it: per collective present on every
    rank, the latest arriver has the shortest GPU duration. Host clocks are never compared across ranks."""
    if len(ranks) < 2:
        return None
    ops = {}
    for r, d in ranks.items():
        for rec in d["flight_recorder"].get("completed", []):
            if rec.get("kind") == "coll" and rec.get("timing_source") in ("gpu", "proxy"):
                ops.setdefault((rec["func"], rec["seq"]), {})[r] = rec["duration_ns"]
    common = [durs for durs in ops.values() if len(durs) == len(ranks)]
    if len(common) < 3:
        return None
    last_count = {r: 0 for r in ranks}
    lateness = {r: [] for r in ranks}
    for durs in common:
        shortest = min(durs, key=durs.get)
        last_count[shortest] += 1
        longest = max(durs.values())
        for r, v in durs.items():
            lateness[r].append(longest - v)
    rank = max(last_count, key=last_count.get)
    share = last_count[rank] / len(common)
    late_ns = statistics.median(lateness[rank])
    typical = statistics.median(max(d.values()) for d in common)
    result = {"rank": rank, "share": share, "ops": len(common), "median_lateness_ns": late_ns,
              "median_op_ns": typical}
    # A straggler: last in most collectives, and late by a tenth of an operation or a millisecond at least.
    result["is_straggler"] = share >= 0.6 and late_ns >= max(0.1 * typical, 1e6) and len(ranks) > 1
    return result


# ---------------------------------------------------------------------------------------------------- summary
def summarize(ranks):
    d0 = next(iter(ranks.values()))
    funcs = {}
    for d in ranks.values():
        for o in d["ops"]:
            f = funcs.setdefault((o["kind"], o["func"]), {"ops": 0, "bytes": 0, "last_seq": {}})
            f["ops"] = max(f["ops"], o["count"])
            f["bytes"] = max(f["bytes"], o["bytes"])
            f["last_seq"][d["rank"]] = o["last_seq"]
    busbw = {}
    for d in ranks.values():
        for a in d.get("aggregates", []):
            b = busbw.setdefault((a["kind"], a["func"]), [0, 0])
            if a.get("latency_count"):
                b[0] += a["bus_bytes"]
                b[1] += a["latency_sum_ns"]
    drops = {}
    for d in ranks.values():
        for k, v in d.get("dropped", {}).items():
            drops[k] = drops.get(k, 0) + v
    return {"comm_name": d0.get("comm_name"), "nranks": d0["nranks"], "ranks_found": sorted(ranks),
            "hosts": {r: d.get("host") for r, d in sorted(ranks.items())},
            "dump_reasons": {r: d.get("reason") for r, d in sorted(ranks.items())},
            "functions": [{"kind": k, "func": f, "ops_per_rank": v["ops"], "bytes_per_rank": v["bytes"],
                           "busbw_gbps": (busbw[(k, f)][0] / busbw[(k, f)][1]) if busbw.get((k, f), [0, 0])[1] else None,
                           "last_seq": v["last_seq"]} for (k, f), v in sorted(funcs.items())],
            "dropped": drops}


# ------------------------------------------------------------------------------------------------------ trace
def chrome_trace(comms):
    """Every rank's flight-recorder operations as Chrome/Perfetto trace events: one process per rank, one
    track per communicator. Times are each rank's host clock (comparable between ranks of one host)."""
    events = []
    for ci, (comm, ranks) in enumerate(sorted(comms.items())):
        for r, d in ranks.items():
            events.append({"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}})
            events.append({"ph": "M", "name": "thread_name", "pid": r, "tid": ci, "args": {"name": f"comm {comm}"}})
            for rec in d["flight_recorder"].get("completed", []):
                start = rec.get("kernel_start_host_ns") or rec.get("start_ns", 0)
                events.append({"ph": "X", "pid": r, "tid": ci, "name": f"{rec['func']} #{rec['seq']}",
                               "ts": start / 1e3, "dur": rec.get("duration_ns", 0) / 1e3,
                               "args": {"bytes": rec.get("bytes"), "algo": rec.get("algo"), "proto": rec.get("proto"),
                                        "timing": rec.get("timing_source")}})
            for rec in d["flight_recorder"].get("in_flight", []):
                events.append({"ph": "X", "pid": r, "tid": ci, "name": f"{rec['func']} #{rec['seq']} (in flight)",
                               "ts": rec.get("start_ns", 0) / 1e3, "dur": rec.get("age_ns", 0) / 1e3,
                               "args": {"state": rec.get("state")}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


# ---------------------------------------------------------------------------------------------------- output
def analyze(comms):
    report = []
    for comm, ranks in sorted(comms.items()):
        nranks = next(iter(ranks.values()))["nranks"]
        findings = diagnose_hang(ranks, nranks)
        straggler = diagnose_stragglers(ranks) if not findings else None
        if straggler and straggler["is_straggler"]:
            findings.append({"kind": "straggler", "ranks": [straggler["rank"]],
                             "text": f"rank {straggler['rank']} arrives last in {straggler['share']:.0%} of "
                                     f"{straggler['ops']} collectives, median {straggler['median_lateness_ns'] / 1e6:.2f} "
                                     f"ms late (operations take {straggler['median_op_ns'] / 1e6:.2f} ms)"})
        report.append({"comm_hash": comm, "summary": summarize(ranks), "findings": findings, "straggler": straggler})
    return report


def verdict(entry):
    s = entry["summary"]
    name = f"comm {entry['comm_hash']}" + (f" ({s['comm_name']})" if s["comm_name"] else "")
    problems = [f for f in entry["findings"] if f["kind"] != "in_flight"]
    if not problems:
        return f"{name}: healthy, {len(s['ranks_found'])}/{s['nranks']} ranks, nothing in flight"
    return f"{name}: " + " | ".join(f["kind"].upper() + ": " + f["text"] for f in problems)


def print_text(report):
    for e in report:
        print(verdict(e))
    for e in report:
        s = e["summary"]
        hosts = sorted({h for h in s["hosts"].values() if h})
        reasons = sorted({x for x in s["dump_reasons"].values() if x})
        print(f"\n== comm {e['comm_hash']}: {len(s['ranks_found'])}/{s['nranks']} ranks"
              + (f" on {', '.join(hosts)}" if hosts else "") + (f"; dumps at {', '.join(reasons)}" if reasons else ""))
        for f in e["findings"]:
            print(f"  {f['kind']:9s} {f['text']}")
        print(f"  {'function':16s} {'ops/rank':>9s} {'bytes/rank':>14s} {'busbw GB/s':>11s}  last seq per rank")
        for f in s["functions"]:
            bw = f"{f['busbw_gbps']:.2f}" if f["busbw_gbps"] else "-"
            seqs = " ".join(f"{r}:{q}" for r, q in sorted(f["last_seq"].items()))
            print(f"  {f['kind'] + ' ' + f['func']:16s} {f['ops_per_rank']:9d} {f['bytes_per_rank']:14d} {bw:>11s}  {seqs}")
        if s["dropped"]:
            print(f"  dropped events: {s['dropped']}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ncclscope-analyze", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="dump directories or files (every rank's)")
    ap.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    ap.add_argument("--trace", metavar="OUT", help="also write a merged Chrome/Perfetto trace of every rank")
    args = ap.parse_args(argv)
    try:
        comms = by_communicator([load(p) for p in dump_files(args.paths)])
    except BadInput as e:
        print(f"ncclscope-analyze: {e}", file=sys.stderr)
        return 2
    report = analyze(comms)
    if args.trace:
        with open(args.trace, "w") as f:
            json.dump(chrome_trace(comms), f)
    if args.json:
        json.dump(report, sys.stdout, indent=1, default=str)
        print()
    else:
        print_text(report)
    return 1 if any(f["kind"] != "in_flight" for e in report for f in e["findings"]) else 0


if __name__ == "__main__":
    sys.exit(main())
