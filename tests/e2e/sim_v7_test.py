#!/usr/bin/env python3
"""NCCL 2.31's profiler ABI (ncclProfiler_v7) end to end: ncclscope-sim --abi 2.31 binds ncclProfiler_v7 of the built
plugin and drives it as NCCL does. Checks, from each rank's dump:
  - per-tag operation counts and bytes equal what the job issued per tag (--tags 3: operation k carries tag
    1 + k % 3; a SendRecv is two profiler operations, Send and Recv), every operation's record carries its tag;
  - KernelPhase events (mask bit 0x8000) give every completed kernel-timed operation its phase durations, and
    with --straggle the straggler waits least in initial_sync and its peer most;
  - the default mask follows the NCCL in the process (the sim's ncclGetVersion): without KernelCh under 2.31.2,
    with it under 2.30.
Usage: sim_v7_test.py SIM_BINARY PLUGIN_DIR"""
import glob
import json
import re
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "analyze"))
from ncclscope_analysis.dumps import read_dump  # noqa: E402  (v1 and v2 dumps alike)
import tempfile

SIM, PLUGIN_DIR = sys.argv[1], sys.argv[2]
FAILED = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)




def run(args, mask, dump, abi="2.31", want=None, extra_env=None):
    os.makedirs(os.path.join(dump, "prom"), exist_ok=True)
    env = dict(os.environ, **(extra_env or {}), LD_LIBRARY_PATH=PLUGIN_DIR, NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="=lo",
               NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_DUMP_DIR=dump, NCCL_DEBUG="INFO",
               NCCLSCOPE_PROM_TEXTFILE_DIR=os.path.join(dump, "prom"), NCCLSCOPE_METRICS_LEVEL="full")
    env.pop("NCCLSCOPE_EVENT_MASK", None)
    if mask is not None:
        env["NCCLSCOPE_EVENT_MASK"] = mask
    p = subprocess.run([SIM, "--abi", abi] + args, env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"sim --abi {abi} {' '.join(args)} exits 0 (got {p.returncode}: {p.stderr[-300:]})")
    check(f"ncclProfiler_v{7 if abi == '2.31' else 6}" in p.stdout, f"the sim bound the profiler table of {abi}")
    if want is not None:
        want(p.stdout + p.stderr)
    return [read_dump(f) for f in sorted(glob.glob(os.path.join(dump, "ncclscope-comm-*.json.gz")))]


