#!/usr/bin/env python3
"""`auto` on a host whose cluster transport is itself a net plugin, installed where NCCL finds one by itself
(libnccl-net.so on the loader's path): NCCL_NET_PLUGIN=ncclscope stops NCCL from loading it, so ncclscope must
wrap it rather than carry the job's data itself. The plugin is a stand-in (tests/net/inner/fake_cluster.c,
build/fake-cluster/libnccl-net.so) that carries the data with ncclscope's TCP inner and writes what it sent to a
marker file per process. Checks, on the emulated job with NCCLSCOPE_TRANSPORT and NCCLSCOPE_NET_CHAIN unset:
  - with it installed: the job is right; the stand-in carried every byte (its marker) and ncclscope counted the
    same bytes on the stand-in's NIC (textfile), the NIC's transport being chain:FakeCluster; one INFO line names
    the file, and the init line gives the reason;
  - an explicit NCCLSCOPE_TRANSPORT=tcp or NCCLSCOPE_NET_CHAIN keeps priority (the stand-in carries nothing);
  - the same host without it: `auto` takes TCP (on a host without RDMA devices; declines with them), the init
    line saying why; ncclscope's own file under the name (a symlink) is the same: never wrapped, one INFO line;
  - one NCCL would run but ncclscope cannot wrap (only ncclNetPlugin_v7): init declines with one line that
    names it and what to set, and the job does not run over ncclscope's TCP;
  - one whose own init fails: ncclscope's init fails with its error (NCCL would move on, as without ncclscope).
Usage: net_auto_wrap_test.py SIM LIB_DIR FAKE_CLUSTER_DIR"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SIM, LIB_DIR, CLUSTER_DIR = map(os.path.abspath, sys.argv[1:4])
PLUGIN = os.path.join(CLUSTER_DIR, "libnccl-net.so")
MIB = 1 << 20
JOB = ["--json", "--ranks", "2", "--ops", "allreduce,sendrecv", "--sizes", "1M:1M", "--iters", "2", "--warmup", "1",
       "--timeout", "60"]
JOB_BYTES = 6 * MIB  # a ring rank sends 1 MiB per operation, 3 times each of 2 operations
RDMA_HOST = bool(glob.glob("/sys/class/infiniband/*"))
FAILED = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(tmp, name, lib_path, **extra):
    out = os.path.join(tmp, name)
    os.makedirs(out)
    env = dict(os.environ, LD_LIBRARY_PATH=lib_path, NCCLSCOPE_SOCKET_IFNAME="=lo", NCCLSCOPE_PROM_PORT="-1",
               NCCLSCOPE_PROM_TEXTFILE_DIR=out, NCCLSCOPE_DUMP_DIR=out, NCCL_DEBUG="INFO",
               NCCL_DEBUG_SUBSYS="INIT,NET", FAKE_CLUSTER_DIR=out)
    for k in ("NCCLSCOPE_TRANSPORT", "NCCLSCOPE_NET_CHAIN", "NCCL_NET_PLUGIN", "NCCL_PROFILER_PLUGIN",
              "NCCL_IB_DISABLE"):
        env.pop(k, None)
    env.update(extra)
    p = subprocess.run([SIM, "--net-plugin", "ncclscope"] + JOB, cwd=out, env=env, capture_output=True, text=True,
                       timeout=180)
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {}
    return p, res, out


def markers(out):
    """[{key: value}] of each process the stand-in ran in."""
    got = []
    for f in sorted(glob.glob(os.path.join(out, "fake-cluster-*.txt"))):
        got.append({k: int(v) for k, v in (line.split() for line in open(f) if line.strip())})
    return got


def nic_rows(out):
    """{(family, nic, rank): value} and {nic: transport} from every rank's final textfile."""
    rows, transports = {}, {}
    line = re.compile(r'^ncclscope_nic_(sent_bytes_total|received_bytes_total)\{nic="([^"]+)"[^}]*'
                      r'global_rank="(\d+)"[^}]*\} (\S+)$')
    for f in glob.glob(os.path.join(out, "*.prom")):
        text = open(f).read()
        for m in filter(None, map(line.match, text.splitlines())):
            rows[(m[1], m[2], int(m[3]))] = float(m[4])
        for m in re.finditer(r'ncclscope_nic_info\{nic="([^"]+)",transport="([^"]+)"', text):
            transports[m[1]] = m[2]
    return rows, transports


