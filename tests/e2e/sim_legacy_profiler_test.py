#!/usr/bin/env python3
"""Profiler v1, v2 and v3 (NCCL 2.23, 2.25, 2.26) end to end against v4 (NCCL 2.27): ncclscope-sim --abi 2.23 / 2.25 /
2.26 binds ncclProfiler_v1 / _v2 / _v3 of the built plugin, whose init names no communicator, and the same job under
--abi 2.27 binds v4. Checks, from each rank's dump and textfile:
  - the bound table, and each communicator named from its first Coll/P2p event: the dump's comm_hash is the one the
    sim printed, comm_name and rank are the communicator's;
  - ncclscope_comm_operations_total per rank and kind, and per function the dump's operation counts and last
    sequence numbers, equal v4's; bytes equal v4's except AllGather and ReduceScatter, which v1-v3 count as one
    rank's share (their init gives no nranks: v4's bytes are nranks times theirs);
  - no dropped events, but under v3 each P2p's KernelCh events (its descriptor has no channel count, so the P2p
    completes at its stop, before them); KernelCh events only under v3 (v1/v2 have none).
Usage: sim_legacy_profiler_test.py SIM_BINARY PLUGIN_DIR"""
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
RANKS = 2
CHANNELS = 2  # the sim's default


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(abi, out):
    prom = os.path.join(out, "prom")
    os.makedirs(prom, exist_ok=True)
    env = dict(os.environ, LD_LIBRARY_PATH=PLUGIN_DIR, NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="=lo",
               NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_DUMP_DIR=out, NCCLSCOPE_PROM_TEXTFILE_DIR=prom)
    env.pop("NCCLSCOPE_EVENT_MASK", None)
    p = subprocess.run([SIM, "--abi", abi, "--ranks", str(RANKS), "--channels", str(CHANNELS), "--ops", "all", "--iters", "3", "--sizes", "1K:64K"],
                       env=env, capture_output=True, text=True, timeout=240)
    check(p.returncode == 0, f"sim --abi {abi} exits 0 (got {p.returncode}: {p.stderr[-300:]})")
    m = re.search(r"profiler plugin: \S+ \((ncclProfiler_v\d)\)", p.stdout)
    hashes = re.findall(r"# comm \d+: commHash (0x[0-9a-f]+)", p.stdout)
    dumps = {d["rank"]: d for d in (read_dump(f) for f in glob.glob(os.path.join(out, "ncclscope-comm-*.json.gz")))}
    ops = {}
    for f in glob.glob(os.path.join(prom, "*.prom")):
        for line in open(f):
            mm = re.match(r'ncclscope_comm_operations_total\{.*rank="(\d+)",kind="(\w+)".*\} (\d+)', line)
            if mm:
                ops[(int(mm.group(1)), mm.group(2))] = int(mm.group(3))
    return (m.group(1) if m else None), hashes, dumps, ops


def per_func(d):
    return {(o["kind"], o["func"]): o for o in d["ops"]}


with tempfile.TemporaryDirectory() as tmp:
    table, base_hashes, base, base_ops = run("2.27", os.path.join(tmp, "v4"))
    check(table == "ncclProfiler_v4", f"--abi 2.27 binds ncclProfiler_v4 ({table})")
    check(len(base) == RANKS and len(base_ops) == 2 * RANKS, f"v4: {len(base)} dumps, {len(base_ops)} operation series")
    for abi, version in (("2.23", 1), ("2.25", 2), ("2.26", 3)):
        table, hashes, dumps, ops = run(abi, os.path.join(tmp, f"v{version}"))
        check(table == f"ncclProfiler_v{version}", f"--abi {abi} binds ncclProfiler_v{version} ({table})")
        check(len(dumps) == RANKS, f"v{version}: one dump per rank ({len(dumps)})")
        check(ops == base_ops, f"v{version}: ncclscope_comm_operations_total {sorted(ops.items())} == v4's")
        for rank, d in sorted(dumps.items()):
            b = base.get(rank)
            if b is None:
                check(False, f"v{version} rank {rank}: no v4 dump to compare with")
                continue
            check(d["abi"] == f"v{version}", f"v{version} rank {rank}: abi {d['abi']}")
            check(len(hashes) == 1 and d["comm_hash"] == hashes[0],
                  f"v{version} rank {rank}: comm_hash {d['comm_hash']} learned from the events == the sim's {hashes}")
            check(d["comm_name"] == b["comm_name"] == "sim-world", f"v{version} rank {rank}: comm_name {d['comm_name']}")
            # v3's P2p arm has no channel count, so a P2p completes at its stop (host-timed) and its KernelCh events,
            # which come later, find it gone: counted as stale parents, nothing else is dropped.
            p2p_kernel = sum(o["count"] for o in d["ops"] if o["kind"] == "p2p") * CHANNELS if version == 3 else 0
            want_drops = {"stale_parent": p2p_kernel} if p2p_kernel else {}
            check(d["dropped"] == want_drops, f"v{version} rank {rank}: dropped {d['dropped']} == {want_drops}")
            got, want = per_func(d), per_func(b)
            check(sorted(got) == sorted(want), f"v{version} rank {rank}: functions {sorted(got)} == v4's")
            for key, w in sorted(want.items()):
                g = got.get(key, {})
                same = g.get("count") == w["count"] and g.get("last_seq") == w["last_seq"]
                scale = RANKS if key[1] in ("AllGather", "ReduceScatter") else 1
                check(same and g.get("bytes", -1) * scale == w["bytes"],
                      f"v{version} rank {rank} {key[1]}: {g.get('count')} ops, seq {g.get('last_seq')}, "
                      f"{g.get('bytes')} B (x{scale}) == v4's {w['count']}, {w['last_seq']}, {w['bytes']} B")
            has_kernel = d["events"].get("KernelCh", 0) > 0
            check(has_kernel == (version == 3), f"v{version} rank {rank}: KernelCh events {d['events'].get('KernelCh', 0)}")

print("FAILED: %d check(s)" % len(FAILED) if FAILED else "all checks passed")
sys.exit(1 if FAILED else 0)
