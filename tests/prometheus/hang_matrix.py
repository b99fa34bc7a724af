#!/usr/bin/env python3
"""The hang alert over a matrix of job shapes: every fault class of the emulated job (ncclscope-sim) × ranks ×
operation size × straggler × runs, against a real Prometheus (scrape and evaluation every 5 s, every rule file of
RULES loaded). For each job it checks:

  named right   NcclscopeHang names the expected class and global rank, and it is the only NcclscopeHang the job
                ever raised while watched: an alert naming another culprit or class (before or after the right
                one, or before the onset: a false alarm while healthy; a `link` alert for a killed or frozen rank,
                say) is wrong; one alert per root cause.
  in time       the alert's activeAt is at most --within s (15) after the onset (the line the faulty rank prints).
  analyzer      after the alert (or the timeout) every live rank of the job gets SIGUSR2 (a frozen rank cannot
                dump: expected), and `ncclscope_analyze.py DUMP_DIR --json` must name the same class and global
                rank as its only hang culprit (stragglers, class straggler, are not hang culprits). Recorded; a cell
                fails on it only with --analyzer-must-agree.

Fault classes (culprit C: N-1 for N <= 4 ranks, else int(0.7 N): 2 of 3, 5 of 8, 11 of 16; the fault comes at a
sequence number that gives ~--healthy s (15) of healthy, scraped operations first, from the time per operation
measured for the batch just before (the same shapes at once, healthy, ~3 s), or the straggler's sleep; each job's
record has the healthy seconds it got):
  hang      --hang C@SEQ                        not_joined
  p2p       --ops sendrecv --hang C@SEQ         not_joined (a point-to-point ring)
  kill      --kill C@SEQ --hold-on-error 120    process
  freeze    --freeze C@SEQ                      process (SIGSTOP)
  mismatch  --mismatch C@SEQ                    mismatch
  kernel    --stuck-kernel C@SEQ                kernel
With a straggler, rank 0 (never the culprit) sleeps --straggle MS before each operation. --abi 2.31 emulates NCCL
2.31, whose default event mask has no KernelCh: the stalls are seen from ncclscope's still connections, `kernel`
cannot be asked for (a stuck kernel looks like not_joined there), and a mismatch is named live as not_joined (the
right rank: its own different collective is done once enqueued, so it waits in nothing); the analyzer still
tells the mismatch from the dumps.

The jobs of one batch run at once (--parallel, default every selected class of one shape), each with its own
NCCLSCOPE_JOB_ID and NCCLSCOPE_DUMP_DIR. Prints one line per job, --table prints the markdown table
(class | ranks | size | straggler | named right | class named | onset→alert | analyzer agrees), --json FILE
writes every job's record and the cells, --rotate K adds K cells of the whole matrix, a different slice each day
(--rotate-day reruns one). Exit 1 if any cell fails, 77 (SKIP) without prometheus.

  python3 tests/prometheus/hang_matrix.py build/bin/ncclscope-sim build/lib rules --classes freeze,kill \\
      --ranks 3 --sizes 64K --straggle none --table
"""
import argparse
import glob
import itertools
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from hang_support import (CLASSES, SKIP, Job, Prometheus, firing, forget_targets, request_dumps,  # noqa: E402
                          sim_env)

ANALYZER = os.path.join(HERE, "..", "..", "tools", "analyze", "ncclscope_analyze.py")
# What the live alert can tell without KernelCh, where it differs (the analyzer's class stays CLASSES').
LIVE_CLASS_WITHOUT_KERNELCH = {"mismatch": "not_joined"}
# Milliseconds per all-reduce of one job running alone on a 2-core host, TCP over lo (the sim's time(us) column,
# measured); K jobs at once each run about 0.8 K times slower (6 jobs of 3 ranks: 4.4-5 times). Only the first
# guess: calibrate() measures each batch.
MS_PER_OP = {(3, 8): 0.12, (3, 65536): 0.25, (3, 4 << 20): 17.0, (8, 8): 0.43, (8, 65536): 1.3, (8, 4 << 20): 76.0,
             (16, 8): 1.2, (16, 65536): 4.6, (16, 4 << 20): 176.0}
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
SETTLE_S = 10  # after the right alert: two more evaluations, for a second (wrong) alert to show


def culprit_of(ranks):
    return ranks - 1 if ranks <= 4 else int(0.7 * ranks)


def parse_size(s):
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    return int(s[:-1]) * UNITS[s[-1]] if s[-1:] in UNITS and s[-1:] else int(s)


