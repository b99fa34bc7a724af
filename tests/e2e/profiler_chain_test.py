#!/usr/bin/env python3
"""A second profiler plugin chained behind ncclscope (NCCLSCOPE_PROFILER_CHAIN), on the emulated NCCL 2.31 job.
The chained plugin is the recording fixture (tests/e2e/recording_profiler.cc: checks parents, threads, states and
stops, and writes what it saw per rank). Checks:
  - the chained plugin receives what NCCL would give it alone (its per-type event counts and operations equal a run
    where it is NCCL's only profiler, with no error of its own), for its full mask and a partial one;
  - ncclscope's own figures are unchanged (per-function operation counts and bytes in its dumps);
  - a v5-only plugin works behind ncclscope's v7; a plugin whose init fails leaves ncclscope working, with a log line.
Usage: profiler_chain_test.py SIM PLUGIN_DIR FIXTURE FIXTURE_V5_ONLY"""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

SIM, PLUGIN_DIR, FIXTURE, FIXTURE_V5 = sys.argv[1:5]
FAILED = []
JOB = ["--abi", "2.31", "--ranks", "2", "--ops", "allreduce,sendrecv", "--sizes", "8:64K", "--factor", "64",
       "--iters", "3"]


def steady(counts):
    """Event counts without ProxyCtrl: one per progress-thread phase (idle, active, sleep), which timing decides."""
    return {k: v for k, v in (counts or {}).items() if k != "ProxyCtrl"}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(tmp, name, profiler, chain=None, record_mask=None, extra_env=None):
    out = os.path.join(tmp, name)
    os.makedirs(os.path.join(out, "rec"))
    env = dict(os.environ, LD_LIBRARY_PATH=PLUGIN_DIR, NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="=lo",
               NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_DUMP_DIR=os.path.join(out, "dump"),
               SIM_RECORD_DIR=os.path.join(out, "rec"), NCCL_DEBUG="INFO")
    for k in ("NCCLSCOPE_EVENT_MASK", "NCCLSCOPE_PROFILER_CHAIN", "SIM_RECORD_MASK", "SIM_RECORD_INIT_FAIL"):
        env.pop(k, None)
    if chain:
        env["NCCLSCOPE_PROFILER_CHAIN"] = chain
    if record_mask:
        env["SIM_RECORD_MASK"] = record_mask
    env.update(extra_env or {})
    p = subprocess.run([SIM, "--profiler-plugin", profiler] + JOB, env=env, capture_output=True, text=True,
                       timeout=240)
    check(p.returncode == 0, f"{name}: the job exits 0 (got {p.returncode}: {p.stderr[-400:]})")
    recs = {}
    for f in glob.glob(os.path.join(out, "rec", "*.json")):
        r = json.load(open(f))
        recs[r["rank"]] = r
    ours = {}
    for f in glob.glob(os.path.join(out, "dump", "ncclscope-comm-*.json.gz")):
        with gzip.open(f, "rt") as z:
            d = json.loads(z.readline())  # the summary, the dump's first gzip member (docs/dump-format.md)
        ours[d["rank"]] = sorted((o["kind"], o["func"], o["count"], o["bytes"]) for o in d["ops"])
    return recs, ours, p.stdout + p.stderr


with tempfile.TemporaryDirectory() as tmp:
    plain_recs, _, _ = run(tmp, "fixture-alone", FIXTURE)
    _, ours_alone, _ = run(tmp, "ncclscope-alone", "ncclscope")
    recs, ours, log = run(tmp, "chained", "ncclscope", chain=FIXTURE)
    check("runs behind ncclscope" in log, "the log names the chained plugin")
    check(len(recs) == 2 and len(plain_recs) == 2, "the chained plugin wrote its record on both ranks")
    for rank in sorted(plain_recs):
        a, b = plain_recs[rank], recs.get(rank, {})
        check(b.get("errors") == [], f"rank {rank}: the chained plugin saw no misplaced parent, thread or state "
                                     f"({b.get('errors')})")
        check(steady(a.get("counts")) == steady(b.get("counts")),
              f"rank {rank}: event counts chained == alone ({steady(b.get('counts'))} vs {steady(a.get('counts'))})")
        check(a.get("ops") == b.get("ops"), f"rank {rank}: operations chained == alone")
    check(ours == ours_alone and len(ours) == 2, "ncclscope's own operation totals are unchanged by the chain")

    # A partial mask (ProxyOp only): the plugin gets its events plus the parents NCCL starts for them.
    plain_recs, _, _ = run(tmp, "partial-alone", FIXTURE, record_mask="0x8")
    recs, _, _ = run(tmp, "partial-chained", "ncclscope", chain=FIXTURE, record_mask="0x8")
    for rank in sorted(plain_recs):
        check(steady(plain_recs[rank]["counts"]) == steady(recs.get(rank, {}).get("counts")),
              f"rank {rank}, mask 0x8: counts chained == alone ({recs.get(rank, {}).get('counts')} vs "
              f"{plain_recs[rank]['counts']})")

    # A v5-only plugin behind ncclscope's v7.
    plain_recs, _, _ = run(tmp, "v5-alone", FIXTURE_V5)
    recs, _, log = run(tmp, "v5-chained", "ncclscope", chain=FIXTURE_V5)
    check("ncclProfiler_v5" in log, "the v5-only plugin is chained at v5")
    for rank in sorted(plain_recs):
        b = recs.get(rank, {})
        check(b.get("version") == 5 and b.get("errors") == [] and
              steady(b.get("counts")) == steady(plain_recs[rank]["counts"]),
              f"rank {rank}: v5 plugin behind v7: same events, no error (v{b.get('version')}, {b.get('errors')}, "
              f"{steady(b.get('counts'))} vs {steady(plain_recs[rank]['counts'])})")

    # A chained plugin whose init fails: ncclscope goes on.
    recs, ours, log = run(tmp, "init-fails", "ncclscope", chain=FIXTURE, extra_env={"SIM_RECORD_INIT_FAIL": "1"})
    check("init failed" in log and "ncclscope goes on" in log, "a failed chained init is logged")
    check(ours == ours_alone, "ncclscope's figures are whole when the chained init fails")

    # A chain to nothing loadable: a warning, ncclscope alone.
    _, ours, log = run(tmp, "missing", "ncclscope", chain="/nonexistent/libnope.so")
    check("cannot load it" in log and ours == ours_alone, "an unloadable chain warns and ncclscope works alone")

print("FAILED: " + "; ".join(FAILED) if FAILED else "all checks passed")
sys.exit(1 if FAILED else 0)
