#!/usr/bin/env python3
"""ncclscope wrapping another net plugin (NCCLSCOPE_NET_CHAIN), on the emulated NCCL job, with real inner plugins
built from this repository (tests/net/inner: ncclscope's TCP transport alone, exporting only ncclNetPlugin_v8, _v10
or _v12) and failing ones. Checks:
  - translation both ways: every inner version under NCCL versions older and newer than its own; the job's results
    are right and the bytes counted per NIC (and per communicator, v11+) equal the bytes the job's ring moved;
  - an inner whose init fails, one with no table new enough, a missing one: ncclscope's init fails with one line
    naming the inner and its error, and the job ends with that error instead of hanging;
  - a peer killed mid-transfer: the inner's test/irecv error reaches the job's call, counted in
    ncclscope_nic_errors_total and in the dump's net_errors, nothing hangs, and the analyzer names the dead rank.
Usage: net_chain_test.py SIM PLUGIN_DIR [INNER_PREFIX NIC]
INNER_PREFIX/NIC: inner-tcp/lo by default; the soft-RoCE guest tier runs inner-ib/rxe0 (ncclscope's verbs transport
alone as the inner) on a shorter matrix, without the failing inners (they do not depend on the transport)."""
import glob
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

SIM, PLUGIN_DIR = sys.argv[1:3]
INNER, NIC = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else ("inner-tcp", "lo")
GUEST = INNER != "inner-tcp"
FAILED = []
MIB = 1 << 20
# 2 ranks, 1 MiB AllReduce and SendRecv, 3 times each (1 warm-up): a ring rank sends and receives 1 MiB per op.
JOB = ["--ranks", "2", "--ops", "allreduce,sendrecv", "--sizes", "1M:1M", "--iters", "2", "--warmup", "1"]
JOB_BYTES = 6 * MIB


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(tmp, name, chain, args, timeout=120):
    out = os.path.join(tmp, name)
    os.makedirs(out)
    env = dict(os.environ, LD_LIBRARY_PATH=PLUGIN_DIR, NCCLSCOPE_SOCKET_IFNAME="=lo", NCCLSCOPE_PROM_PORT="-1",
               NCCLSCOPE_PROM_TEXTFILE_DIR=out, NCCLSCOPE_DUMP_DIR=out, NCCLSCOPE_METRICS_LEVEL="full",
               NCCL_DEBUG="INFO")
    env.pop("NCCLSCOPE_TRANSPORT", None)  # `auto` must take the chain because NCCLSCOPE_NET_CHAIN is set
    env["NCCLSCOPE_NET_CHAIN"] = chain
    p = subprocess.run([SIM, "--net-plugin", "ncclscope"] + args, env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p, out


def counters(out):
    """{(family, nic, rank): value} from every rank's final textfile, comm rows summed per rank."""
    got = {}
    line = re.compile(r'^ncclscope_(nic|comm_net)_(sent_bytes_total|received_bytes_total|errors_total)'
                      r'\{nic="([^"]+)"(?:,comm="[^"]+")?[^}]*global_rank="(\d+)"[^}]*\} (\S+)$')
    for f in glob.glob(os.path.join(out, "*.prom")):
        for m in filter(None, map(line.match, open(f))):
            key = (m[1] + "_" + m[2], m[3], int(m[4]))
            got[key] = got.get(key, 0) + float(m[5])
    return got


def nic_transports(out):
    return {m[1]: m[2] for f in glob.glob(os.path.join(out, "*.prom"))
            for m in re.finditer(r'ncclscope_nic_info\{nic="([^"]+)",transport="([^"]+)"', open(f).read())}


with tempfile.TemporaryDirectory() as tmp:
    # Up (an old inner under a newer NCCL) and down (a newer inner under an older NCCL), for each inner.
    matrix = [(8, 12), (10, 11), (12, 8)] if GUEST else [(8, 8), (8, 11), (8, 12), (10, 9), (10, 12), (12, 8),
                                                         (12, 10), (12, 12)]
    for inner, served in matrix:
        name = f"inner-v{inner}-served-v{served}"
        p, out = run(tmp, name, f"{INNER}-v{inner}", JOB + ["--json", "--net-max-version", str(served)])
        check(p.returncode == 0, f"{name}: the job exits 0" + ("" if p.returncode == 0 else
                                                              f" (got {p.returncode}: {p.stderr[-600:]})"))
        if p.returncode != 0:
            continue
        j = json.loads(p.stdout)
        check(j["wrong"] == 0 and j["net"] == f"ncclscope (ncclNetPlugin_v{served})",
              f"{name}: NCCL spoke v{served} to ncclscope, and every byte arrived right ({j['net']}, {j['wrong']} wrong)")
        check(f"wrapping net plugin" in p.stderr and f"(ncclNetPlugin_v{inner}) from libnccl-net-{INNER}-v{inner}.so"
              in p.stderr, f"{name}: the log names the wrapped plugin and its table")
        check(f"transport chain (auto: NCCLSCOPE_NET_CHAIN={INNER}-v" in p.stderr,
              f"{name}: auto took the chain because NCCLSCOPE_NET_CHAIN is set")
        c = counters(out)
        for rank in (0, 1):
            for fam in ("sent_bytes_total", "received_bytes_total"):
                check(c.get(("nic_" + fam, NIC, rank)) == JOB_BYTES,
                      f"{name}: rank {rank} NIC {NIC} {fam} == {JOB_BYTES} (got {c.get(('nic_' + fam, NIC, rank))})")
                if served >= 11:  # per-communicator rows need NCCL's comm id (v11+)
                    check(c.get(("comm_net_" + fam, NIC, rank)) == JOB_BYTES,
                          f"{name}: rank {rank} communicator rows {fam} == {JOB_BYTES}")
            check(c.get(("nic_errors_total", NIC, rank)) == 0, f"{name}: rank {rank}: no network error")
        check(nic_transports(out).get(NIC) == "chain:ncclscope", f"{name}: ncclscope_nic_info names the chain")

    # Inners that cannot serve: init fails in ncclscope with one line naming the inner and its error.
    for name, chain, expect in [] if GUEST else [
        ("failing-init", "inner-failinit", [r"inner-failinit: no fabric provider found",
                                            r"init failed in the wrapped plugin .*libnccl-net-inner-failinit\.so.*"
                                            r"ncclSystemError \(2\)"]),
        ("no-table", "inner-notable", [r"libnccl-net-inner-notable\.so exports no ncclNetPlugin_v8 to _v12 table "
                                       r"\(only v7; ncclscope wraps v8 and later\)"]),
        ("missing", "inner-nonexistent", [r"NCCLSCOPE_NET_CHAIN=inner-nonexistent: cannot load inner-nonexistent "
                                          r"\(libnccl-net-inner-nonexistent\.so: cannot open"]),
        ("itself", "ncclscope", [r"is ncclscope itself"]),
    ]:
        p, out = run(tmp, name, chain, JOB + ["--timeout", "60"])
        check(p.returncode != 0, f"{name}: the job fails (rc {p.returncode}) rather than running without a transport")
        for e in expect:
            check(re.search(e, p.stderr) is not None, f"{name}: the log says /{e}/")
        check("TIMEOUT" not in p.stderr, f"{name}: nothing hangs")

    # A peer killed mid-transfer: the inner reports the error, the chain counts it and hands it to the job.
    p, out = run(tmp, "killed-peer", f"{INNER}-v12",
                 ["--ranks", "2", "--ops", "allreduce", "--sizes", "64K:64K", "--iters", "10", "--kill", "1@3",
                  "--timeout", "60"])
    check(p.returncode == 3, f"killed-peer: the sim reports the kill (rc {p.returncode})")
    check(re.search(r"ncclscope: chain: (irecv|isend|test of a (send|receive)) on NIC \S+ failed in the wrapped "
                    r"plugin .*ncclRemoteError \(6\)", p.stderr) is not None,
          "killed-peer: ncclscope's line names the call, the NIC, the inner and its result")
    check(GUEST or re.search(r"peer 127\.0\.0\.1:\d+ \(global rank 1", p.stderr) is not None,
          "killed-peer: the inner's own line (through NCCL's logger) names the peer")
    check(re.search(r"rank 0: AllReduce failed", p.stderr) is not None, "killed-peer: the job's call fails")
    check("TIMEOUT" not in p.stderr, "killed-peer: nothing hangs")
    check(counters(out).get(("nic_errors_total", NIC, 0), 0) >= 1, "killed-peer: ncclscope_nic_errors_total counts it")
    errs = []
    for f in glob.glob(os.path.join(out, "ncclscope-comm-*rank0*.json.gz")):
        with gzip.open(f, "rt") as z:
            errs += json.loads(z.readline()).get("net_errors", [])
    check(any(e.get("nic") == NIC and "wrapped plugin" in e.get("text", "") for e in errs),
          f"killed-peer: rank 0's dump lists the failure in net_errors ({errs[:1]})")
    analyze = os.path.join(os.path.dirname(SIM), "ncclscope-analyze")
    if os.path.exists(analyze):  # the analyzer reads wrapped comms' dumps as it reads ours
        a = subprocess.run([analyze, out], capture_output=True, text=True, timeout=120)
        check(re.search(r"PROBLEM: dead at rank 1 ", a.stdout) is not None,
              f"killed-peer: ncclscope-analyze names rank 1 dead ({a.stdout.splitlines()[:1]})")

print(f"{len(FAILED)} failure(s)")
sys.exit(1 if FAILED else 0)