def size_text(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def ms_per_op(ranks, size):
    """MS_PER_OP for the shape: the nearest measured size, linear in ranks between (or beyond) measured ones."""
    sizes = sorted({b for _, b in MS_PER_OP})
    b = min(sizes, key=lambda x: abs(math.log2(x) - math.log2(size)))
    pts = sorted((r, v) for (r, s), v in MS_PER_OP.items() if s == b)
    lo, hi = ([p for p in pts if p[0] <= ranks] or pts[:1])[-1], ([p for p in pts if p[0] >= ranks] or pts[-1:])[0]
    if lo[0] == hi[0]:
        return lo[1] * ranks / lo[0]
    return lo[1] + (hi[1] - lo[1]) * (ranks - lo[0]) / (hi[0] - lo[0])


def calibrate(batch, sim, env, sim_args):
    """Milliseconds per operation of each cell of BATCH, measured by running them all at once, healthy and briefly
    (the sim's time(us) column; the mean per shape): the rate of a job depends on the host and on what runs beside
    it. Falls back on MS_PER_OP (scaled by the jobs at once) where a run gives no figure."""
    procs = []
    for cls, ranks, size, _, _ in batch:
        guess = ms_per_op(ranks, size) * max(1.0, 0.8 * len(batch))
        argv = [sim, "--ranks", str(ranks), "--ops", "sendrecv" if cls == "p2p" else "allreduce",
                "--sizes", f"{size}:{size}", "--iters", str(min(200000, max(20, int(3000 / guess))))] + sim_args
        procs.append((guess, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                              text=True, start_new_session=True)))
    out = []
    for guess, p in procs:
        try:
            rows = [line.split() for line in p.communicate(timeout=60)[0].splitlines() if line[:1] == " "]
            times = [float(r[5]) / 1000 for r in rows if len(r) > 5 and r[0].isdigit()]
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            times = []
        out.append(statistics.mean(times) if times else guess)
    shape = [("p2p" if c == "p2p" else "coll", n, b) for c, n, b, _, _ in batch]  # one figure per shape: the mean
    return [statistics.mean(m for m, t in zip(out, shape) if t == k) for k in shape]


def fault_seq(ms, straggle_ms, healthy_s):
    """The sequence number that leaves about HEALTHY_S of operations of MS each (or the straggler's sleep) before
    the fault."""
    return max(20, math.ceil(healthy_s * 1000 / max(ms, straggle_ms)))


class MatrixJob:
    """One cell's run: the sim launch, what it must be named, and what was seen."""

    def __init__(self, cls, ranks, size, straggle_ms, run, args, work, env0, ms):
        self.cls, self.ranks, self.size, self.straggle_ms, self.run = cls, ranks, size, straggle_ms, run
        self.name = f"{cls}-n{ranks}-{size}b-s{straggle_ms}-r{run}"
        make_args, self.want_class, marker = CLASSES[cls]
        self.want_live_class = LIVE_CLASS_WITHOUT_KERNELCH.get(cls, self.want_class) if args.abi == "2.31" \
            else self.want_class
        self.want_rank = str(culprit_of(ranks))
        self.ms_per_op = round(ms, 3)
        self.abi = args.abi
        self.seq = args.seq or fault_seq(ms, straggle_ms, args.healthy)
        self.dump_dir = os.path.join(work, "dumps", self.name)
        os.makedirs(self.dump_dir)
        argv = [args.sim, "--ranks", str(ranks), "--sizes", f"{size}:{size}", "--iters", "100000000",
                "--timeout", "150", "--expect-hang"] + make_args(self.want_rank, self.seq) + args.sim_args
        if straggle_ms:
            argv += ["--straggle", f"0:{straggle_ms}"]
        env = dict(env0, NCCLSCOPE_JOB_ID=self.name, NCCLSCOPE_DUMP_DIR=self.dump_dir)
        self.start = time.time()
        self.job = Job(self.name, argv, env, work, marker)
        self.alerts = {}  # frozenset(labels) -> (labels, activeAt, first seen)
        self.right_seen = None
        self.analyzer = None
        self.blind_polls = []  # alert queries Prometheus did not answer while this job was watched

    def observe(self, alerts, now):
        for labels, active in alerts:
            key = frozenset((k, v) for k, v in labels.items() if k != "alertstate")
            self.alerts.setdefault(key, (labels, active, now))
            if self.right_seen is None and self.is_right(labels):
                self.right_seen = now

    def is_right(self, labels):
        return labels.get("class") == self.want_live_class and labels.get("global_rank") == self.want_rank

    def done(self, now, within):
        """Watched long enough: the right alert plus SETTLE_S, or the time allowed after the onset (or start)."""
        if self.right_seen is not None:
            return now >= self.right_seen + SETTLE_S
        if self.job.onset is not None:
            return now >= self.job.onset + within + 15 + SETTLE_S
        return now >= self.start + 150 or self.job.proc.poll() is not None

    def record(self, within):
        seen = sorted(self.alerts.values(), key=lambda a: a[2])
        right = [a for a in seen if self.is_right(a[0])]
        onset = self.job.onset
        delay = right[0][1] - onset if right and onset else None
        named_right = len(seen) == 1 and bool(right)
        return {"job": self.name, "class": self.cls, "ranks": self.ranks, "size": self.size,
                "straggle_ms": self.straggle_ms, "run": self.run, "seq": self.seq, "ms_per_op": self.ms_per_op,
                "abi": self.abi,
                "want": {"class": self.want_live_class, "global_rank": self.want_rank,
                         "analyzer_class": self.want_class},
                "healthy_s": round(onset - self.start, 1) if onset else None,
                "alerts": [{"class": a[0].get("class"), "global_rank": a[0].get("global_rank"),
                            "peer_global_rank": a[0].get("peer_global_rank"), "comm": a[0].get("comm"),
                            "active_at": a[1], "seen_at": a[2], "before_onset": onset is None or a[1] < onset}
                           for a in seen],
                "named_right": named_right, "onset_to_alert_s": round(delay, 1) if delay is not None else None,
                "in_time": delay is not None and delay <= within, "analyzer": self.analyzer,
                "blind_polls": self.blind_polls}


