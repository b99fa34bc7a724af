#!/usr/bin/env python3
"""RCCL's profiler layouts end to end (docs/nccl-integration.md#rccl): ncclscope-sim --abi-layout rccl|rccl-untagged
loads a fake librccl.so (no RCCL can run here) and builds its profiler descriptors in RCCL's layout. Checks:
  - rccl (NVIDIA's v7 with RCCL's fields appended): v7 is read as NVIDIA's; tags, their names, per-tag counts and
    bytes and kernel phases as under NVIDIA; RCCL's appended ProxyOp fields and ProxyDiag updates (sentinel
    0x5e5e...) never show up in a dump or a metric, and no state is counted as unknown; one log line per process;
  - rccl-untagged (an RCCL v7 without userTag and without the per-call config API): v7's additions are declined
    with one warning per process naming the reason, events are read through v6's layout: counts and bytes right,
    no tag (reading NVIDIA's userTag would read past the 128-byte descriptor: 0xeeee... in the sim), no phases,
    and the KernelPhase bit left out of the activation mask;
  - rccl with --abi 2.30 (an RCCL with only v6, where bit 0x8000 and state 31 are its ProxyDiag): bit 0x8000 is
    left out of the mask and its ProxyDiag updates are not read.
Usage: sim_rccl_test.py SIM_BINARY PLUGIN_DIR"""
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "analyze"))
from ncclscope_analysis.dumps import read_dump  # noqa: E402

SIM, PLUGIN_DIR = sys.argv[1], sys.argv[2]
FAILED = []
SENTINEL32, SENTINEL64 = 0x5E5E5E5E, 0x5E5E5E5E5E5E5E5E  # the sim's fill of RCCL's appended fields
BEYOND = 0xEEEEEEEEEEEEEEEE  # the sim's fill past an untagged descriptor
MASK = "0x805e"  # Coll, P2p, ProxyOp, ProxyStep, KernelCh, KernelPhase


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(layout, abi, args, dump, tag_names=None, rccl_v7=None):
    os.makedirs(os.path.join(dump, "prom"), exist_ok=True)
    env = dict(os.environ, LD_LIBRARY_PATH=PLUGIN_DIR, NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="=lo",
               NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_DUMP_DIR=dump, NCCL_DEBUG="INFO", NCCLSCOPE_EVENT_MASK=MASK,
               NCCLSCOPE_PROM_TEXTFILE_DIR=os.path.join(dump, "prom"), NCCLSCOPE_METRICS_LEVEL="full")
    env.pop("NCCLSCOPE_TAG_NAMES", None)
    env.pop("NCCLSCOPE_RCCL_V7", None)
    if rccl_v7:
        env["NCCLSCOPE_RCCL_V7"] = rccl_v7
    if tag_names:
        env["NCCLSCOPE_TAG_NAMES"] = tag_names
    cmd = [SIM, "--abi", abi, "--abi-layout", layout] + args
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    check(p.returncode == 0, f"sim {' '.join(cmd[1:])} exits 0" + ("" if p.returncode == 0 else
                                                                      f" (got {p.returncode}: {p.stderr[-300:]})"))
    table = "ncclProfiler_v7" if abi == "2.31" else "ncclProfiler_v6"
    check(f"profiler plugin: ncclscope ({table})" in out, f"the sim bound {table}")
    dumps = [read_dump(f) for f in sorted(glob.glob(os.path.join(dump, "ncclscope-comm-*.json.gz")))]
    prom = "".join(open(f).read() for f in glob.glob(os.path.join(dump, "prom", "*.prom")))
    return out, dumps, prom


def numbers(x):
    """Every number and string of a JSON value."""
    if isinstance(x, dict):
        for v in x.values():
            yield from numbers(v)
    elif isinstance(x, list):
        for v in x:
            yield from numbers(v)
    else:
        yield x


