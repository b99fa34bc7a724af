#!/usr/bin/env python3
"""Benchmark of ncclscope-analyze at scale: a synthetic job of N ranks x C communicators with one planted
fault, written as real dumps (docs/dump-format.md), then the analyzer run on the folder.

  bench_analyze.py --ranks 1024,4096,16384 --comms 2 --fault hang|straggler|none [--format v2|v1]
                   [--analyzer PATH] [--keep DIR]

Prints per N: files, bytes on disk, generation seconds, analyzer wall and CPU seconds, peak RSS of the
analyzer's whole process tree (VmRSS of it and its descendants, summed, every ~20 ms), exit status, the
verdict's first line and whether it named the planted rank. Not a test: run by hand (minutes at 16,384 ranks).

The job: hosts of 8 ranks (node0001, ...); communicator 0 is the world, the others splits of all N ranks too.
Every rank's recorder holds RECORDS completed collectives; the newest 64 ("recent") differ per rank, with the
arrival and kernel durations the fault implies. Fault: `straggler` - rank K arrives ~5 ms late at every
collective, so it has the shortest kernels (the others wait in theirs for it); `hang` - on the world, rank K
never issued the next AllReduce, which every other rank has had in flight for 30 s (stall dumps in host
subfolders), and every rank's other dumps come from a request (SIGUSR2); `none` - a healthy finalized job.
The recorder body is serialized (and compressed) once per communicator and variant and reused by every rank.
A v2 stall dump holds the newest --stall-records (256, the writer's default cap), other dumps all RECORDS.
Dumps are written under /dev/shm when it has room (else $TMPDIR) and removed afterwards, unless --keep.
"""
import argparse
import gzip
import json
import multiprocessing
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# ---- the synthetic job ----

PERIOD_NS = 10_000_000       # one collective every 10 ms
LATE_NS = 5_000_000          # the straggler's lateness
BASE_NS = 3_600_000_000_000  # every host's CLOCK_MONOTONIC at the first recorded operation
GPU_OFFSET_NS = 1_795_351_740_000_000_000  # GPU %globaltimer minus host monotonic
ISSUED = 6000                # operations issued per communicator (a multiple of both patterns' lengths)
RECENT = 64
PATTERNS = ((("AllReduce", 64 << 20), ("AllReduce", 64 << 20), ("AllGather", 16 << 20), ("AllReduce", 8 << 20),
             ("ReduceScatter", 16 << 20)),
            (("AllReduce", 4 << 20), ("Broadcast", 1 << 20)))


class Job:
    def __init__(self, n, comms, fault, fmt, records, stall_records):
        self.n, self.comms, self.fault, self.fmt = n, comms, fault, fmt
        self.records, self.stall_records = min(records, ISSUED), stall_records
        self.planted = n * 2 // 3 + 3 if n > 8 else n - 1  # mid-host, not rank 0: nothing special about it
        self.hashes = [(0x9E3779B97F4A7C15 * (c + 1) + n) % (1 << 64) for c in range(comms)]

    def stalled(self, c, r):
        """Whether (communicator, rank) dumped from its stall watch (else finalize, or request in a hang)."""
        return self.fault == "hang" and c == 0 and r != self.planted

    def folder(self, c, r):
        """Stall and request dumps (a hang) go to the rank's host subfolder, finalize dumps to the top."""
        return f"node{r // 8 + 1:04d}" if self.fault == "hang" else ""


def _work_ns(nbytes):
    return 1_000_000 + nbytes // 40  # 40 GB/s plus a fixed millisecond


