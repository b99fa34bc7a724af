#!/usr/bin/env python3
"""Checks the trace-event nesting rule: "X" (complete) slices of one track (pid, tid) either nest fully or do
not overlap; Perfetto draws a track as one stack and misplaces slices that break it.

  check_trace_nesting.py FILE...   exit 1 naming the first violating pair of each bad file, 0 with the number
                                   of slices checked; 2 when a file cannot be read as a trace.
  check_trace_nesting.py --sim-job SIM LIB_DIR ANALYZE
                                   runs a 4-rank ncclscope-sim job (collectives and point-to-point on 2
                                   communicators) writing dumps and per-rank traces, merges its dumps with
                                   `ANALYZE --trace`, and checks every trace file it produced; first the
                                   checker itself on hand-made slices and the analyzer's lanes on a dump
                                   whose collectives overlap.

Times are compared in integer nanoseconds (ts and dur are microseconds with a fraction), as Perfetto does on
import, so that a slice starting where the previous one ended does not count as an overlap.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def _ns(us):
    return round(float(us) * 1000)


def first_violation(events):
    """(slice count, None or (a, b)) where b starts inside a and ends after it, on the same track."""
    tracks = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X":
            start = _ns(e["ts"])
            tracks.setdefault((e.get("pid"), e.get("tid")), []).append((start, start + _ns(e.get("dur", 0)), e))
    bad = None
    for slices in tracks.values():
        slices.sort(key=lambda s: (s[0], -s[1]))
        open_ = []  # enclosing slices, innermost last: their ends never increase
        for s in slices:
            while open_ and open_[-1][1] <= s[0]:
                open_.pop()
            if open_ and s[1] > open_[-1][1]:
                pair = (open_[-1][2], s[2])
                if bad is None or pair[1]["ts"] < bad[1]["ts"]:
                    bad = pair
                break
            open_.append(s)
    return sum(len(s) for s in tracks.values()), bad


def _describe(e):
    return f"{e.get('name')!r} [{e['ts']}, +{e.get('dur', 0)}] us on pid {e.get('pid')} tid {e.get('tid')}"


def check_files(paths):
    status = 0
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
            events = doc["traceEvents"] if isinstance(doc, dict) else doc
            count, bad = first_violation(events)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"{path}: not a readable trace: {e}")
            status = 2
            continue
        if bad:
            print(f"{path}: FAIL: {_describe(bad[1])} starts inside {_describe(bad[0])} and ends after it")
            status = max(status, 1)
        else:
            print(f"{path}: ok, {count} slices nest or are disjoint per track")
    return status


def self_test(analyze):
    """The checker on hand-made slices, and the analyzer's lanes on a dump whose collectives overlap (an
    in-flight operation that started before completed ones: a job whose recorder kept running past a stall)."""
    def x(name, ts, dur, tid=0):
        return {"ph": "X", "name": name, "pid": 0, "tid": tid, "ts": ts, "dur": dur}
    assert first_violation([x("a", 0, 10), x("b", 2, 3), x("c", 5, 0), x("d", 10, 1)])[1] is None
    assert first_violation([x("a", 0, 10), x("b", 0, 11, tid=1)])[1] is None
    assert [e["name"] for e in first_violation([x("a", 0, 10), x("b", 2, 3), x("c", 4, 7)])[1]] == ["b", "c"]
    sys.path.insert(0, os.path.dirname(os.path.abspath(analyze)))
    from ncclscope_analysis.trace import chrome_trace

    def rec(kind, func, seq, start, dur, peer=None):
        return {"kind": kind, "func": func, "seq": seq, "start_ns": start, "duration_ns": dur, "age_ns": dur,
                **({"peer": peer} if peer is not None else {})}
    # AllReduce 0 nests in the in-flight AllGather (one lane); AllReduce 1 starts inside it and ends after it.
    fr = {"completed": [rec("coll", "AllReduce", 0, 1200, 100), rec("coll", "AllReduce", 1, 2000, 1000),
                        rec("p2p", "Send", 1, 2100, 900, 1),
                        rec("p2p", "Recv", 1, 2200, 900, 1), rec("coll", "AllReduce", 2, 4000, 1000)],
          "in_flight": [rec("coll", "AllGather", 0, 1000, 1500)]}
    dump = {"comm_hash": "0x1", "rank": 0, "nranks": 2, "host": "h", "pid": 1, "flight_recorder": fr}
    events = chrome_trace({"0x1": {0: dump}})["traceEvents"]
    count, bad = first_violation(events)
    names = sorted(e["args"]["name"] for e in events if e.get("name") == "thread_name")
    assert count == 6 and bad is None, bad
    assert len(names) == 4 and any("lane 2" in n for n in names), names


def sim_job(sim, lib, analyze):
    """Runs the job, the analyzer, and the check; the status of the check (or 2 when the job fails)."""
    try:
        self_test(analyze)
    except AssertionError as e:
        print(f"FAIL: self test: {e}")
        return 1
    with tempfile.TemporaryDirectory(prefix="ncclscope-nesting-") as work:
        dumps = os.path.join(work, "dumps")
        os.mkdir(dumps)
        env = dict(os.environ, LD_LIBRARY_PATH=lib, NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_DUMP_DIR=dumps,
                   NCCLSCOPE_TRACE="1")
        job = subprocess.run([sim, "--ranks", "4", "--comms", "2", "--ops", "all", "--sizes", "64K:256K",
                              "--iters", "3"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=240)
        if job.returncode != 0:
            print(job.stdout[-4000:] + f"\nFAIL: the sim job exited {job.returncode}")
            return 2
        merged = os.path.join(work, "merged-trace.json")
        # Dumps are found by directory: their names and compression are the writer's business.
        run = subprocess.run([sys.executable, analyze, "--trace", merged, dumps], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=240)
        print(run.stdout.splitlines()[0] if run.stdout else "(no analyzer output)")
        if run.returncode not in (0, 1, 6) or not os.path.exists(merged):  # healthy, hang, straggler
            print(run.stdout[-4000:] + f"\nFAIL: the analyzer exited {run.returncode}")
            return 2
        per_rank = sorted(glob.glob(os.path.join(dumps, "**", "ncclscope-trace-*"), recursive=True))
        if len(per_rank) < 8:  # 4 ranks x 2 communicators
            print(f"FAIL: {len(per_rank)} per-rank trace files under {dumps}, expected 8")
            return 1
        return check_files(per_rank + [merged])


def main(argv):
    if len(argv) == 4 and argv[0] == "--sim-job":
        return sim_job(*argv[1:])
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().splitlines()[0])
        print("usage: check_trace_nesting.py FILE... | --sim-job SIM LIB_DIR ANALYZE")
        return 2
    return check_files(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