def no_foreign_values(dumps, prom, what):
    bad = {SENTINEL32, SENTINEL64, SENTINEL64 - (1 << 64), BEYOND, BEYOND - (1 << 64)}
    found = [v for d in dumps for v in numbers(d)
             if (isinstance(v, int) and not isinstance(v, bool) and v in bad) or
             (isinstance(v, str) and ("5e5e5e5e" in v.lower() or "eeeeeeee" in v.lower()))]
    check(not found, f"{what}: no sentinel value in any dump ({found[:3]})")
    samples = [float(m) for m in re.findall(r"^\S+ (\S+)$", prom, re.M)]
    check(prom and not any(abs(s - SENTINEL32) < 1 or abs(s / SENTINEL64 - 1) < 1e-9 for s in samples if s > 0) and
          "5e5e5e5e" not in prom.lower() and "eeeeeeee" not in prom.lower(),
          f"{what}: no sentinel value in the metrics")
    check(all(d.get("dropped", {}) == {} for d in dumps), f"{what}: no event or state dropped as unknown "
          f"({[d.get('dropped') for d in dumps]})")


def expected_ops(warmup, iters):
    """AllReduce runs, then SendRecv runs (two profiler operations: Send and Recv)."""
    runs = warmup + iters
    return {"AllReduce": runs, "Send": runs, "Recv": runs}


def counts_right(dumps, size, warmup, iters, what):
    want = expected_ops(warmup, iters)
    for d in dumps:
        got = {o["func"]: (o["count"], o["bytes"]) for o in d["ops"]}
        check(got == {f: (n, n * size) for f, n in want.items()},
              f"{what} rank {d['rank']}: operations and bytes {got} == {want} x {size} B")
        peers = sorted({p["peer"] for p in d.get("p2p", [])})
        check(all(0 <= p < d["nranks"] for p in peers), f"{what} rank {d['rank']}: p2p peers {peers} are ranks")