def analyze(mj):
    """The analyzer's verdict on the job's dumps, compared with the expected culprit."""
    r = subprocess.run([sys.executable, ANALYZER, mj.dump_dir, "--json", "--jobs", "1"], capture_output=True,
                       text=True, timeout=120)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        return {"agree": False, "named": [], "error": f"exit {r.returncode}: {(r.stderr or r.stdout)[-300:]}"}
    hang = [c for c in out.get("culprits", []) if c.get("alert") == "NcclscopeHang"]
    named = [f"{c['class']} gr{c.get('global_rank')}" for c in hang]
    agree = len(hang) == 1 and hang[0]["class"] == mj.want_class and str(hang[0].get("global_rank")) == mj.want_rank
    return {"agree": agree, "named": named, "verdict": out.get("verdict")}


def run_batch(batch, prom, within):
    """Watches the batch's alerts until every job is done, then has each job dump and analyses it. A query
    Prometheus does not answer (an overloaded host) is counted on the jobs, not fatal: the next poll still sees
    the alerts' activeAt, and the record says how much of the watch was blind."""
    while True:
        now = time.time()
        try:
            alerts = firing(prom)
        except (OSError, ValueError) as e:
            for mj in batch:
                mj.blind_polls.append(f"{now - mj.start:.0f} s: {e}")
            alerts = None
        for mj in batch:
            if alerts is not None:
                mj.observe(alerts.get(mj.name, []), now)
        if all(mj.done(now, within) for mj in batch):
            break
        time.sleep(0.5)
    for mj in batch:
        pids, able = request_dumps([mj.job], mj.dump_dir)
        mj.analyzer = dict(analyze(mj), ranks_alive=pids, ranks_dumping=able)


def alert_text(a):
    peer = f"->gr{a['peer_global_rank']}" if a["peer_global_rank"] else ""
    return f"{a['class']} gr{a['global_rank']}{peer}" + (" (before the onset)" if a["before_onset"] else "")


def describe(rec):
    named = "; ".join(alert_text(a) for a in rec["alerts"]) or "nothing"
    delay = f"{rec['onset_to_alert_s']:5.1f} s" if rec["onset_to_alert_s"] is not None else "    - "
    ok = "ok " if rec["named_right"] and rec["in_time"] else "BAD"
    an = rec["analyzer"]
    blind = f"; {len(rec['blind_polls'])} alert queries unanswered" if rec.get("blind_polls") else ""
    return (f"{ok} {rec['job']:34s} healthy {rec['healthy_s']} s, onset->alert {delay}, alerts: {named}; "
            f"analyzer {'agrees' if an['agree'] else 'DISAGREES'}: {', '.join(an['named']) or an.get('error') or '-'}"
            f"{blind}")