def job_is_right(name, p, res):
    check(p.returncode == 0 and res.get("wrong") == 0 and res.get("ok") is True,
          f"{name}: the job exits 0 with every byte right (rc {p.returncode}, wrong {res.get('wrong')})"
          + ("" if p.returncode == 0 else f": {p.stderr[-800:]}"))


def took_tcp_by_itself(name, p):
    """`auto` with nothing to wrap: TCP on this host (declines on an RDMA host), the init line saying why."""
    why = "auto: no net plugin to wrap (NCCLSCOPE_NET_CHAIN unset, no libnccl-net.so to wrap)"
    if RDMA_HOST:
        check(re.search(r"RDMA device\(s\).*declining", p.stderr) is not None,
              f"{name}: on this RDMA host auto declines, saying so")
    else:
        check(re.search(r"ncclscope: net plugin \(ncclNet v\d+\): transport TCP \(" + re.escape(why), p.stderr)
              is not None, f"{name}: auto took TCP, the init line saying '{why}'")
    check("auto: wrapping" not in p.stderr, f"{name}: nothing is wrapped")


check(os.path.isfile(PLUGIN), f"the stand-in is built as {PLUGIN}")
with tempfile.TemporaryDirectory() as tmp:
    # 1. The cluster's plugin installed: auto wraps it, it carries the data, ncclscope counts it.
    p, res, out = run(tmp, "installed", CLUSTER_DIR + ":" + LIB_DIR)
    job_is_right("installed", p, res)
    line = (f"auto: wrapping net plugin 'FakeCluster' (ncclNetPlugin_v12) from {PLUGIN}, the plugin NCCL loads by "
            "itself when NCCL_NET_PLUGIN is unset")
    check(p.stderr.count(line) == 2, f"installed: one line per process names the file ('{line}')")
    check(re.search(r"ncclscope: net plugin \(ncclNet v\d+\): transport chain \(auto: wrapping " + re.escape(PLUGIN) +
                    r", the net plugin NCCL loads by itself when NCCL_NET_PLUGIN is unset\)", p.stderr) is not None,
          "installed: the init line says why the chain was taken")
    m = markers(out)
    check(len(m) == 2 and all(x.get("sent_bytes") == JOB_BYTES and x.get("inits", 0) >= 1 for x in m),
          f"installed: the stand-in carried {JOB_BYTES} bytes in each rank's process (its markers: {m})")
    rows, transports = nic_rows(out)
    for rank in (0, 1):
        for fam in ("sent_bytes_total", "received_bytes_total"):
            got = rows.get((fam, "lo", rank))
            check(got == JOB_BYTES, f"installed: ncclscope counted rank {rank}'s {fam} on the stand-in's NIC lo "
                                    f"== {JOB_BYTES} (got {got})")
    check(transports.get("lo") == "chain:FakeCluster", f"installed: ncclscope_nic_info names it ({transports})")

    # 2. An explicit choice keeps priority over the plugin found.
    p, res, out = run(tmp, "named-tcp", CLUSTER_DIR + ":" + LIB_DIR, NCCLSCOPE_TRANSPORT="tcp")
    job_is_right("named-tcp", p, res)
    check("transport TCP (NCCLSCOPE_TRANSPORT=tcp" in p.stderr, "named-tcp: NCCLSCOPE_TRANSPORT=tcp takes TCP")
    check(not markers(out) and "auto: wrapping" not in p.stderr, "named-tcp: the stand-in carries nothing")
    p, res, out = run(tmp, "named-chain", CLUSTER_DIR + ":" + LIB_DIR, NCCLSCOPE_NET_CHAIN="inner-tcp-v12")
    job_is_right("named-chain", p, res)
    check("transport chain (auto: NCCLSCOPE_NET_CHAIN=inner-tcp-v12)" in p.stderr,
          "named-chain: NCCLSCOPE_NET_CHAIN's plugin is wrapped")
    check(not markers(out) and "auto: wrapping" not in p.stderr, "named-chain: the stand-in carries nothing")

    # 3. The same host without it: as documented (TCP here), with its reason.
    p, res, out = run(tmp, "absent", LIB_DIR)
    if not RDMA_HOST:
        job_is_right("absent", p, res)
    took_tcp_by_itself("absent", p)
    check(not markers(out), "absent: no stand-in ran")

    # ncclscope's own library under the name: compared by inode, never wrapped.
    own = os.path.join(tmp, "own")
    os.makedirs(own)
    os.symlink(os.path.join(LIB_DIR, "libnccl-net-ncclscope.so"), os.path.join(own, "libnccl-net.so"))
    p, res, out = run(tmp, "itself", own + ":" + LIB_DIR)
    if not RDMA_HOST:
        job_is_right("itself", p, res)
    check(f"auto: not wrapping libnccl-net.so: {own}/libnccl-net.so is ncclscope itself" in p.stderr,
          "itself: one INFO line says the file found is ncclscope itself")
    took_tcp_by_itself("itself", p)

    # 4. One NCCL would run (a v7 table) but ncclscope cannot wrap: decline, naming it, never TCP.
    old = os.path.join(tmp, "old")
    os.makedirs(old)
    shutil.copy(os.path.join(LIB_DIR, "libnccl-net-inner-notable.so"), os.path.join(old, "libnccl-net.so"))
    p, res, out = run(tmp, "unwrappable", old + ":" + LIB_DIR)
    check(p.returncode != 0, f"unwrappable: ncclscope declines, and the sim (no IB or sockets of its own) stops "
                             f"(rc {p.returncode})")
    check(re.search(r"libnccl-net\.so \(" + re.escape(old) + r"/libnccl-net\.so\), the net plugin NCCL loads by itself "
                    r"when NCCL_NET_PLUGIN is unset, cannot be wrapped: .*only v7.*; declining\. Name it in "
                    r"NCCL_NET_PLUGIN instead of ncclscope", p.stderr) is not None,
          "unwrappable: one line names the file, why, and what to set")
    check("transport TCP" not in p.stderr, "unwrappable: ncclscope's TCP is not taken")

    # 5. One that loads but whose init fails (its fabric absent on this host): ncclscope's init fails with its
    #    error, and NCCL moves on as it would had it loaded that plugin itself.
    failing = os.path.join(tmp, "failing")
    os.makedirs(failing)
    shutil.copy(os.path.join(LIB_DIR, "libnccl-net-inner-failinit.so"), os.path.join(failing, "libnccl-net.so"))
    p, res, out = run(tmp, "failing-init", failing + ":" + LIB_DIR)
    check(p.returncode != 0, f"failing-init: ncclscope's init fails (rc {p.returncode})")
    check("inner-failinit: no fabric provider found" in p.stderr, "failing-init: the plugin's own line is logged")
    check(re.search(r"init failed in the wrapped plugin .*" + re.escape(failing) + r"/libnccl-net\.so.*"
                    r"ncclSystemError \(2\)", p.stderr) is not None, "failing-init: ncclscope's line names it and its error")
    check("transport TCP" not in p.stderr, "failing-init: ncclscope's TCP is not taken")

print(f"{len(FAILED)} failure(s)")
sys.exit(1 if FAILED else 0)
