#!/usr/bin/env python3
"""rdma2 test, one side: a lossy RDMA link named live by NcclscopeNicDegraded (run by rdma2_nic_degraded_live).

Both sides run their two ranks of a 4-rank emulated job over ncclscope's verbs transport on rxe0. The ranks serve
metrics on ports 9900 and 9901 (plus the local rank), with the identity labels on every series: ncclscope_job,
host (the guest's name, rdma2-a or rdma2-b). Side a also runs a real Prometheus (the host's, through the guest's
view of /) that scrapes all four ranks every 5 s and evaluates every shipped rule file. The verbs transport is the
stand-in for NCCL's own IB transport: the alert reads only the host's port counters (ncclscope_host_rdma_port_*),
so it does not matter who carries the bytes. --carrier other makes that literal: the job's net plugin is the verbs
transport built as a plugin of its own (libnccl-net-inner-ib-v12.so), loaded by the emulated NCCL in place of
ncclscope's, which is then only the job's profiler, as beside NCCL's own IB: ncclscope counts none of the bytes,
and each rank's NIC is inferred (nic_mapping ib_hca, from NCCL_IB_HCA), not exact.

Side a waits until the rules hold the job's own history (ncclscope:job_seconds_per_op, 2 minutes back). Until then
no NcclscopeNicDegraded may fire: the control. Then netem drops 3 % of what leaves its rxe0 netdev, and the alert
must name host rdma2-a, nic rxe0, port 1 within --within seconds. The far end (rdma2-b, whose rxe0 counts the
sequence gaps) may be named too: one bad link, two ends counting. Then every rank writes its dump (the dump
signal; side a writes RDMA2_OUT/../nic_degraded.done for side b, which answers with nic_degraded.b_dumped), and
ncclscope-analyze over all four dumps must name the same NIC from the counters they carry (host_nics).
Usage: nic_degraded_rdma2.py a|b SIM RULES_DIR [--within S] [--carrier ncclscope|other]
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

IPS = {"a": "198.51.100.1", "b": "198.51.100.2"}
RANKS = {"a": (0, 1), "b": (2, 3)}
PORT = 9900
LOSS = "loss 3%"


def api(port, path, **params):
    url = f"http://127.0.0.1:{port}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["data"]


def nic_alerts(port):
    return [a["labels"] for a in api(port, "/api/v1/alerts")["alerts"]
            if a["labels"].get("alertname") == "NcclscopeNicDegraded" and a["state"] == "firing"]


def dump_and_wait(side, ranks, dumps):
    """The dump signal to this side's ranks; True once both wrote their request dump (up to 60 s)."""
    for p in ranks:
        p.send_signal(signal.SIGUSR2)
    folder = os.path.join(dumps, f"rdma2-{side}")
    for _ in range(120):
        if len(glob.glob(os.path.join(folder, "*-request.json.gz"))) >= 2:
            return True
        time.sleep(0.5)
    return False