def _record(job, c, arrival, late, jitter):
    """One completed v1 record: arrival is the communicator's arrival number (1-based). The rank starts `late`
    ns after the earliest rank, and every rank's kernel ends once the straggler has arrived and the work is done."""
    pattern = PATTERNS[min(c, 1)]
    func, nbytes = pattern[(arrival - 1) % len(pattern)]
    same = [i for i, (f, _) in enumerate(pattern) if f == func]
    seq = (arrival - 1) // len(pattern) * len(same) + same.index((arrival - 1) % len(pattern))
    t = BASE_NS + (arrival - (ISSUED - job.records) - 1) * PERIOD_NS
    start = t + late + jitter
    kstart = start + 50_000
    straggler_late = LATE_NS if job.fault == "straggler" else 0
    end_of_kernel = t + straggler_late + 50_000 + _work_ns(nbytes) + jitter // 4
    dur = max(end_of_kernel - kstart, 10_000)
    return {"algbw_gbps": nbytes / dur, "algo": "RING", "arrival": arrival, "bytes": nbytes, "channels": 8,
            "count": nbytes // 4, "duration_ns": dur, "end_ns": kstart + dur + 20_000, "enqueued_ns": start + 30_000,
            "func": func, "gpu_end_ns": kstart + dur + GPU_OFFSET_NS, "gpu_start_ns": kstart + GPU_OFFSET_NS,
            "kernel_channels_done": 8, "kernel_start_host_ns": kstart, "kind": "coll", "net_steps_done": 64,
            "net_steps_total": 64, "proto": "SIMPLE", "proxy_ops_done": 16, "proxy_ops_started": 16,
            "root": 0 if func == "Broadcast" else -1, "seq": seq, "start_ns": start, "state": "completed",
            "timing_source": "gpu", "type_size": 4}


def _late(job, r):
    return LATE_NS if job.fault == "straggler" and r == job.planted else 0


def _jitter(r, arrival):
    return (r * 2654435761 + arrival * 40503) % 200_000  # up to 0.2 ms, the same on every run


def _template(job, c, variant, count):
    """The older records every rank of a variant (0: on time, 1: the straggler) shares, serialized once."""
    late = LATE_NS if variant else 0
    first = ISSUED - count + 1
    return [_record(job, c, a, late, 0) for a in range(first, ISSUED - RECENT + 1)]


def _ops(job, c, r):
    """The ops table: per function, count, bytes and last seq issued (the in-flight AllReduce included)."""
    pattern, totals = PATTERNS[min(c, 1)], {}
    cycles = ISSUED // len(pattern)
    for func, nbytes in pattern:
        t = totals.setdefault(func, [0, 0])
        t[0] += cycles
        t[1] += cycles * nbytes
    if job.stalled(c, r):  # issued AllReduce, the pattern's first operation, once more
        totals[pattern[0][0]][0] += 1
        totals[pattern[0][0]][1] += pattern[0][1]
    return [{"kind": "coll", "func": f, "count": n, "bytes": b, "last_seq": n - 1} for f, (n, b) in totals.items()]


def _in_flight(job, c, r):
    if not job.stalled(c, r):
        return []
    pattern = PATTERNS[min(c, 1)]
    rec = _record(job, c, ISSUED + 1, 0, _jitter(r, ISSUED + 1))
    assert rec["func"] == pattern[0][0] == "AllReduce"
    for k in ("algbw_gbps", "duration_ns", "end_ns", "gpu_end_ns", "timing_source"):
        rec.pop(k)
    rec.update(state="net_progress", net_steps_done=17, kernel_channels_done=0, proxy_ops_done=3, gpu_end_ns=0,
               age_ns=30_000_000_000)
    return [rec]