with tempfile.TemporaryDirectory() as tmp:
    # Tags: two op types, one size, warmup 2 + 5 iterations each, run in order; tags round-robin over runs.
    warmup, iters, ntags, size = 2, 5, 3, 65536
    dumps = run(["--ranks", "3", "--ops", "allreduce,sendrecv", "--sizes", f"{size}:{size}", "--warmup", str(warmup),
                 "--iters", str(iters), "--tags", str(ntags)], "0x8046", os.path.join(tmp, "tags"),
                extra_env={"NCCLSCOPE_TAG_NAMES": "1=forward,0x2=backward,3=bad name"})
    names = {1: "forward", 2: "backward"}  # tag 3's name is refused (a space): unnamed, with a warning
    check(len(dumps) == 3, f"one dump per rank ({len(dumps)})")
    expect = {}
    runs_per_op = warmup + iters
    for k in range(2 * runs_per_op):
        tag = 1 + k % ntags
        profiler_ops = 1 if k < runs_per_op else 2  # AllReduce, then SendRecv = Send + Recv
        expect[tag] = expect.get(tag, 0) + profiler_ops
    for d in dumps:
        got = {int(t["tag"], 16): t for t in d.get("tags", [])}
        check(d["abi"] == "v7", f"rank {d['rank']}: abi v7 ({d['abi']})")
        check(sorted(got) == sorted(expect), f"rank {d['rank']}: tags {sorted(got)} == {sorted(expect)}")
        for tag, n in expect.items():
            t = got.get(tag, {"ops": -1, "bytes": -1})
            check(t["ops"] == n and t["bytes"] == n * size,
                  f"rank {d['rank']} tag {tag}: {t['ops']} ops / {t['bytes']} B == {n} / {n * size}")
        recs = d["flight_recorder"]["completed"]
        check(recs and all("tag" in r for r in recs), f"rank {d['rank']}: every recorded operation has its tag")
        check({int(t["tag"], 16): t.get("name") for t in d["tags"]} == {1: "forward", 2: "backward", 3: None},
              f"rank {d['rank']}: tag names from NCCLSCOPE_TAG_NAMES in the dump")
        check(all(r.get("tag_name") == names.get(int(r["tag"], 16)) for r in recs),
              f"rank {d['rank']}: every recorded operation carries its tag's name")
        check(all("phases_ns" in r for r in recs if r.get("timing_source") == "gpu"),
              f"rank {d['rank']}: every GPU-timed operation has its KernelPhase durations")
    prom = "".join(open(f).read() for f in glob.glob(os.path.join(tmp, "tags", "prom", "*.prom")))
    named = set(re.findall(r'ncclscope_comm_tag_operations_total\{[^}]*tag="(0x[0-9a-f]+)"[^}]*tag_name="([^"]*)"', prom))
    check(named == {("0x0000000000000001", "forward"), ("0x0000000000000002", "backward"), ("0x0000000000000003", "")},
          f"per-tag metrics carry tag_name ({sorted(named)})")

    # Barrier time: rank 1 straggles 100 ms per collective (well above what a loaded host's scheduling adds: under a
    # CPU hog of 4x the cores the straggler itself waited 13 ms per collective). In symmetric kernels (--symmetric)
    # its peer waits in initial_sync and it does not; in ring kernels initial_sync is empty on both (the wait is
    # inside compute).
    for symmetric in (True, False):
        args = ["--ranks", "2", "--ops", "allreduce", "--sizes", "64K:64K", "--warmup", "1", "--iters", "8",
                "--straggle", "1:100"] + (["--symmetric"] if symmetric else [])
        dumps = run(args, "0x8046", os.path.join(tmp, "straggle-sym" if symmetric else "straggle-ring"))
        median = {}
        for d in dumps:
            xs = sorted(r["phases_ns"]["initial_sync"] for r in d["flight_recorder"]["completed"] if "phases_ns" in r)
            median[d["rank"]] = xs[len(xs) // 2] if xs else None
        kp = {d["rank"]: d.get("kernel_phases", {}) for d in dumps}
        print("symmetric" if symmetric else "ring", "median initial_sync ns by rank:", median,
              "barrier ns by rank:", {r: k.get("symmetric_barrier_ns") for r, k in kp.items()})
        if symmetric:
            check(None not in median.values() and median[1] < median[0] and median[0] > 10_000_000,
                  "symmetric: the straggler's initial_sync is the smallest, its peer's the largest (> 10 ms)")
            check(all(k.get("symmetric_ops", 0) >= 8 for k in kp.values()) and
                  kp[0]["symmetric_barrier_ns"] > 2 * kp[1]["symmetric_barrier_ns"] and
                  kp[0]["symmetric_barrier_ns"] > 8 * 50_000_000,
                  "symmetric: the dump's barrier total is the peer's wait, not the straggler's")
            exported = {}
            for f in glob.glob(os.path.join(tmp, "straggle-sym", "prom", "*.prom")):
                for line in open(f):
                    m = re.match(r'ncclscope_comm_symmetric_barrier_seconds_total\{(?:.*,)?rank="(\d+)".*\} (\S+)$', line)
                    if m:
                        exported[int(m.group(1))] = float(m.group(2))
            print("exported barrier seconds by rank:", exported)
            check(len(exported) == 2 and all(abs(exported[r] - kp[r]["symmetric_barrier_ns"] / 1e9) < 1e-6 for r in (0, 1)),
                  "symmetric: ncclscope_comm_symmetric_barrier_seconds_total equals the dump's total on each rank")
        else:
            check(median == {0: 0, 1: 0}, "ring: initial_sync is empty on every rank")
            check(all(k.get("ops", 0) >= 8 and "symmetric_ops" in k and k["symmetric_ops"] == 0 for k in kp.values()),
                  "ring: phases totalled, no symmetric collectives")

    # Without the KernelPhase bit, no phases (and tags still counted).
    dumps = run(["--ranks", "2", "--ops", "allreduce", "--sizes", "8:8", "--iters", "2", "--tags", "2"], "0x46",
                os.path.join(tmp, "nophase"))
    check(all("phases_ns" not in r for d in dumps for r in d["flight_recorder"]["completed"]),
          "no KernelPhase events without mask bit 0x8000")
    check(all(len(d.get("tags", [])) == 2 for d in dumps), "two tags counted")

    # The default mask by NCCL version (no NCCLSCOPE_EVENT_MASK).
    def mask_is(value, note=None):
        def check_out(out):
            check(f"activation mask: {value}" in out, f"default activation mask {value}")
            if note:
                check(note in out, f"the log says: {note}")
        return check_out
    run(["--ranks", "2", "--ops", "allreduce", "--sizes", "8:8", "--iters", "1"], None, os.path.join(tmp, "m31"),
        want=mask_is("0x6", "NCCL 2.31.2: KernelCh left out of the default event mask"))
    run(["--ranks", "2", "--ops", "allreduce", "--sizes", "8:8", "--iters", "1"], None, os.path.join(tmp, "m30"),
        abi="2.30", want=mask_is("0x46"))

print("FAILED: " + "; ".join(FAILED) if FAILED else "all checks passed")
sys.exit(1 if FAILED else 0)
