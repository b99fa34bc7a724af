#!/usr/bin/env python3
"""ncclscope-sim's --layout tp=K and --mismatch RANK@SEQ with the built ncclscope plugins. Checks:
  - a healthy --layout tp=2 job on 4 ranks exits 0 with every byte right, both communicators (TP and DP) with
    2 ranks, a profiler dump per rank and communicator (4 ranks x 2 = 8, four distinct comm hashes, ranks 0 and 1
    of each), and every rank process keeps its world rank as its identity (global_rank in the metrics textfile)
    whatever its rank inside a group;
  - --mismatch 2@3 and --layout tp=2 --hang 1@3 hang until --timeout, exit 0 under --expect-hang (4 without),
    no rank crashes or ends before the timeout, stderr names the fault; in the stall dumps only rank 2's
    communicator holds an AllGather (the mismatched op).
Dumps are matched as ncclscope-comm-* (plain JSON or gzip; stall dumps in per-host folders) and read lightly.
Usage: sim_faults_test.py SIM_BINARY PLUGIN_DIR"""
import glob
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

SIM, PLUGIN_DIR = sys.argv[1], sys.argv[2]
FAILED = []
CRASH_MARKS = ["signal 11", "signal 6", "signal 7", "Segmentation", "core dumped", "AddressSanitizer",
               "ThreadSanitizer", "LeakSanitizer", "runtime error:", "terminate called"]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(args, dump, extra_env=None):
    os.makedirs(os.path.join(dump, "prom"), exist_ok=True)
    env = dict(os.environ, LD_LIBRARY_PATH=PLUGIN_DIR, NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="=lo",
               NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_DUMP_DIR=dump,
               NCCLSCOPE_PROM_TEXTFILE_DIR=os.path.join(dump, "prom"))
    env.update(extra_env or {})
    return subprocess.run([SIM] + args, env=env, capture_output=True, text=True, timeout=120)