def cells(records):
    out = {}
    for rec in records:
        out.setdefault((rec["class"], rec["ranks"], rec["size"], rec["straggle_ms"]), []).append(rec)
    return out


def cell_summary(recs, within, analyzer_must_agree):
    delays = [r["onset_to_alert_s"] for r in recs if r["onset_to_alert_s"] is not None]
    right = sum(r["named_right"] for r in recs)
    right_in_time = sum(r["named_right"] and r["in_time"] for r in recs)
    agree = sum(r["analyzer"]["agree"] for r in recs)
    ok = all(r["named_right"] and r["in_time"] for r in recs) and (agree == len(recs) or not analyzer_must_agree)
    return {"runs": len(recs), "named_right": right, "right_in_time": right_in_time, "analyzer_agrees": agree, "ok": ok,
            "classes_named": sorted({a["class"] for r in recs for a in r["alerts"]}),
            "median_s": statistics.median(delays) if delays else None, "max_s": max(delays) if delays else None}


def table(records, within, analyzer_must_agree):
    lines = [f"| class | ranks | size | straggler | named right (k/n) | and within {within:.0f} s | class named "
             "| onset→alert s median / max | analyzer agrees (k/n) |", "|---|---|---|---|---|---|---|---|---|"]
    for (cls, ranks, size, straggle), recs in sorted(cells(records).items(), key=lambda kv: kv[0][1:] + kv[0][:1]):
        s = cell_summary(recs, within, analyzer_must_agree)
        t = f"{s['median_s']:.1f} / {s['max_s']:.1f}" if s["median_s"] is not None else "—"
        lines.append(f"| {cls} | {ranks} | {size_text(size)} | {f'{straggle} ms' if straggle else 'none'} "
                     f"| {s['named_right']}/{s['runs']} | {s['right_in_time']}/{s['runs']} "
                     f"| {', '.join(s['classes_named']) or '—'} | {t} "
                     f"| {s['analyzer_agrees']}/{s['runs']} |")
    return "\n".join(lines)


def rotating_cells(k, day, chosen):
    """K more cells of the whole default matrix (every class × 3, 8, 16 ranks × 8 B, 64 KiB, 4 MiB × no straggler,
    50 ms), one run each, a different slice every day (DAY: days since the epoch, UTC), so that CI covers the whole
    matrix over the weeks at the cost of K jobs a run. Cells already chosen are skipped."""
    full = [(c, n, b, s) for n in (3, 8, 16) for b in (8, 64 << 10, 4 << 20) for s in (0, 50) for c in CLASSES]
    start = (day * k) % len(full)
    picked = [cell for cell in (full[(start + i) % len(full)] for i in range(len(full))) if cell not in chosen][:k]
    print(f"rotating cells of day {day} (slice from {start} of {len(full)}): "
          + ", ".join(f"{c} n{n} {size_text(b)} s{s}" for c, n, b, s in picked), flush=True)
    return [(c, n, b, s, 1) for c, n, b, s in picked]