def _header(job, c, r, last_end_ns, in_flight, count):
    # A stall dump is taken 30 s into the wait; a finalize or request dump just after the last operation.
    snapshot = in_flight[0]["start_ns"] + 30_000_000_000 if in_flight else last_end_ns + 1_000_000
    reason = "finalize" if job.fault != "hang" else "stall" if job.stalled(c, r) else "request"
    return {
        "schema": "ncclscope.comm." + job.fmt, "comm_hash": f"0x{job.hashes[c]:016x}",
        "comm_name": "world" if c == 0 else f"split-{c}", "rank": r, "nranks": job.n, "nnodes": (job.n + 7) // 8,
        "pid": 10_000 + r, "abi": "v5", "host": f"node{r // 8 + 1:04d}", "job_id": "bench-1", "reason": reason,
        "finalized": reason == "finalize", "stalled": reason == "stall",
        "created_realtime_ns": 1_795_000_000_000_000_000, "snapshot_monotonic_ns": snapshot,
        "arrivals": ISSUED + len(in_flight), "memory_bytes": 250 * job.records + 40_000,
        "in_flight_count": len(in_flight), "oldest_in_flight_age_ns": 30_000_000_000 if in_flight else 0,
        "gpu_to_host_offset_ns": -GPU_OFFSET_NS, "ops": _ops(job, c, r),
        "aggregates": [{"kind": "coll", "func": f, "algo": "RING", "proto": "SIMPLE", "size_class": b.bit_length() - 1,
                        "count": ISSUED // 5, "bytes": b * ISSUED // 5, "bus_bytes": 2 * b * ISSUED // 5,
                        "latency_count": ISSUED // 5, "latency_sum_ns": _work_ns(b) * ISSUED // 5,
                        "latency_log2_buckets": {str(_work_ns(b).bit_length() - 1): ISSUED // 5}, "cpu_count": 0,
                        "cpu_sum_ns": 0} for f, b in PATTERNS[min(c, 1)]],
        "dropped": {}, "events": {"Coll": ISSUED, "KernelCh": 8 * ISSUED, "ProxyOp": 16 * ISSUED,
                                  "ProxyStep": 64 * ISSUED},
    }, count


def _v2_summary(job, c, r, head, recent, in_flight, count):
    head.update(
        part="summary",
        identity={"global_rank": r, "local_rank": r % 8, "gpu_uuid": f"GPU-{job.hashes[0] ^ r:016x}",
                  "nccl_version": "2.28.9"},
        clock={"mono_before_ns": head["snapshot_monotonic_ns"] - 2000, "realtime_ns": 1_795_000_100_000_000_000,
               "mono_after_ns": head["snapshot_monotonic_ns"] - 1000, "esterror_ns": 500_000,
               "maxerror_ns": 2_000_000, "synced": True},
        p2p=[], recent=recent, in_flight=in_flight,
        net_errors=[], flight_recorder={"depth": job.records, "overwritten": ISSUED - job.records, "completed": count})
    return head


_JOB = _DIR = None
_BODIES = {}  # (communicator, variant, stalled) -> (serialized older records, their count)
_COLUMNS = {}  # (communicator, variant) -> the recent records' columns, without jitter
RECENT_COLUMNS = {"arrival": "arrival", "kind": "kind", "func": "func", "seq": "seq", "peer": "root", "bytes": "bytes",
                  "start_ns": "start_ns", "kernel_start_host_ns": "kernel_start_host_ns",
                  "duration_ns": "duration_ns", "timing": "timing_source", "end_ns": "end_ns"}


def init_worker(job, folder):
    global _JOB, _DIR
    _JOB, _DIR = job, folder
    _BODIES.clear()
    _COLUMNS.clear()


def _recent_columns(c, variant, r):
    """The summary's `recent` columns of rank r: the variant's, shifted by r's jitter (as _record would), built
    column-wise since this runs once per file. Also returns the newest record's end, which is not a column."""
    key = (c, variant)
    if key not in _COLUMNS:
        recs = [_record(_JOB, c, a, LATE_NS if variant else 0, 0) for a in range(ISSUED - RECENT + 1, ISSUED + 1)]
        _COLUMNS[key] = {k: [rec[src] for rec in recs] for k, src in RECENT_COLUMNS.items()}
    base = _COLUMNS[key]
    jit = [_jitter(r, a) for a in base["arrival"]]
    cols = {k: v for k, v in base.items() if k != "end_ns"}
    cols["start_ns"] = [t + j for t, j in zip(base["start_ns"], jit)]
    cols["kernel_start_host_ns"] = [t + j for t, j in zip(base["kernel_start_host_ns"], jit)]
    cols["duration_ns"] = [max(d + j // 4 - j, 10_000) for d, j in zip(base["duration_ns"], jit)]
    return cols, cols["kernel_start_host_ns"][-1] + cols["duration_ns"][-1] + 20_000


def _body(c, variant, stalled):
    """The older records of a recorder: v1 as JSON text to splice, v2 as the compressed second member
    (with the recent records, which only the summary's columns vary per rank)."""
    key = (c, variant, stalled)
    if key not in _BODIES:
        count = min(_JOB.stall_records, _JOB.records) if stalled and _JOB.fmt == "v2" else _JOB.records
        old = _template(_JOB, c, variant, count)
        if _JOB.fmt == "v1":
            _BODIES[key] = (json.dumps(old, indent=1), count)
        else:
            recent = [_record(_JOB, c, a, LATE_NS if variant else 0, 0) for a in range(ISSUED - RECENT + 1, ISSUED + 1)]
            doc = {"schema": "ncclscope.comm.v2", "part": "flight_recorder", "completed": old + recent}
            _BODIES[key] = (gzip.compress((json.dumps(doc, separators=(",", ":")) + "\n").encode(), 6, mtime=0), count)
    return _BODIES[key]


def write_ranks(ranks):
    job = _JOB
    for r in ranks:
        for c in range(job.comms):
            stalled = job.stalled(c, r)
            body, count = _body(c, int(_late(job, r) > 0), stalled)
            in_flight = _in_flight(job, c, r)
            if job.fmt == "v1":
                recent = [_record(job, c, a, _late(job, r), _jitter(r, a))
                          for a in range(ISSUED - RECENT + 1, ISSUED + 1)]
                last_end = recent[-1]["end_ns"]
            else:
                recent, last_end = _recent_columns(c, int(_late(job, r) > 0), r)
            head, count = _header(job, c, r, last_end, in_flight, count)
            sub = os.path.join(_DIR, job.folder(c, r))
            os.makedirs(sub, exist_ok=True)
            name = f"ncclscope-comm-{job.hashes[c]:016x}-rank{r}.json"
            if job.fmt == "v1":
                recorder = (f'"flight_recorder": {{"depth": {job.records}, "overwritten": {ISSUED - job.records}, '
                            f'"completed": {body[:-1]}, {json.dumps(recent, indent=1)[1:]}, '
                            f'"in_flight": {json.dumps(in_flight, indent=1)}}}')
                data = (json.dumps(head, indent=1)[:-2] + ",\n " + recorder + "\n}\n").encode()
            else:
                summary = _v2_summary(job, c, r, head, recent, in_flight, count)
                data = gzip.compress((json.dumps(summary, separators=(",", ":")) + "\n").encode(), 6, mtime=0) + body
                name += ".gz"
            with open(os.path.join(sub, name), "wb") as f:
                f.write(data)


def tree_rss_kb(root):
    """VmRSS of root and all its descendants, in kB (processes that end meanwhile count 0)."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total


def kill_tree(root):
    """SIGKILL root's process group (the analyzer is started in its own session, so that is all of it)."""
    try:
        os.killpg(root, 9)
    except OSError:
        pass


def run_analyzer(cmd, folder, timeout_s, max_rss_mb):
    """(exit status or a reason it was stopped, wall s, CPU s of the tree, peak tree RSS in MB, stdout). CPU
    time tells the analyzer's own cost apart from waiting for cores that other work holds."""
    out = tempfile.TemporaryFile()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd + [folder], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    peak, stopped = 0, None

    def sample():
        nonlocal peak, stopped
        while proc.poll() is None:
            peak = max(peak, tree_rss_kb(proc.pid))
            if peak > max_rss_mb * 1024 and stopped is None:
                stopped = f"killed above {max_rss_mb} MB"
                kill_tree(proc.pid)
            if time.monotonic() - t0 > timeout_s and stopped is None:
                stopped = f"killed after {timeout_s} s"
                kill_tree(proc.pid)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    rc = proc.wait()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # every descendant reaped by now is counted
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    sampler.join()
    out.seek(0)
    text = out.read().decode("utf-8", "replace")
    return (stopped or rc), wall, cpu, peak / 1024, text


def analyzer_cmd(path):
    """The analyzer is a Python script (bin/ncclscope-analyze has no .py): run it with this interpreter."""
    with open(path, "rb") as f:
        first = f.readline()
    return [sys.executable, path] if path.endswith(".py") or b"python" in first else [path]


def named(line, rank):
    return re.search(rf"\branks? (?:\d+, )*{rank}\b", line) is not None


def folder_size(folder):
    files = size = 0
    for d, _, names in os.walk(folder):
        for n in names:
            files += 1
            size += os.stat(os.path.join(d, n)).st_blocks * 512
    return files, size


def scratch_dir(n, args):
    """/dev/shm when it has room to spare: creating 32,768 files on a busy disk takes minutes, and removing
    them as long, in tmpfs seconds; the analyzer reads freshly written files from the page cache either way."""
    need = n * args.comms * (1_600_000 if args.format == "v1" else 60_000)
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize > 3 * need and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


def bench_one(args, n, folder):
    job = Job(n, args.comms, args.fault, args.format, args.records, args.stall_records)
    t0 = time.monotonic()
    chunks = [range(r, min(n, r + 64)) for r in range(0, n, 64)]
    with multiprocessing.Pool(args.workers, initializer=init_worker, initargs=(job, folder)) as pool:
        pool.map(write_ranks, chunks, chunksize=1)
    gen_s = time.monotonic() - t0
    files, size = folder_size(folder)
    rc, wall, cpu, rss, text = run_analyzer(analyzer_cmd(args.analyzer), folder, args.timeout, args.max_rss_mb)
    first = (text.splitlines() or [""])[0]
    hit = "n/a" if args.fault == "none" else ("yes" if named(first, job.planted) else "NO")
    return {"ranks": n, "files": files, "mb": size / 2**20, "gen_s": gen_s, "wall_s": wall, "cpu_s": cpu,
            "rss_mb": rss,
            "exit": rc, "planted": job.planted, "named": hit, "verdict": first[:300]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "..", "build", "bin", "ncclscope-analyze")
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--ranks", default="1024,4096,16384", help="comma-separated job sizes")
    ap.add_argument("--comms", type=int, default=2)
    ap.add_argument("--fault", choices=("hang", "straggler", "none"), default="hang")
    ap.add_argument("--format", choices=("v2", "v1"), default="v2")
    ap.add_argument("--analyzer", default=os.path.normpath(built) if os.path.exists(built)
                    else os.path.join(here, "ncclscope_analyze.py"), help="default: build/bin/ncclscope-analyze")
    ap.add_argument("--keep", metavar="DIR", help="write the dumps under DIR/ranks<N> and keep them")
    ap.add_argument("--records", type=int, default=2048, help=f"completed records per recorder, {RECENT + 1} or more")
    ap.add_argument("--stall-records", type=int, default=256, help="records in a v2 stall dump (the writer's cap)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=900, help="analyzer wall limit, s")
    ap.add_argument("--max-rss-mb", type=float, default=8192, help="kill the analyzer above this tree RSS")
    ap.add_argument("--json", action="store_true", help="one JSON object per job size instead of text")
    args = ap.parse_args()
    if args.records <= RECENT or args.stall_records <= RECENT:
        ap.error(f"--records and --stall-records must be above {RECENT}")
    print(f"# analyzer {args.analyzer}, format {args.format}, fault {args.fault}, {args.comms} communicators, "
          f"{args.records} records, {args.workers} workers", flush=True)
    for n in [int(x) for x in args.ranks.split(",")]:
        folder = os.path.join(args.keep, f"ranks{n}") if args.keep else \
            tempfile.mkdtemp(prefix="ncclscope-bench-", dir=scratch_dir(n, args))
        if args.keep:
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
        try:
            r = bench_one(args, n, folder)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(f"N={r['ranks']} in {os.path.dirname(folder)}: {r['files']} files, {r['mb']:.0f} MiB, "
                  f"generated in {r['gen_s']:.1f} s; analyzer {r['wall_s']:.1f} s ({r['cpu_s']:.1f} s CPU), "
                  f"peak RSS {r['rss_mb']:.0f} MiB, exit {r['exit']}; "
                  f"planted rank {r['planted']} named: {r['named']}\n  verdict: {r['verdict']}", flush=True)


if __name__ == "__main__":
    main()
