#!/usr/bin/env python3
"""libnccl-net-inner-tcp-vV.so as the emulated job's net plugin, named as NCCL_NET_PLUGIN names it
(--net-plugin inner-tcp-vV: NCCL tries the name, then libnccl-net-inner-tcp-vV.so), or by its path. Checks:
  - alone (no profiler): a 2-rank, 2-communicator job of every operation exits 0 with every byte right; the
    loader reports the one table it found (ncclNetPlugin_vV) and the file; the plugin's init says transport tcp
    although NCCLSCOPE_TRANSPORT=ib asks otherwise (the transport is fixed); no plugin service ran (no metrics
    textfile, no dumps, although their variables are set);
  - by path, beside ncclscope's profiler (the full ncclscope library in the same process as its own objects in
    the inner): the job is as right, and ncclscope writes its dumps and textfiles as usual.
Usage: tcp_inner_test.py SIM LIB_DIR VERSION"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from checks import check, summary  # noqa: E402

SIM, LIB_DIR, VERSION = sys.argv[1], sys.argv[2], int(sys.argv[3])
NAME = f"inner-tcp-v{VERSION}"
JOB = ["--json", "--ranks", "2", "--comms", "2", "--ops", "allreduce,allgather,reducescatter,broadcast,sendrecv",
       "--sizes", "8:2M", "--factor", "32", "--iters", "2", "--warmup", "0", "--timeout", "60"]


def run(out, net, profiler):
    dump, prom = os.path.join(out, "dump"), os.path.join(out, "prom")
    os.makedirs(prom)
    env = dict(os.environ, LD_LIBRARY_PATH=LIB_DIR, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET",
               NCCLSCOPE_TRANSPORT="ib", NCCLSCOPE_SOCKET_IFNAME="=lo", NCCLSCOPE_PROM_PORT="0",
               NCCLSCOPE_PROM_BIND="127.0.0.1", NCCLSCOPE_DUMP_DIR=dump, NCCLSCOPE_PROM_TEXTFILE_DIR=prom)
    for k in ("NCCL_NET_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCLSCOPE_PROFILER_CHAIN", "NCCLSCOPE_NET_CHAIN"):
        env.pop(k, None)
    p = subprocess.run([SIM, "--net-plugin", net, "--profiler-plugin", profiler] + JOB, cwd=out, env=env,
                       capture_output=True, text=True, timeout=240)
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {}
    return p, res, sorted(glob.glob(os.path.join(dump, "**", "ncclscope-comm-*"), recursive=True)), [f for f in os.listdir(prom) if f.endswith(".prom")]


def job_is_right(what, p, res, opened):
    check(p.returncode == 0, f"{what}: the job exits 0 (got {p.returncode}: {p.stderr[-600:]})")
    check(res.get("ok") is True and res.get("wrong") == 0 and len(res.get("results", [])) > 0,
          f"{what}: every byte of every operation checked and right (wrong={res.get('wrong')})")
    check(res.get("net") == f"ncclscope (ncclNetPlugin_v{VERSION})", f"{what}: net table v{VERSION} ({res.get('net')})")
    loaded = f"NET/Plugin: Loaded net plugin ncclscope (ncclNetPlugin_v{VERSION}) from {opened}"
    check(loaded in p.stderr, f"{what}: the loader reports '{loaded}'")
    init = f"ncclscope: net plugin (ncclNet v{VERSION}): transport TCP ("
    check(init in p.stderr, f"{what}: init chose TCP although NCCLSCOPE_TRANSPORT=ib ('{init}')")


with tempfile.TemporaryDirectory() as tmp:
    alone = os.path.join(tmp, "alone")
    os.makedirs(alone)
    p, res, dumps, textfiles = run(alone, NAME, "none")
    job_is_right("alone", p, res, f"libnccl-net-{NAME}.so")
    check(res.get("profiler") == "none", f"alone: no profiler loaded ({res.get('profiler')})")
    check(not textfiles and not dumps, f"alone: no service of the inner ran (textfiles {textfiles}, dumps {dumps})")

    beside = os.path.join(tmp, "beside")
    os.makedirs(beside)
    path = os.path.join(LIB_DIR, f"libnccl-net-{NAME}.so")
    p, res, dumps, textfiles = run(beside, path, "ncclscope")
    job_is_right("by path, beside ncclscope's profiler", p, res, path)
    check(str(res.get("profiler", "")).startswith("ncclscope (ncclProfiler_v"),
          f"beside: ncclscope is the profiler ({res.get('profiler')})")
    check(len(dumps) == 4, f"beside: ncclscope wrote a dump per rank and communicator (4, got {len(dumps)})")
    check(len(textfiles) == 2, f"beside: ncclscope wrote a metrics textfile per rank (2, got {textfiles})")

sys.exit(summary())