with tempfile.TemporaryDirectory() as tmp:
    ranks, warmup, iters, ntags, size = 3, 2, 4, 3, 65536
    job = ["--ranks", str(ranks), "--ops", "allreduce,sendrecv", "--sizes", f"{size}:{size}", "--warmup",
           str(warmup), "--iters", str(iters), "--tags", str(ntags)]

    # RCCL's v7 with NVIDIA's as its prefix.
    out, dumps, prom = run("rccl", "2.31", job, os.path.join(tmp, "rccl"), tag_names="1=forward,2=backward")
    check(len(dumps) == ranks, f"rccl: one dump per rank ({len(dumps)})")
    lines = [l for l in out.splitlines() if "profiler v7 read with NVIDIA's layout" in l]
    check(len(lines) == ranks, f"rccl: one log line per rank process naming the layout ({len(lines)})")
    check("activation mask: 0x805e" in out, "rccl: the mask keeps KernelPhase (0x805e)")
    expect = {}
    for k in range(2 * (warmup + iters)):
        tag = 1 + k % ntags
        expect[tag] = expect.get(tag, 0) + (1 if k < warmup + iters else 2)
    for d in dumps:
        check(d["abi"] == "v7-rccl", f"rccl rank {d['rank']}: abi v7-rccl ({d['abi']})")
        got = {int(t["tag"], 16): t for t in d.get("tags", [])}
        check(sorted(got) == sorted(expect), f"rccl rank {d['rank']}: tags {sorted(got)} == {sorted(expect)}")
        for tag, n in expect.items():
            t = got.get(tag, {"ops": -1, "bytes": -1})
            check(t["ops"] == n and t["bytes"] == n * size,
                  f"rccl rank {d['rank']} tag {tag}: {t['ops']} ops / {t['bytes']} B == {n} / {n * size}")
        check({tag: t.get("name") for tag, t in got.items()} == {1: "forward", 2: "backward", 3: None},
              f"rccl rank {d['rank']}: tag names from NCCLSCOPE_TAG_NAMES")
        recs = d["flight_recorder"]["completed"]
        check(recs and all("tag" in r for r in recs), f"rccl rank {d['rank']}: every recorded operation has its tag")
        check(any("phases_ns" in r for r in recs) and
              all("phases_ns" in r for r in recs if r.get("timing_source") == "gpu"),
              f"rccl rank {d['rank']}: kernel phases on every GPU-timed operation")
        check(d["events"].get("ProxyOp", 0) > 0, f"rccl rank {d['rank']}: ProxyOp events seen ({d['events']})")
    counts_right(dumps, size, warmup, iters, "rccl")
    no_foreign_values(dumps, prom, "rccl")
    named = set(re.findall(r'ncclscope_comm_tag_operations_total\{[^}]*tag="(0x[0-9a-f]+)"[^}]*tag_name="([^"]*)"',
                           prom))
    check(("0x0000000000000001", "forward") in named and ("0x0000000000000002", "backward") in named,
          f"rccl: per-tag metrics carry tag_name ({sorted(named)})")

    # An RCCL v7 without userTag: v7's additions declined, the job profiled through v6's layout.
    out, dumps, prom = run("rccl-untagged", "2.31", job, os.path.join(tmp, "untagged"), tag_names="1=forward")
    check(len(dumps) == ranks, f"untagged: one dump per rank ({len(dumps)})")
    lines = [l for l in out.splitlines() if "declining profiler v7's additions" in l]
    check(len(lines) == ranks and all("WARN" in l and "has no ncclAllReduceConfig" in l for l in lines),
          f"untagged: one warning per rank process naming the reason ({len(lines)}: {lines[:1]})")
    check("activation mask: 0x5e" in out, "untagged: KernelPhase (0x8000) left out of the activation mask")
    check("v7-rccl-as-v6: comm" in out and "mask 0x805e" not in out,
          "untagged: the plugin's init line logs the mask RCCL gets, not the unrestricted one")
    for d in dumps:
        check(d["abi"] == "v7-rccl-as-v6", f"untagged rank {d['rank']}: abi v7-rccl-as-v6 ({d['abi']})")
        check(not d.get("tags"), f"untagged rank {d['rank']}: no tags counted ({d.get('tags')})")
        recs = d["flight_recorder"]["completed"]
        check(recs and not any("tag" in r or "phases_ns" in r for r in recs),
              f"untagged rank {d['rank']}: no record carries a tag or kernel phases")
        check(d["events"].get("KernelPhase", 0) == 0, f"untagged rank {d['rank']}: no KernelPhase event")
    counts_right(dumps, size, warmup, iters, "untagged")
    no_foreign_values(dumps, prom, "untagged")

    # The operator's override: RCCL's appended v7 read as v6 (NCCLSCOPE_RCCL_V7=v6), as an RCCL the heuristic
    # misjudges would be. Same counts, no tags, the warning names the setting.
    out, dumps, prom = run("rccl", "2.31", job, os.path.join(tmp, "forced-v6"), tag_names="1=forward", rccl_v7="v6")
    check(sum("NCCLSCOPE_RCCL_V7=v6" in l for l in out.splitlines()) == ranks,
          "forced v6: one line per rank process names NCCLSCOPE_RCCL_V7=v6")
    check(len(dumps) == ranks and all(d["abi"] == "v7-rccl-as-v6" and not d.get("tags") for d in dumps),
          f"forced v6: abi v7-rccl-as-v6, no tags ({[(d['abi'], d.get('tags')) for d in dumps]})")
    counts_right(dumps, size, warmup, iters, "forced v6")
    no_foreign_values(dumps, prom, "forced v6")

    # An RCCL with only v6 (--abi 2.30): bit 0x8000 is its ProxyDiag, state 31 its ProxyDiag update.
    out, dumps, prom = run("rccl", "2.30", job, os.path.join(tmp, "rccl-v6"))
    check("activation mask: 0x5e" in out, "rccl v6: bit 0x8000 left out of the activation mask")
    check(all(d["abi"] == "v6-rccl" for d in dumps) and len(dumps) == ranks,
          f"rccl v6: abi v6-rccl ({[d['abi'] for d in dumps]})")
    counts_right(dumps, size, warmup, iters, "rccl v6")
    no_foreign_values(dumps, prom, "rccl v6")

print("FAILED: " + "; ".join(FAILED) if FAILED else "all checks passed")
sys.exit(1 if FAILED else 0)
