#!/usr/bin/env python3
"""Checks run_real_nccl.sh's output (OUT_DIR): our dumps and final metrics against what the job did, GPU
durations against the job's CUDA-event times, net bytes counted by both ranks against each other and against
the recorded isend sizes, and prints the profiler's overhead. Exit status 1 on any failed check."""
import glob
import json
import os
import re
import statistics
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "analyze"))
from ncclscope_analysis.dumps import read_dump  # noqa: E402  (v1 and v2 dumps alike)

out = sys.argv[1]
failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def job_times(kind, pattern="[0-9]"):
    """{size: [us per op, ...]} over every run directory named kind1, kind2, ... (rank 0's log)."""
    t = {}
    for f in glob.glob(os.path.join(out, kind + pattern, "rank0.log")):
        for m in re.finditer(r"allreduce (\d+) bytes: ([\d.]+) us", open(f).read()):
            t.setdefault(int(m.group(1)), []).append(float(m.group(2)))
    return t


def prom_values(path):
    vals = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        vals[name] = float(value)
    return vals




# --- the profiler's view of the timing job: 3 warm-ups + 40 timed all-reduces per size ---
sizes, per_size = [1048576, 67108864], 43
on1 = os.path.join(out, "on1")
dumps = sorted(glob.glob(os.path.join(on1, "ncclscope-comm-*.json.gz")))
check(len(dumps) == 2, f"one dump per rank in on1 ({len(dumps)} found)")
times = job_times("on")
for f in dumps:
    d = read_dump(f)
    name = os.path.basename(f)
    print(f"{name}: abi {d['abi']}, rank {d['rank']}/{d['nranks']}, events {d['events']}, dropped {d['dropped']}")
    ar = [o for o in d["ops"] if o["func"] == "AllReduce"]
    check(len(ar) == 1 and ar[0]["count"] == per_size * len(sizes), f"{name}: AllReduce count {ar and ar[0]['count']}"
          f" == {per_size * len(sizes)}")
    want_bytes = per_size * sum(sizes)
    check(ar and ar[0]["bytes"] == want_bytes, f"{name}: AllReduce bytes {ar and ar[0]['bytes']} == {want_bytes}")
    check(ar and ar[0]["last_seq"] == per_size * len(sizes) - 1, f"{name}: last sequence number "
          f"{ar and ar[0]['last_seq']} == {per_size * len(sizes) - 1}")
    fr = d["flight_recorder"]["completed"]
    sources = {r["timing_source"] for r in fr}
    check(sources == {"gpu"}, f"{name}: every completed operation timed by the GPU (sources {sources})")
    for size in sizes:
        durs = [r["duration_ns"] / 1000 for r in fr if r["bytes"] == size][-40:]
        cuda = statistics.median(times.get(size, [float("nan")]))
        ours = statistics.median(durs) if durs else float("nan")
        # Back-to-back operations: a CUDA-event time per op is the kernel's duration plus launch gaps.
        check(0.5 * cuda <= ours <= 1.2 * cuda, f"{name}: {size} B median GPU duration {ours:.1f} us within "
              f"[0.5, 1.2] x the job's CUDA-event time per op {cuda:.1f} us")
    check(not d["dropped"], f"{name}: nothing dropped")
    check(d["in_flight_count"] == 0 and not d["stalled"], f"{name}: nothing left in flight, not stalled")

# --- net bytes: what one rank sent the other received, and what NCCL handed to isend ---
def net_bytes(run_dir):
    """(A sent, A received, B sent, B received) from the two ranks' final textfiles, or None."""
    proms = sorted(glob.glob(os.path.join(run_dir, "ncclscope-*.prom")))
    check(len(proms) == 2, f"{os.path.basename(run_dir)}: one final metrics textfile per rank ({len(proms)} found)")
    if len(proms) != 2:
        return None
    a, b = (prom_values(p) for p in proms)
    total = lambda vals, fam: sum(v for k, v in vals.items() if k.startswith(fam))
    return tuple(total(v, "ncclscope_nic_" + fam) for v in (a, b) for fam in ("sent_bytes_total", "received_bytes_total"))


