#!/usr/bin/env python3
"""bench_net --runs --trace end to end: two fresh-process runs with helper threads; every process leaves its
line, the transport's helper threads are found by name, each TCP socket's kernel counters account for the
bytes moved, the host's TCP counters and the CPUs' distance are there, and bench_net_trace.py summarises every
run. Then one run with NCCLSCOPE_NET_SOCKBUF: the transport's sockets carry the fixed sizes (doubled by the
kernel), the plain pair's do not."""
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_net_trace import rows as trace_rows  # noqa: E402

BYTES = 64 << 20
SIZE = 4 << 20


def traced_runs(bench_net, runs, **env):
    """Runs bench_net --runs=RUNS --trace; returns the trace's rows and bench_net_trace.py's summary."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.txt")
        env = dict(os.environ, NCCLSCOPE_NET_NTHREADS="2", NCCLSCOPE_NET_NSOCKS="2", BENCH_MIN=str(SIZE), **env)
        subprocess.run([bench_net, f"--runs={runs}", f"--bytes={BYTES}", f"--sizes-max={SIZE}", f"--trace={trace}"],
                       env=env, check=True, timeout=120, stdout=subprocess.DEVNULL)
        rows = trace_rows(trace)
        summary = subprocess.run([sys.executable, os.path.join(here, "bench_net_trace.py"), trace], check=True,
                                 capture_output=True, text=True, timeout=60).stdout
    return rows, summary


def main(bench_net):
    rows, summary = traced_runs(bench_net, 2)
    failures = []

    def check(ok, what):
        print(("ok:   " if ok else "FAIL: ") + what)
        if not ok:
            failures.append(what)

    for run in ("0", "1"):
        mine = [r for r in rows if r["run"] == run]
        procs = {r["role"] for r in mine if "kind" not in r}
        check(procs == {"plain-send", "plain-recv", "plugin-send", "plugin-recv"}, f"run {run}: a line per process")
        for role, prefix in (("plugin-send", "ncclscope-tx"), ("plugin-recv", "ncclscope-rx")):
            names = sorted(r["name"] for r in mine if r.get("kind") == "thread" and r["role"] == role
                           and r["name"].startswith(prefix))
            check(names == [prefix + "0", prefix + "1"], f"run {run} {role}: helper threads {names}")
        for role, field in (("plugin-send", "sent"), ("plugin-recv", "received"), ("plain-send", "sent")):
            socks = [r for r in mine if r.get("kind") == "socket" and r["role"] == role]
            moved = sum(int(s[field]) for s in socks)
            # The transport adds a header per slice and clear-to-send messages: a little more than the payload.
            check(BYTES <= moved < BYTES * 1.01, f"run {run} {role}: {len(socks)} socket(s) {field} {moved} B")
        netstat = [r for r in mine if r.get("kind") == "netstat"]
        check(len(netstat) == 4 and all("TCPTimeouts" in r for r in netstat), f"run {run}: host TCP counters")
        if len(os.sched_getaffinity(0)) >= 2:
            probe = [float(r["cacheline_rtt_ns"]) for r in mine if r.get("kind") == "host"]
            check(len(probe) == 1 and probe[0] > 0,
                  f"run {run}: cache line round trip between our first two CPUs {probe} ns")
    lines = [l for l in summary.splitlines() if l.strip().startswith("4MiB")]
    check(len(lines) == 2, f"summary: a row per run ({len(lines)})")
    print(summary)

    fixed = 96 << 10  # under the kernel's default net.core.wmem_max and rmem_max (212,992), which clamp it
    rows, _ = traced_runs(bench_net, 1, NCCLSCOPE_NET_SOCKBUF=str(fixed))
    for role in ("plugin-send", "plugin-recv"):
        sizes = {(int(r["sndbuf"]), int(r["rcvbuf"])) for r in rows if r.get("kind") == "socket" and r["role"] == role}
        check(sizes == {(2 * fixed, 2 * fixed)}, f"NCCLSCOPE_NET_SOCKBUF={fixed}: {role} sockets' (sndbuf, rcvbuf) {sizes}")
    plain = [int(r["rcvbuf"]) for r in rows if r.get("kind") == "socket" and r["role"] == "plain-recv"]
    check(plain and plain[0] != 2 * fixed, f"the plain pair keeps the kernel's sizes (rcvbuf {plain})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
