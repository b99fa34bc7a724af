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

Side a waits until the job's own history (ncclscope:job_seconds_per_op) is 4 minutes old, as the alert does, and
30 s more. Until then no NcclscopeNicDegraded may fire: the control. Then netem drops 3 % of what leaves its rxe0 netdev, and the alert
must name host rdma2-a, nic rxe0, port 1 within --within seconds. The far end (rdma2-b, whose rxe0 counts the
sequence gaps) may be named too: one bad link, two ends counting. Then every rank writes its dump (the dump
signal; side a writes RDMA2_OUT/../nic_degraded.dump for side b, which answers with nic_degraded.b_dumped), and
ncclscope-analyze over all four dumps must name the same NIC from the counters they carry (host_nics).
--flap DOWN:UP then flaps the same link: the loss is lifted, and the host runner turns the carrier of A's NIC
under rxe0 off for DOWN s and on for UP s, over and over (QEMU's monitor, run_two_host_tier.sh: a link down and
back, which rxe counts in link_downed and reports as port events). The job must ride it out (rxe retries without
end at retry count 7; ncclscope's verbs transport waits NCCLSCOPE_IB_PORT_DOWN_TIMEOUT for the port), and
NcclscopeNicFlapping must name host rdma2-a, nic rxe0, port 1, and nothing else, within --within seconds of the
first carrier loss; it must not fire before. Side a writes nic_degraded.done when it is through.
Prometheus scrapes the ranks over the second link (rxe1's, 203.0.113.0/24), as a site's management network
would: the faults on the first link do not touch the scrapes.
Usage: nic_degraded_rdma2.py a|b SIM RULES_DIR [--within S] [--carrier ncclscope|other] [--flap DOWN:UP]
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
SCRAPE_IPS = {"a": "203.0.113.1", "b": "203.0.113.2"}  # the second link, untouched by the faults
RANKS = {"a": (0, 1), "b": (2, 3)}
PORT = 9900
LOSS = "loss 3%"


def api(port, path, **params):
    url = f"http://127.0.0.1:{port}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["data"]


def nic_alerts(port, name="NcclscopeNicDegraded"):
    return [a["labels"] for a in api(port, "/api/v1/alerts")["alerts"]
            if a["labels"].get("alertname") == name and a["state"] == "firing"]


def named_within(port, name, onset, within):
    """Polls the firing `name` alerts of the job from `onset` on: (seconds to the first, the (host, nic, port)s
    named up to 10 s after it)."""
    first, named = None, set()
    while time.time() - onset < max(90.0, within + 30):
        alerts = [a for a in nic_alerts(port, name) if a.get("ncclscope_job") == "lossy"]
        named |= {(a.get("host"), a.get("nic"), a.get("port")) for a in alerts}
        if alerts and first is None:
            first = time.time() - onset
        if first is not None and time.time() - onset > first + 10:
            break
        time.sleep(0.5)
    return first, named


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
    targets = [f"{ip}:{PORT + local}" for ip in SCRAPE_IPS.values() for local in (0, 1)]
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


def carrier(dev):
    with open(f"/sys/class/net/{dev}/carrier") as f:
        return f.read().strip() == "1"


# The shipped alerts' "the job slowed" (mixin/rules/alerts.libsonnet jobSlowed, at the 5 s scrape interval's window):
# the job's seconds per collective over 20 s against 1.5 times its history, once that history is 4 minutes old.
JOB_PACE = ('sum by (ncclscope_job) (rate(ncclscope_operation_duration_seconds_sum{kind="coll"}[20s]))'
            ' / (sum by (ncclscope_job) (rate(ncclscope_operation_duration_seconds_count{kind="coll"}[20s])) > 0)')
HISTORY = 'avg_over_time(ncclscope:job_seconds_per_op:rate[15m] offset 2m)'
HISTORY_OLD_ENOUGH = 'count_over_time(ncclscope:job_seconds_per_op:rate[15m] offset 4m)'
JOB_SLOWED = f'{JOB_PACE} > 1.5 * {HISTORY} and on (ncclscope_job) {HISTORY_OLD_ENOUGH}'


# Seconds of control after the job's history appears, before the fault.
CONTROL_S = 30


def health(port):
    """The alert's two inputs now: each host's retransmission and error events per second, and the job's seconds
    per collective against its history."""
    def query(q):
        return api(port, "/api/v1/query", query=q)["result"]
    rates = query('max by (host) (sum without (counter) (rate(ncclscope_host_rdma_port_retransmit_events_total[20s])))')
    pace = query(JOB_PACE)
    base = query(HISTORY)
    n = query(HISTORY.replace("avg_over_time", "count_over_time"))
    hosts = ", ".join(f"{r['metric'].get('host')} {float(r['value'][1]):.1f}" for r in rates)
    return (f"retransmissions/s {hosts}; s/op {pace[0]['value'][1] if pace else '-'} against "
            f"{base[0]['value'][1] if base else '-'} ({n[0]['value'][1] if n else 0} samples)")


def flap_phase(port, dev, down_up, within):
    """Once the job is back to its own pace after the loss, the link flaps until NcclscopeNicFlapping names it (or
    `within` + 30 s pass); the failures."""
    start = time.time()
    while api(port, "/api/v1/query", query=JOB_SLOWED)["result"] and time.time() - start < 120:
        time.sleep(1)
    if api(port, "/api/v1/query", query=JOB_SLOWED)["result"]:
        return ["the job was still slower than its history 120 s after the loss was lifted"]
    print(f"side a: the job is back to its own pace {time.time() - start:.0f} s after the loss was lifted")
    failures = [f"NcclscopeNicFlapping before the flap: {a}" for a in nic_alerts(port, "NcclscopeNicFlapping")]
    request = os.path.join(os.environ["RDMA2_RESULTS"], "flap.a")
    with open(request, "w") as f:
        f.write(down_up.replace(":", " ") + "\n")
    try:
        start = time.time()
        while carrier(dev) and time.time() - start < 30:
            time.sleep(0.05)
        if carrier(dev):
            return failures + [f"{dev} kept its carrier 30 s after the flap was asked for"]
        print(f"side a: {dev} lost its carrier {time.time() - start:.1f} s after the flap was asked for "
              f"(down/up {down_up} s)")
        first, named = named_within(port, "NcclscopeNicFlapping", time.time(), within)
    finally:
        os.remove(request)
    print(f"side a: NcclscopeNicFlapping after {first if first is None else round(first, 1)} s naming {sorted(named)}")
    if first is None:
        failures.append("no NcclscopeNicFlapping after the link began to flap")
    elif named != {("rdma2-a", "rxe0", "1")}:
        failures.append(f"NcclscopeNicFlapping named {sorted(named)}: want rdma2-a rxe0 port 1 alone")
    elif first > within:
        failures.append(f"NcclscopeNicFlapping after {first:.1f} s, more than {within} s")
    for _ in range(300):
        if carrier(dev):
            break
        time.sleep(0.1)
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("side", choices=("a", "b"))
    ap.add_argument("sim")
    ap.add_argument("rules")
    ap.add_argument("--within", type=float, default=20.0)
    ap.add_argument("--carrier", choices=("ncclscope", "other"), default="ncclscope")
    ap.add_argument("--flap", metavar="DOWN:UP", help="then flap the link: carrier off DOWN s, on UP s")
    args = ap.parse_args()
    mapping = "exact" if args.carrier == "ncclscope" else "ib_hca"
    out = os.environ.get("RDMA2_OUT", "/tmp")
    shared = os.path.dirname(out)
    done, b_dumped = os.path.join(shared, "nic_degraded.done"), os.path.join(shared, "nic_degraded.b_dumped")
    dump = os.path.join(shared, "nic_degraded.dump")
    dumps = os.path.join(shared, "nic_degraded_dumps")
    ranks = start_ranks(args.side, args.sim, out, dumps, args.carrier)
    if args.side == "b":
        while not os.path.exists(dump) and not os.path.exists(done) and any(p.poll() is None for p in ranks):
            time.sleep(1)
        dumped = os.path.exists(dump) and dump_and_wait("b", ranks, dumps)
        open(b_dumped, "w").close()
        while not os.path.exists(done) and all(p.poll() is None for p in ranks):
            time.sleep(1)
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
        while not api(port, "/api/v1/query", query=HISTORY_OLD_ENOUGH)["result"]:
            for a in nic_alerts(port):
                failures.append(f"false alarm before the fault: {a}")
            if time.time() - start > 540 or any(p.poll() is not None for p in ranks):
                failures.append("no recorded history of the job after 540 s, or a rank ended")
                break
            time.sleep(2)
        print(f"side a: history recorded after {time.time() - start:.0f} s")
        # The control goes on while the history is young: the alert compares the job against it from now on.
        control_end = time.time() + CONTROL_S
        while time.time() < control_end and not failures:
            for a in nic_alerts(port):
                failures.append(f"false alarm before the fault: {a}; {health(port)}")
            time.sleep(1)
        print(f"side a: {health(port)}; netem {LOSS} on {dev} (rxe0's netdev)")
        # Before the fault, while every rank answers its scrapes (a failed scrape marks its series stale).
        mapped = api(port, "/api/v1/query", query='last_over_time(ncclscope_process_info{host="rdma2-a",'
                                                  f'nics="rxe0:1",nic_mapping="{mapping}"}}[1m])')["result"]
        print(f"side a: {len(mapped)} ranks of rdma2-a say they use rxe0:1 ({mapping})")
        if len(mapped) != len(RANKS["a"]):
            failures.append(f"{len(mapped)} of side a's ranks say in ncclscope_process_info that they use rxe0:1 "
                            f"({mapping}), not {len(RANKS['a'])}")
        if not failures:
            subprocess.run(["tc", "qdisc", "add", "dev", dev, "root", "netem"] + LOSS.split(), check=True)
            shaped = True
            first, named = named_within(port, "NcclscopeNicDegraded", time.time(), args.within)
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
            open(dump, "w").close()
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
        if not failures and args.flap:
            subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], check=True)
            shaped = False
            failures += flap_phase(port, dev, args.flap, args.within)
            if any(p.poll() is not None for p in ranks):
                failures.append("a rank of side a ended during the flap: the job did not ride it out")
        for q in ('max by (host, counter) (ncclscope_host_rdma_port_retransmit_events_total)',
                  'ncclscope_host_rdma_port_link_downs_total',
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