counted = net_bytes(on1)
if counted:
    sent_a, recv_a, sent_b, recv_b = counted
    check(sent_a == recv_b and sent_b == recv_a and sent_a > 0,
          f"net bytes: rank A sent {sent_a:.0f} = rank B received {recv_b:.0f}; B sent {sent_b:.0f} = A received "
          f"{recv_a:.0f}")
    # A ring all-reduce on 2 ranks moves S bytes per rank (plus protocol overhead for LL/LL128).
    algo = per_size * sum(sizes)
    print(f"net bytes per rank / all-reduce payload per rank: {sent_a / algo:.4f}")
for scenario in ["allreduce"]:
    recs = glob.glob(os.path.join(out, "golden", scenario, "ncclscope-record-*.jsonl"))
    for rec in recs:
        isend = sum(json.loads(l)["size"] for l in open(rec) if '"call":"net.isend"' in l)
        print(f"golden {scenario} {os.path.basename(rec)}: isend sizes sum {isend}")

# --- golden traces: every scenario recorded on both ranks, parseable, with events ---
for scenario in ["allreduce", "p2p_group", "graph", "split", "abort"]:
    recs = sorted(glob.glob(os.path.join(out, "golden", scenario, "ncclscope-record-*.jsonl")))
    lines = 0
    calls = {}
    for rec in recs:
        for l in open(rec):
            r = json.loads(l)
            lines += 1
            calls[str(r.get("call"))] = calls.get(str(r.get("call")), 0) + 1
    check(len(recs) == 2 and calls.get("startEvent", 0) > 0,
          f"golden/{scenario}: {len(recs)} traces, {lines} lines, calls {dict(sorted(calls.items()))}")

# --- the chain: ncclscope wrapping an inner net plugin (ncclscope's TCP built alone) ---
for run_dir in sorted(glob.glob(os.path.join(out, "chain_v*"))):
    name = os.path.basename(run_dir)
    log = open(os.path.join(run_dir, "rank0.log")).read()
    inner = name.split("_v")[1]
    check(f"(ncclNetPlugin_v{inner}) from" in log and "via NET/ncclscope" in log,
          f"{name}: NCCL's channels go via ncclscope, which wraps the inner's ncclNetPlugin_v{inner}")
    check("0 wrong results" in log, f"{name}: the job's results are right")
    got = net_bytes(run_dir)
    check(got is not None and counted is not None and got == counted,
          f"{name}: bytes counted through the wrapper {got} == ncclscope TCP's for the same job {counted}")
    t = job_times(name, "")
    for size in sorted(t):
        a, b = statistics.median(t[size]), statistics.median(job_times("on").get(size, [float("nan")]))
        print(f"{name} at {size} bytes: {a:.1f} us per all-reduce through the wrapper, ncclscope TCP {b:.1f} us, "
              f"ratio {b / a:.3f}x")

# --- overhead ---
on, off = job_times("on"), job_times("off")
for size in sorted(on):
    a, b = statistics.median(on[size]), statistics.median(off.get(size, [float("nan")]))
    print(f"profiler overhead at {size} bytes: on {a:.1f} us, off {b:.1f} us (medians of {len(on[size])} runs), "
          f"{100 * (a - b) / b:+.2f} %  [runs on {on[size]} off {off.get(size)}]")
sock = job_times("socket")
for size in sorted(sock):
    a, b = statistics.median(off.get(size, [float("nan")])), statistics.median(sock[size])
    print(f"net transport at {size} bytes (profiler off): ncclscope TCP {a:.1f} us, NCCL's own socket transport "
          f"{b:.1f} us per all-reduce, ratio {b / a:.2f}x  [socket runs {sock[size]}]")
sys.exit(1 if failures else 0)