def start_ranks(side, sim, out, dumps, carrier):
    procs = []
    for local, rank in enumerate(RANKS[side]):
        env = dict(os.environ, NCCLSCOPE_JOB_ID="lossy", RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE="4",
                   NCCLSCOPE_PROM_PORT=str(PORT), NCCLSCOPE_PROM_IDENTITY_LABELS="series", NCCLSCOPE_DUMP_DIR=dumps)
        log = open(os.path.join(out, f"rank{rank}.log"), "w")
        net = ["--net-plugin", "inner-ib-v12"] if carrier == "other" else []
        procs.append(subprocess.Popen([sim, "--ranks", "4", "--rank", str(rank), "--root", f"{IPS['a']}:29625",
                                       "--ops", "allreduce", "--sizes", "64K:64K", "--iters", "100000000",
                                       "--straggle", "0:20", "--timeout", "120"] + net,
                                      env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs


def prometheus(rules, work):
    cfg = os.path.join(work, "prometheus.yml")
    targets = [f"{ip}:{PORT + local}" for ip in IPS.values() for local in (0, 1)]
    with open(cfg, "w") as f:
        f.write("global: {scrape_interval: 5s, scrape_timeout: 4s, evaluation_interval: 5s}\n")
        f.write(f"rule_files: {json.dumps(sorted(glob.glob(os.path.join(rules, '*.yml'))))}\n")
        f.write(f"scrape_configs:\n  - job_name: ncclscope\n    static_configs: [{{targets: {json.dumps(targets)}}}]\n")
    port = 9090
    proc = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={work}/data",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=open(os.path.join(work, "prometheus.log"), "w"), stderr=subprocess.STDOUT)
    for _ in range(120):
        try:
            api(port, "/api/v1/status/buildinfo")
            return proc, port
        except OSError:
            time.sleep(1)
    raise RuntimeError("prometheus did not start in 120 s")


def netdev():
    out = subprocess.run(["rdma", "link", "show", "rxe0/1"], capture_output=True, text=True).stdout
    return out.split(" netdev ")[1].split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("side", choices=("a", "b"))
    ap.add_argument("sim")
    ap.add_argument("rules")
    ap.add_argument("--within", type=float, default=20.0)
    ap.add_argument("--carrier", choices=("ncclscope", "other"), default="ncclscope")
    args = ap.parse_args()
    mapping = "exact" if args.carrier == "ncclscope" else "ib_hca"
    out = os.environ.get("RDMA2_OUT", "/tmp")
    shared = os.path.dirname(out)
    done, b_dumped = os.path.join(shared, "nic_degraded.done"), os.path.join(shared, "nic_degraded.b_dumped")
    dumps = os.path.join(shared, "nic_degraded_dumps")
    ranks = start_ranks(args.side, args.sim, out, dumps, args.carrier)
    if args.side == "b":
        while not os.path.exists(done) and any(p.poll() is None for p in ranks):
            time.sleep(1)
        dumped = os.path.exists(done) and dump_and_wait("b", ranks, dumps)
        open(b_dumped, "w").close()
        for p in ranks:
            p.kill()
        print("side b: ranks ended", "(side a is done)" if os.path.exists(done) else "by themselves",
              "after writing their dumps" if dumped else "without their dumps")
        return 0 if dumped else 1
    failures = []
    work = "/tmp/nic-degraded-prom"  # the guest's tmpfs: the TSDB wants mmap, which the 9p share does not give
    os.makedirs(work, exist_ok=True)
    prom, port = prometheus(args.rules, work)
    dev, shaped = netdev(), False
    try:
        start = time.time()
        while not api(port, "/api/v1/query", query='count_over_time(ncclscope:job_seconds_per_op:rate'
                                                     '{ncclscope_job="lossy"}[15m] offset 2m)')["result"]:
            for a in nic_alerts(port):
                failures.append(f"false alarm before the fault: {a}")
            if time.time() - start > 420 or any(p.poll() is not None for p in ranks):
                failures.append("no recorded history of the job after 420 s, or a rank ended")
                break
            time.sleep(2)
        print(f"side a: history recorded after {time.time() - start:.0f} s; netem {LOSS} on {dev} (rxe0's netdev)")
        # Before the fault, while every rank answers its scrapes (a failed scrape marks its series stale).
        mapped = api(port, "/api/v1/query", query='last_over_time(ncclscope_process_info{host="rdma2-a",'
                                                  f'nics="rxe0:1",nic_mapping="{mapping}"}}[1m])')["result"]
        print(f"side a: {len(mapped)} ranks of rdma2-a say they use rxe0:1 ({mapping})")
        if len(mapped) != len(RANKS["a"]):
            failures.append(f"{len(mapped)} of side a's ranks say in ncclscope_process_info that they use rxe0:1 "
                            f"({mapping}), not {len(RANKS['a'])}")
        if not failures:
            subprocess.run(["tc", "qdisc", "add", "dev", dev, "root", "netem"] + LOSS.split(), check=True)
            shaped, onset, first, named = True, time.time(), None, set()
            while time.time() - onset < max(90.0, args.within + 30):
                alerts = [a for a in nic_alerts(port) if a.get("ncclscope_job") == "lossy"]
                named |= {(a.get("host"), a.get("nic"), a.get("port")) for a in alerts}
                if alerts and first is None:
                    first = time.time() - onset
                if first is not None and time.time() - onset > first + 10:
                    break
                time.sleep(0.5)
            print(f"side a: NcclscopeNicDegraded after {first if first is None else round(first, 1)} s naming "
                  f"{sorted(named)}")
            if first is None:
                failures.append("no NcclscopeNicDegraded after the loss began")
            elif ("rdma2-a", "rxe0", "1") not in named or not named <= {("rdma2-a", "rxe0", "1"), ("rdma2-b", "rxe0", "1")}:
                failures.append(f"named {sorted(named)}: want rdma2-a rxe0 port 1 (and at most the far end)")
            elif first > args.within:
                failures.append(f"named after {first:.1f} s, more than {args.within} s")
        if not failures:
            if not dump_and_wait("a", ranks, dumps):
                failures.append("side a's ranks wrote no dump on the dump signal")
            open(done, "w").close()
            for _ in range(120):
                if os.path.exists(b_dumped):
                    break
                time.sleep(0.5)
            analyze = os.path.join(os.path.dirname(os.path.abspath(args.sim)), "ncclscope-analyze")
            r = subprocess.run([analyze, dumps, "--json"], capture_output=True, text=True)
            degraded = json.loads(r.stdout or "{}").get("degraded_nics", [])
            found = {(n["host"], n["nic"], n["port"]) for n in degraded}
            print(f"side a: ncclscope-analyze over the dumps names {sorted(found)}")
            if ("rdma2-a", "rxe0", 1) not in found:
                failures.append(f"the analyzer named {sorted(found)} from the dumps, not rdma2-a rxe0 port 1"
                                f" ({r.stderr.strip()[-300:]})")
            for n in degraded:
                print(f"side a: the analyzer's {n['host']} {n['nic']}: used by ranks {n.get('ranks')} "
                      f"({n.get('mapping')})")
                # Every rank of the host uses rxe0: known exactly where ncclscope carries the data.
                if n["host"] == "rdma2-a" and (n.get("ranks") != list(RANKS["a"]) or n.get("mapping") != mapping):
                    failures.append(f"the analyzer ties {n['nic']} to ranks {n.get('ranks')} ({n.get('mapping')}), "
                                    f"not side a's {list(RANKS['a'])} ({mapping})")
        for q in ('max by (host, counter) (ncclscope_host_rdma_port_retransmit_events_total)',
                  'ncclscope:job_seconds_per_op:rate'):
            for r in api(port, "/api/v1/query", query=q)["result"]:
                print(f"side a: {q.split(' (')[0]} {r['metric']} = {r['value'][1]}")
    finally:
        if shaped:
            subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"])
        open(done, "w").close()
        for p in ranks:
            p.kill()
        prom.kill()
    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else "side a failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
