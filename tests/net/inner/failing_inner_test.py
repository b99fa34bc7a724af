#!/usr/bin/env python3
"""The failing inners as the emulated job's net plugin. Each must stop the job at set-up (exit 2) and say why:
  - inner-failinit: its init fails; its WARN line reaches NCCL's log through the logger it was given, and the
    loader found its ncclNetPlugin_v12;
  - inner-notable: the loader finds only ncclNetPlugin_v7, a table too old to drive, and names it.
Usage: failing_inner_test.py SIM LIB_DIR"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from checks import check, summary  # noqa: E402

SIM, LIB_DIR = sys.argv[1], sys.argv[2]


def run(name, tmp):
    env = dict(os.environ, LD_LIBRARY_PATH=LIB_DIR, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET",
               NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_DUMP_DIR=os.path.join(tmp, name))
    return subprocess.run([SIM, "--ranks", "2", "--net-plugin", name, "--profiler-plugin", "none", "--sizes", "8:8",
                           "--iters", "1", "--timeout", "60"], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=100)


with tempfile.TemporaryDirectory() as tmp:
    p = run("inner-failinit", tmp)
    check(p.returncode == 2, f"inner-failinit: the job stops at set-up, exit 2 (got {p.returncode}: {p.stderr[-600:]})")
    check("Loaded net plugin inner-failinit (ncclNetPlugin_v12) from libnccl-net-inner-failinit.so" in p.stderr,
          "inner-failinit: the loader found its v12 table")
    warns = [l for l in p.stderr.splitlines() if "NCCL WARN inner-failinit: no fabric provider found" in l]
    check(len(warns) >= 1, f"inner-failinit: its init's WARN line is in the log ({len(warns)} lines)")

    p = run("inner-notable", tmp)
    check(p.returncode == 2, f"inner-notable: the job stops at set-up, exit 2 (got {p.returncode}: {p.stderr[-600:]})")
    check("libnccl-net-inner-notable.so: found only ncclNetPlugin_v7" in p.stderr,
          "inner-notable: the error names the only table it has, ncclNetPlugin_v7")

sys.exit(summary())
