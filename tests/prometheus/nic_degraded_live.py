#!/usr/bin/env python3
"""The degraded-link alert live: a real Prometheus (Debian's) scrapes two emulated 2-rank jobs every 5 s through
file_sd and evaluates every shipped rule file. Each job's two ranks run on two emulated hosts (network namespaces
joined by a veth pair, tests/support/netns_link.py; host-a and host-b by NCCLSCOPE_NODE_NAME) over ncclscope's TCP
transport. Once the jobs' own history is recorded and 4 minutes old (ncclscope:job_seconds_per_op: the alert
compares against it from then on), the fault job's link is rate-limited on host-b's side (tbf, 8 Mbit/s, 20 ms of queue: it slows every
collective and drops what overflows). NcclscopeNicDegraded must then name host-b and its interface (vdata) within
--within seconds, once, and nothing else. The control job, a rank that straggles 20 ms per collective on a healthy
link, must raise nothing all run. --fault flap instead takes host-b's end of the link down for 2 s in every 6 s
until the alert and the 10 s after it are over (a flapping port; the connections survive on retransmissions):
NcclscopeNicFlapping must name host-b's vdata from its carrier changes (the retransmissions are too few for
NcclscopeNicDegraded). A veth is a cable straight between the two hosts, so both of its ends lose their carrier
and host-a's vdata may be named too; a real cable runs to a switch port. --net-chain inner-tcp-v12 has ncclscope wrap a
TCP net plugin and leave it the data, as it wraps a cluster's own: the kernel's retransmissions of sockets ncclscope
does not own must name the link the same way.

Onset is the moment tbf is in place (the link taken down, for flap). The alert time is when it is first seen firing (polled every 0.5 s).
--rounds N repeats the fault with fresh jobs; --table prints the docs/measurements.md row.
Exit status: 0 pass, 1 fail, 77 (with SKIP and the reason) without prometheus or network namespaces.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from prom_server import free_port, http_get  # noqa: E402
from hang_support import SKIP, Job, Prometheus, sim_env  # noqa: E402
from netns_link import NetnsLink  # noqa: E402

TBF = "tbf rate 8mbit burst 64kb latency 20ms"
FAULTS = {"tbf": f"rate-limiting host-b's side of the link ({TBF})",
          "flap": "taking host-b's end of the link down for 2 s in every 6 s"}
# The alert each fault must raise, and the NICs it may name: (host, nic) wanted, and the others allowed.
EXPECTED = {"tbf": ("NcclscopeNicDegraded", {("host-b", "vdata")}, set()),
            "flap": ("NcclscopeNicFlapping", {("host-b", "vdata")}, {("host-a", "vdata")})}
NIC_ALERTS = ("NcclscopeNicDegraded", "NcclscopeNicFlapping")


def nic_alerts(prom, names=NIC_ALERTS):
    """The NIC alerts of `names` firing now: [labels]."""
    d = json.loads(http_get(prom.port, "/api/v1/alerts", timeout=60))
    return [a["labels"] for a in d["data"]["alerts"]
            if a["labels"].get("alertname") in names and a["state"] == "firing"]


def flap(link, stop):
    """Host-b's end of the link down 2 s in every 6 s until `stop` is set (then up)."""
    while not stop.is_set():
        link.sh(f"ip -n {link.ns[1]} link set vdata down")
        stop.wait(2)
        link.sh(f"ip -n {link.ns[1]} link set vdata up")
        stop.wait(4)