def dumps(folder):
    """{path: (comm hash, rank from the name, text)} of every ncclscope-comm-* dump (plain or gzip)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "**", "ncclscope-comm-*"), recursive=True)):  # stall: per host
        m = re.search(r"ncclscope-comm-([0-9a-fA-F]+)-rank(\d+)", os.path.basename(path))
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            text = f.read()
        out[path] = (m.group(1) if m else None, int(m.group(2)) if m else None, text)
    return out


def first_json(text):
    """The first JSON document of a dump (the whole dump, or the summary member of a gzip one), or None."""
    try:
        return json.JSONDecoder().raw_decode(text.lstrip())[0]
    except ValueError:
        return None


def no_crash(p, what):
    hit = [m for m in CRASH_MARKS if m in p.stderr]
    check(not hit, f"{what}: no crash or sanitizer report in stderr ({hit})")
    summary = re.findall(r"rank (\d+): (killed by signal 15 \(Terminated\)|.+)", p.stderr.split("job summary:")[-1])
    alive = sorted(int(r) for r, why in summary if why.startswith("killed by signal 15"))
    check(alive == [0, 1, 2, 3], f"{what}: every rank was alive until the timeout ended it ({summary})")


with tempfile.TemporaryDirectory() as tmp:
    # Healthy: TP groups {0,1} {2,3}, DP groups {0,2} {1,3}.
    d = os.path.join(tmp, "layout")
    p = run(["--layout", "tp=2", "--ranks", "4", "--ops", "allreduce", "--iters", "3", "--json"], d)
    check(p.returncode == 0, f"--layout tp=2 --ranks 4 exits 0 (got {p.returncode}: {p.stderr[-400:]})")
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {}
    check(res.get("ok") is True and res.get("wrong") == 0, f"every byte checked and right ({res.get('wrong')})")
    rows = res.get("results", [])
    check(sorted({r["comm"] for r in rows}) == [0, 1] and all(r["nranks"] == 2 and r["wrong"] == 0 for r in rows),
          f"rows of both communicators, 2 ranks each, none wrong ({len(rows)} rows)")
    check(res.get("layout", {}).get("names") == ["sim-tp-0", "sim-dp-0"], f"rank 0's groups ({res.get('layout')})")
    hashes = res.get("comm_hashes", [])
    check(len(hashes) == 2 and hashes[0] != hashes[1], f"rank 0's TP and DP hashes differ ({hashes})")
    ds = dumps(d)
    check(len(ds) == 8, f"8 dumps: 4 ranks x 2 communicators ({len(ds)})")
    named = [(h, r) for h, r, _ in ds.values() if h is not None]
    if len(named) == len(ds):
        by_hash = {}
        for h, r in named:
            by_hash.setdefault(h, []).append(r)
        check(len(by_hash) == 4 and all(sorted(v) == [0, 1] for v in by_hash.values()),
              f"four distinct comm hashes, ranks 0 and 1 in each ({by_hash})")
    for path, (_, rank, text) in ds.items():
        j = first_json(text)
        if j is not None and "nranks" in j:
            check(j["nranks"] == 2 and j.get("rank") == rank, f"{os.path.basename(path)}: rank {j.get('rank')} of "
                  f"nranks {j['nranks']}")
    # The identity is the world rank (RANK), the metrics' comm rank the rank in the group.
    infos = []
    for prom in glob.glob(os.path.join(d, "prom", "*.prom")):
        infos += re.findall(r'ncclscope_comm_info\{([^}]*)\}', open(prom).read())
    seen = set()
    for labels in infos:
        lab = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        kind, index = lab["comm_name"].split("-")[1:]
        g, i = (int(index), int(lab["rank"])) if kind == "tp" else (int(lab["rank"]), int(index))
        want = g * 2 + i
        check(lab.get("global_rank") == str(want),
              f"{lab['comm_name']} rank {lab['rank']}: global_rank {lab.get('global_rank')} == world rank {want}")
        seen.add((lab["comm_name"], lab["rank"]))
    check(len(seen) == 8, f"comm_info of 8 (group, rank) pairs in the textfiles ({sorted(seen)})")

    # --mismatch: rank 2 issues AllGather seq 0 where ranks 0, 1, 3 issue AllReduce seq 3, and everyone waits.
    d = os.path.join(tmp, "mismatch")
    p = run(["--ranks", "4", "--ops", "allreduce", "--mismatch", "2@3", "--timeout", "5", "--expect-hang"], d,
            {"NCCLSCOPE_STALL_TIMEOUT_S": "1"})
    check(p.returncode == 0, f"--mismatch 2@3 --expect-hang exits 0 (got {p.returncode}: {p.stderr[-400:]})")
    check("rank 2: --mismatch: issues AllGather seq 0" in p.stderr and "the others issue AllReduce seq 3" in p.stderr,
          "stderr names the mismatch")
    check("TIMEOUT (job hung)" in p.stderr and "hang observed as expected" in p.stderr, "the job hung until --timeout")
    no_crash(p, "--mismatch 2@3")
    ds = dumps(d)
    check(len(ds) == 4, f"a stall dump per rank ({len(ds)})")
    for path, (_, rank, text) in ds.items():
        check(("AllGather" in text) == (rank == 2), f"{os.path.basename(path)}: AllGather only in rank 2's dump")
        j = first_json(text)
        inflight = (j or {}).get("flight_recorder", {}).get("in_flight")
        if inflight is not None:  # plain v1 dump: the exact operation each rank waits in
            want = [("AllGather", 0)] if rank == 2 else [("AllReduce", 3)]
            got = [(r.get("func"), r.get("seq")) for r in inflight]
            check(got == want, f"rank {rank} waits in {got} (want {want})")
    p = run(["--ranks", "4", "--ops", "allreduce", "--mismatch", "2@3", "--timeout", "3"], os.path.join(tmp, "m4"))
    check(p.returncode == 4, f"--mismatch without --expect-hang exits 4 (got {p.returncode})")

    # --layout tp=2 --hang 1@3: rank 1 stops; 0 waits in TP; 2 and 3 wait in DP for 0 and 1.
    d = os.path.join(tmp, "layout-hang")
    p = run(["--layout", "tp=2", "--ranks", "4", "--ops", "allreduce", "--hang", "1@3", "--timeout", "5",
             "--expect-hang"], d, {"NCCLSCOPE_STALL_TIMEOUT_S": "1"})
    check(p.returncode == 0, f"--layout tp=2 --hang 1@3 --expect-hang exits 0 (got {p.returncode}: {p.stderr[-400:]})")
    check("rank 1: --hang: stops issuing at seq 3" in p.stderr, "stderr names the hang")
    no_crash(p, "--layout tp=2 --hang 1@3")
    # A stalled process also dumps its other communicators (stalled false there), so the chain can be followed.
    names = sorted(n for _, _, text in dumps(d).values() if re.search(r'"stalled": ?true', text)
                   for n in re.findall(r'"comm_name": ?"(sim-[a-z]+-\d)"', text)[:1])
    check(names == ["sim-dp-0", "sim-dp-1", "sim-tp-0"], f"stalls in TP group 0 and both DP groups ({names})")

if FAILED:
    print(f"{len(FAILED)} check(s) failed")
    sys.exit(1)
print("all checks passed")
