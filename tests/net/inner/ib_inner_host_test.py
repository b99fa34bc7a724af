#!/usr/bin/env python3
"""The IB inners carry data only in the soft-RoCE guest tier. On a host without a verbs device each must still
be what it claims: loaded as the emulated job's net plugin, its init takes the ib transport even though
NCCLSCOPE_TRANSPORT=tcp asks for TCP, finds no device and fails the job at set-up (exit 2) saying so.
Exits 77 (skip) where a verbs device exists, since there the init may succeed.
Usage: ib_inner_host_test.py SIM LIB_DIR"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from checks import check, summary  # noqa: E402

SIM, LIB_DIR = sys.argv[1], sys.argv[2]

if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
    print("SKIP: this host has a verbs device (/sys/class/infiniband); the IB inners are exercised in the guest tier")
    sys.exit(77)


with tempfile.TemporaryDirectory() as tmp:
    for v in (8, 10, 12):
        name = f"inner-ib-v{v}"
        env = dict(os.environ, LD_LIBRARY_PATH=LIB_DIR, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET",
                   NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="=lo", NCCLSCOPE_PROM_PORT="-1",
                   NCCLSCOPE_DUMP_DIR=os.path.join(tmp, name))
        p = subprocess.run([SIM, "--ranks", "2", "--net-plugin", name, "--profiler-plugin", "none", "--sizes", "8:8",
                            "--iters", "1", "--timeout", "60"], cwd=tmp, env=env, capture_output=True, text=True,
                           timeout=100)
        check(p.returncode == 2, f"{name}: the job stops at set-up, exit 2 (got {p.returncode}: {p.stderr[-600:]})")
        check(f"Loaded net plugin ncclscope (ncclNetPlugin_v{v}) from libnccl-net-{name}.so" in p.stderr,
              f"{name}: the loader found its v{v} table")
        check("no RDMA device is usable" in p.stderr and "transport TCP (" not in p.stderr,
              f"{name}: init tried ib, not the TCP NCCLSCOPE_TRANSPORT asks for ({p.stderr[-400:]})")

sys.exit(summary())