def history_recorded(prom, job):
    """Whether the rules have the job's seconds per collective from at least 4 minutes ago (from then on the alert
    compares against it)."""
    r = prom.query(f'count_over_time(ncclscope:job_seconds_per_op:rate{{ncclscope_job="{job}"}}[15m] offset 4m)')
    return bool(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sim")
    ap.add_argument("libdir")
    ap.add_argument("rules")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--within", type=float, default=20.0, help="seconds from onset to the alert allowed (20)")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--fault", choices=sorted(FAULTS), default="tbf")
    ap.add_argument("--net-chain", default="",
                    help="a net plugin ncclscope wraps and leaves the data to (inner-tcp-v12: a TCP plugin whose "
                         "sockets ncclscope does not own, as a cluster's own)")
    args = ap.parse_args()
    if not shutil.which("prometheus"):
        print("SKIP: the prometheus server is not installed (scripts/install-deps.sh installs it)")
        return SKIP
    probe = NetnsLink(240)
    try:
        probe.setup()
    except (RuntimeError, OSError) as e:
        probe.teardown()
        print(f"SKIP: cannot create network namespaces here ({e}); the test needs root and `ip netns`")
        return SKIP
    probe.teardown()
    work = tempfile.mkdtemp(prefix="ncclscope-nic-degraded-")
    sd = os.path.join(work, "sd")
    os.makedirs(sd)
    prom = Prometheus(work, sorted(glob.glob(os.path.join(os.path.abspath(args.rules), "*.yml"))))
    env0 = sim_env(args.libdir)
    if args.net_chain:
        env0["NCCLSCOPE_NET_CHAIN"] = args.net_chain
    failures, times, jobs, links = [], [], [], []
    flapping = threading.Event()

    def start_job(name, tag, straggle):
        link = NetnsLink(tag)
        link.setup()
        links.append(link)
        port = free_port()
        for r in (0, 1):
            env = dict(env0, NCCLSCOPE_JOB_ID=name, NCCLSCOPE_SD_DIR=sd, RANK=str(r), LOCAL_RANK="0", WORLD_SIZE="2",
                       NCCLSCOPE_SOCKET_IFNAME="vdata", NCCLSCOPE_PROM_BIND=link.mgmt_ip[r],
                       NCCLSCOPE_NODE_NAME=f"host-{'ab'[r]}")
            jobs.append(Job(f"{name}-rank{r}", ["ip", "netns", "exec", link.ns[r], args.sim, "--ranks", "2", "--rank",
                                                 str(r), "--root", f"{link.data_ip[0]}:{port}", "--ops", "allreduce",
                                                 "--sizes", "256K:256K", "--iters", "100000000", "--straggle",
                                                 f"0:{straggle}", "--timeout", "120"], env, work))
        return link

    try:
        for rnd in range(1, args.rounds + 1):
            fault_job, control_job = f"slow-link-r{rnd}", f"healthy-r{rnd}"
            link = start_job(fault_job, 2 * rnd, 5)
            start_job(control_job, 2 * rnd + 1, 20)
            deadline = time.time() + 420
            while not all(history_recorded(prom, j) for j in (fault_job, control_job)):
                if time.time() > deadline:
                    failures.append(f"round {rnd}: no recorded history of the jobs after 420 s")
                    break
                time.sleep(2)
            print(f"round {rnd}: history recorded; {fault_job}: {FAULTS[args.fault]}")
            # The TCP transport (or the wrapped plugin, through ncclscope) carries the data: each rank knows exactly
            # which NIC its traffic uses.
            mapped = prom.query(f'last_over_time(ncclscope_process_info{{ncclscope_job="{fault_job}",nics="vdata",'
                                f'nic_mapping="exact"}}[1m])')
            if len(mapped) != 2:
                failures.append(f"round {rnd}: {len(mapped)} of the 2 ranks say in ncclscope_process_info that they "
                                f"use vdata exactly")
            onset = time.time()
            if args.fault == "tbf":
                link.shape(1, TBF)
            else:
                flapping.clear()
                flapper = threading.Thread(target=flap, args=(link, flapping), daemon=True)
                flapper.start()
            alertname, want, allowed = EXPECTED[args.fault]
            first, named = None, []
            while time.time() - onset < max(60.0, args.within + 20):
                alerts = nic_alerts(prom)
                for a in alerts:
                    if a.get("ncclscope_job") != fault_job:
                        failures.append(f"round {rnd}: false alarm {a}")
                mine = [a for a in alerts if a.get("ncclscope_job") == fault_job and a.get("alertname") == alertname]
                if mine and first is None:
                    first, named = time.time() - onset, mine
                if first is not None and time.time() - onset > first + 10:
                    break  # ten seconds more: no second NIC named
                time.sleep(0.5)
            flapping.set()
            got = {(a.get("host"), a.get("nic")) for a in nic_alerts(prom, (alertname,)) + named
                   if a.get("ncclscope_job") == fault_job}
            print(f"round {rnd}: {alertname} after {first if first is None else round(first, 1)} s naming {sorted(got)}")
            if first is None:
                failures.append(f"round {rnd}: no {alertname} within {max(60.0, args.within + 20):.0f} s")
            elif not want <= got or not got <= want | allowed:
                failures.append(f"round {rnd}: named {sorted(got)}, want {sorted(want)}"
                                + (f" (and perhaps {sorted(allowed)})" if allowed else ""))
            elif first > args.within:
                failures.append(f"round {rnd}: named after {first:.1f} s, more than {args.within} s")
            else:
                times.append(first)
            for j in jobs:
                j.stop()
            jobs.clear()
            for rest in links:
                rest.teardown()
            links.clear()
        if times:
            print(f"onset -> {EXPECTED[args.fault][0]}: min {min(times):.1f} s, median {statistics.median(times):.1f} s, "
                  f"max {max(times):.1f} s over {len(times)} run(s)")
            if args.table:
                kind = "slow link (tbf 8 Mbit/s, 20 ms queue)" if args.fault == "tbf" else "flapping link (down 2 s in every 6 s)"
                carrier = f"a wrapped TCP plugin ({args.net_chain})" if args.net_chain else "ncclscope TCP"
                print(f"| {kind} | {carrier} | {len(times)} | {min(times):.1f} | "
                      f"{statistics.median(times):.1f} | {max(times):.1f} | {len(times)}/{args.rounds} |")
    finally:
        flapping.set()
        for j in jobs:
            j.stop()
        for rest in links:
            rest.teardown()
        prom.stop()
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("PASS")
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work} (logs, prometheus data)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