def plan(args):
    """Every job of the matrix in order (run, ranks, size, straggler, class), cut into batches of --parallel."""
    classes = args.classes.split(",")
    unknown = set(classes) - set(CLASSES)
    if unknown:
        sys.exit(f"unknown class(es) {sorted(unknown)}; want some of {','.join(CLASSES)}")
    straggles = [0 if s in ("none", "0") else int(s) for s in args.straggle.split(",")]
    shapes = itertools.product(range(1, args.runs + 1), [int(r) for r in args.ranks.split(",")],
                               [parse_size(s) for s in args.sizes.split(",")], straggles, classes)
    cells_ = [(c, n, b, s, run) for run, n, b, s, c in shapes]
    if args.rotate:
        cells_ += rotating_cells(args.rotate, args.rotate_day, {(c, n, b, s) for c, n, b, s, _ in cells_})
    k = args.parallel or len(classes)
    return [cells_[i:i + k] for i in range(0, len(cells_), k)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sim", nargs="?")
    ap.add_argument("libdir", nargs="?")
    ap.add_argument("rules", nargs="?", help="directory whose *.yml rule files Prometheus loads")
    ap.add_argument("--classes", default=",".join(CLASSES))
    ap.add_argument("--ranks", default="3,8,16")
    ap.add_argument("--sizes", default="8,64K,4M")
    ap.add_argument("--straggle", default="none,50", help="comma list of ms rank 0 straggles per operation; none")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=0, help="jobs at once (default: every class of one shape)")
    ap.add_argument("--abi", help="the emulated NCCL (the sim's --abi): 2.31's default event mask has no KernelCh")
    ap.add_argument("--within", type=float, default=15.0, help="seconds from onset to alert allowed (15)")
    ap.add_argument("--healthy", type=float, default=15.0, help="seconds of healthy operations before the fault")
    ap.add_argument("--seq", type=int, default=0, help="fault sequence number (default: from --healthy)")
    ap.add_argument("--rotate", type=int, default=0, metavar="K",
                    help="add K cells of the whole matrix, a different slice each day (CI's rotating subset)")
    ap.add_argument("--rotate-day", type=int, default=int(time.time() // 86400),
                    help="the day whose slice --rotate takes (default: today, days since the epoch, UTC)")
    ap.add_argument("--analyzer-must-agree", action="store_true", help="a cell fails where the analyzer disagrees")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--json", help="write the records and cells to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, dumps)")
    ap.add_argument("--table-from", nargs="+", metavar="JSON",
                    help="no jobs: the table and verdict of the records in these --json files (runs done apart)")
    args = ap.parse_args()
    args.sim_args = ["--abi", args.abi] if args.abi else []
    if args.abi == "2.31" and "kernel" in args.classes.split(","):
        ap.error("--abi 2.31 --classes kernel: without KernelCh a stuck kernel looks like a rank that never issued "
                 "the operation (not_joined; docs/stall-detection.md); leave kernel out")
    if args.table_from:
        records = [r for path in args.table_from for r in json.load(open(path))["records"]]
        return report(records, args)
    if not (args.sim and args.libdir and args.rules):
        ap.error("sim, libdir and rules are needed to run jobs")
    if not shutil.which("prometheus"):
        print("SKIP: the prometheus server is not installed (scripts/install-deps.sh installs it)")
        return SKIP
    if not os.access(args.sim, os.X_OK):
        sys.exit(f"{args.sim}: not an executable ncclscope-sim")
    batches = plan(args)
    work = tempfile.mkdtemp(prefix="ncclscope-hang-matrix-")
    sd = os.path.join(work, "sd")
    os.makedirs(sd)
    env0 = dict(sim_env(args.libdir), NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SD_DIR=sd, NCCLSCOPE_OUTPUT_GRACE_S="120")
    prom = Prometheus(work, sorted(glob.glob(os.path.join(os.path.abspath(args.rules), "*.yml"))))
    records, t0 = [], time.time()
    try:
        for batch in batches:
            ms = calibrate(batch, args.sim, sim_env(args.libdir) | {"NCCLSCOPE_TRANSPORT": "tcp"}, args.sim_args)
            jobs = [MatrixJob(*cell, args, work, env0, m) for cell, m in zip(batch, ms)]
            try:
                run_batch(jobs, prom, args.within)
            finally:
                for mj in jobs:
                    mj.job.stop()
                    forget_targets(sd, mj.name)
            for mj in jobs:
                records.append(mj.record(args.within))
                print(describe(records[-1]), flush=True)
            if args.json:  # after every batch: a run cut short keeps what it measured
                write_json(args.json, records, args.within, args.analyzer_must_agree)
    finally:
        prom.stop()
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(records)} jobs in {len(batches)} batches, {time.time() - t0:.0f} s")
    return report(records, args)


def summarize(records, within, analyzer_must_agree):
    return {f"{c}|{n}|{b}|{s}": cell_summary(recs, within, analyzer_must_agree)
            for (c, n, b, s), recs in cells(records).items()}


def write_json(path, records, within, analyzer_must_agree):
    with open(path, "w") as f:
        json.dump({"within_s": within, "records": records,
                   "cells": summarize(records, within, analyzer_must_agree)}, f, indent=1)


def report(records, args):
    """The table (--table), and a FAIL line per cell where a job was not named right, alone and in time."""
    summary = summarize(records, args.within, args.analyzer_must_agree)
    failed = [k for k, v in summary.items() if not v["ok"]]
    if args.table:
        print("\n" + table(records, args.within, args.analyzer_must_agree) + "\n")
    for k in failed:
        print(f"FAIL: cell {k} (class|ranks|size|straggle ms): {summary[k]}")
    if not failed:
        print(f"PASS: every job named right, alone, within {args.within:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
