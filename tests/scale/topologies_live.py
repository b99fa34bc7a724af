#!/usr/bin/env python3
"""The hang alert through the topologies large sites run, live: an emulated job (16 ranks by default, 64 KiB
all-reduces over ncclscope TCP, rank 0 straggling 50 ms) whose global rank C stops issuing (--class: or is
killed, frozen, issues another collective...), scraped by two per-host agents that each take half of the
file_sd targets and remote-write to the engine that holds the rules.

  prometheus-agents  two Prometheus agents (--enable-feature=agent, hashmod on the target address) ->
                     one Prometheus (--web.enable-remote-write-receiver) evaluating rules/*.yml -> Alertmanager
  victoriametrics    two vmagents (-promscrape.cluster.membersCount=2) -> victoria-metrics -> vmalert
                     evaluating the same rules/*.yml, unchanged -> Alertmanager

The configurations are the recipes of deploy/prometheus-agents and deploy/victoriametrics (their example paths
and addresses replaced; vmagent's and vmalert's flags as deploy/victoriametrics/README.md gives them). Both
engines are real: Debian 12's Prometheus 2.42 and Alertmanager 0.25; Debian 13's VictoriaMetrics 1.112
(scripts/fetch-victoria-metrics.sh unpacks it; --vm-bin names the directory). Passes when exactly one
NcclscopeHang fires, naming global rank C with the class of --class (not_joined for the default hang), in the
engine and in Alertmanager, within --within seconds of the onset (the fault line the rank prints; the alert time
is when the test first sees it firing, polling each second), and no other NcclscopeHang fires in the --watch
seconds after it. The last line:
  topology: engine=E ranks=N hang_alert_s=X culprit=ok|wrong|none alerts=K alertmanager=ok|wrong
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from prom_server import Server, http_get  # noqa: E402
from hang_support import CLASSES, SKIP, Job, forget_targets, hang_alerts, sim_env  # noqa: E402

AGENTS = 2
# The p99 scrape age against the clock on an idle host (docs/measurements.md: 8.9-9.8 s at 16 and 32 ranks): what a
# starved host adds beyond it is added to --within.
IDLE_LAG_P99_S = 10.0
# How long the job may take to reach the fault, and how long the test then watches for the alert.
ONSET_WITHIN_S, AFTER_ONSET_S = 300.0, 120.0
# How long the engine's notification may take to reach Alertmanager after the watch.
AM_GRACE_S = 30.0
DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def recipe(path, **replace):
    """A shipped configuration of deploy/ (YAML), its example paths and addresses replaced: the test runs the recipe."""
    with open(os.path.join(DEPLOY, path)) as f:
        cfg = yaml.safe_load(f)
    for job in cfg.get("scrape_configs", []):
        for sd_cfg in job.get("file_sd_configs", []):
            sd_cfg["files"] = [os.path.join(replace["sd"], "*.json")]
        if replace.get("member") is not None:  # the recipe's commented hashmod share
            job["relabel_configs"] = [
                {"source_labels": ["__address__"], "modulus": AGENTS, "target_label": "__tmp_shard",
                 "action": "hashmod"},
                {"source_labels": ["__tmp_shard"], "regex": str(replace["member"]), "action": "keep"}]
    for rw in cfg.get("remote_write", []):
        rw["url"] = replace["remote_write"]
    if "rule_files" in cfg:
        cfg["rule_files"] = replace["rules"]
        cfg["alerting"]["alertmanagers"][0]["static_configs"] = [{"targets": [replace["alertmanager"]]}]
    return yaml.safe_dump(cfg)


class Alertmanager(Server):
    """Debian's Alertmanager with one receiver that sends nothing: the test reads its alerts API."""

    def __init__(self, work):
        cfg = write(os.path.join(work, "alertmanager.yml"),
                    "route: {receiver: none, group_by: [alertname, ncclscope_job, comm]}\n"
                    "receivers: [{name: none}]\n")
        cluster = "--cluster.listen-address="  # no gossip: one instance
        super().__init__(lambda port: ["prometheus-alertmanager", f"--config.file={cfg}", cluster,
                                       f"--storage.path={work}/am", f"--web.listen-address=127.0.0.1:{port}"],
                         os.path.join(work, "alertmanager.log"))

    def hang_alerts(self):
        body = http_get(self.port, "/api/v2/alerts", {"filter": 'alertname="NcclscopeHang"', "active": "true"})
        return [a["labels"] for a in json.loads(body)]


def prometheus_agents(work, sd, rules, am):
    """Returns (servers, the rule engine's port)."""
    central = os.path.join(work, "central")
    os.makedirs(central)
    cfg = write(os.path.join(central, "prometheus.yml"),
                recipe("prometheus-agents/rules-engine.yml", rules=rules, alertmanager=f"127.0.0.1:{am.port}"))
    engine = Server(lambda port: ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={central}/data",
                                  "--web.enable-remote-write-receiver", f"--web.listen-address=127.0.0.1:{port}"],
                    os.path.join(central, "prometheus.log"))
    servers = [engine]
    for member in range(AGENTS):
        d = os.path.join(work, f"agent{member}")
        os.makedirs(d)
        acfg = write(os.path.join(d, "prometheus.yml"),
                     recipe("prometheus-agents/agent.yml", sd=sd, member=member,
                            remote_write=f"http://127.0.0.1:{engine.port}/api/v1/write"))
        servers.append(Server(lambda port, acfg=acfg, d=d: [
            "prometheus", "--enable-feature=agent", f"--config.file={acfg}", f"--storage.agent.path={d}/wal",
            f"--web.listen-address=127.0.0.1:{port}"], os.path.join(d, "prometheus.log")))
    return servers, engine.port, engine.port


def victoriametrics(work, sd, rules, am, vm_bin):
    vm_dir = os.path.join(work, "vm")
    # latencyOffset: VictoriaMetrics hides the last 30 s from queries by default, longer than the alert may take.
    store = Server(lambda port: [os.path.join(vm_bin, "victoria-metrics"), f"-storageDataPath={vm_dir}",
                                 f"-httpListenAddr=127.0.0.1:{port}", "-retentionPeriod=1d",
                                 "-search.latencyOffset=0s"], os.path.join(work, "victoria-metrics.log"))
    url = f"http://127.0.0.1:{store.port}"
    servers = [store]
    scrape = write(os.path.join(work, "vmagent-scrape.yml"), recipe("victoriametrics/vmagent-scrape.yml", sd=sd))
    for member in range(AGENTS):
        servers.append(Server(lambda port, member=member: [
            os.path.join(vm_bin, "vmagent"), f"-promscrape.config={scrape}", f"-remoteWrite.url={url}/api/v1/write",
            f"-remoteWrite.tmpDataPath={work}/vmagent{member}", "-remoteWrite.flushInterval=1s",
            "-promscrape.fileSDCheckInterval=1s", f"-promscrape.cluster.membersCount={AGENTS}",
            f"-promscrape.cluster.memberNum={member}", f"-httpListenAddr=127.0.0.1:{port}"],
            os.path.join(work, f"vmagent{member}.log")))
    engine = Server(lambda port: [
        os.path.join(vm_bin, "vmalert"), *[f"-rule={r}" for r in rules], f"-datasource.url={url}",
        f"-remoteWrite.url={url}", f"-remoteRead.url={url}", f"-notifier.url=http://127.0.0.1:{am.port}",
        "-evaluationInterval=5s", "-rule.evalDelay=0s", "-remoteWrite.flushInterval=1s",
        f"-httpListenAddr=127.0.0.1:{port}"], os.path.join(work, "vmalert.log"))
    servers.append(engine)
    return servers, engine.port, store.port


def what_the_engine_saw(query_port, name, wrong):
    """For a wrong alert: the stalled ranks by function and class the store held around when it was first seen, a
    line per second (the raw series the culprit arms read), to tell a real second function from a partial read."""
    t = min(first for _, first in wrong)
    expr = f'count by (func, class) (ncclscope_comm_wait_seconds{{ncclscope_job="{name}"}})'
    try:
        body = http_get(query_port, "/api/v1/query_range",
                        {"query": expr, "start": t - 6, "end": t + 6, "step": 1}, timeout=30)
    except OSError as e:
        print(f"(the store did not answer: {e})")
        return
    by_time = {}
    for series in json.loads(body)["data"]["result"]:
        key = f"{series['metric'].get('func', '')}/{series['metric'].get('class', '')}"
        for stamp, value in series["values"]:
            by_time.setdefault(float(stamp), []).append(f"{key}={value}")
    for stamp in sorted(by_time):
        print(f"  stalled ranks at {stamp - t:+.0f} s from the first wrong alert: {' '.join(sorted(by_time[stamp]))}")


class ScrapeLag:
    """How late each target's latest scrape is as the rules see it, sampled once a second: against the clock, and
    against the newest scrape of the job (what the overdue test of the hang rules compares). The culprit is left
    out: a frozen one is late by design."""

    def __init__(self, port, name, culprit):
        self.port, self.clock, self.job = port, [], []
        self.expr = f'timestamp(up{{ncclscope_job="{name}", global_rank!="{culprit}"}})'

    def sample(self):
        now = time.time()
        try:
            body = http_get(self.port, "/api/v1/query", {"query": self.expr, "time": f"{now:.3f}"}, timeout=5)
        except OSError:
            return
        stamps = [float(r["value"][1]) for r in json.loads(body)["data"]["result"]]
        if stamps:
            self.clock += [now - t for t in stamps]
            self.job += [max(stamps) - t for t in stamps]

    def excess_s(self):
        """How much later than on an idle host the scrapes reached the rules (p99 against the clock): the time a
        starved host adds before any rule can see the stall, which the alert's deadline allows for."""
        if not self.clock:
            return 0.0
        p99 = sorted(self.clock)[min(len(self.clock) - 1, int(.99 * len(self.clock)))]
        return max(0.0, p99 - IDLE_LAG_P99_S)

    def report(self):
        def q(v, f):
            return sorted(v)[min(len(v) - 1, int(f * len(v)))]
        for what, v in (("the clock", self.clock), ("the job's newest scrape", self.job)):
            if v:
                print(f"scrape age the rules see, against {what}: p50 {q(v, .5):.2f} s, p99 {q(v, .99):.2f} s, "
                      f"max {max(v):.2f} s ({len(v)} target samples)")


class AlertmanagerView:
    """The job's NcclscopeHang alerts Alertmanager has received, sampled with the engine: an alert counts once it
    arrived, even if a starved engine's next notification comes after the watch."""

    def __init__(self, am, name):
        self.am, self.name, self.seen = am, name, {}

    def sample(self):
        try:
            for labels in self.am.hang_alerts():
                if labels.get("ncclscope_job") == self.name:
                    self.seen.setdefault(frozenset(labels.items()), labels)
        except OSError:
            pass

    def wait_for_first(self, seconds):
        end = time.time() + seconds
        while not self.seen and time.time() < end:
            time.sleep(1)
            self.sample()

    def alerts(self):
        return list(self.seen.values())


def print_notifier_counters(port):
    """What the engine says of its notifications, for an alert that never reached Alertmanager."""
    try:
        body = http_get(port, "/metrics", timeout=10).decode(errors="replace")
    except OSError as e:
        print(f"(the engine's /metrics did not answer: {e})")
        return
    for line in body.splitlines():
        if not line.startswith("#") and any(k in line for k in ("notifications_", "alerts_sent", "alerts_send_err")):
            print(f"  engine: {line}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sim")
    ap.add_argument("libdir")
    ap.add_argument("rules", help="the directory of the shipped rule files")
    ap.add_argument("--topology", choices=["prometheus-agents", "victoriametrics"], required=True)
    ap.add_argument("--vm-bin", help="VictoriaMetrics binaries (scripts/fetch-victoria-metrics.sh prints it)")
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--culprit", type=int, default=11)
    ap.add_argument("--seq", type=int, default=240, help="the world collective the culprit does not issue")
    ap.add_argument("--class", dest="cls", choices=sorted(CLASSES), default="hang",
                    help="the fault (tests/support/hang_support.py: CLASSES); default hang (not_joined)")
    ap.add_argument("--within", type=float, default=15.0)
    ap.add_argument("--watch", type=float, default=20.0)
    args = ap.parse_args()
    for tool in ("prometheus", "prometheus-alertmanager"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} is not installed (scripts/install-deps.sh installs it)")
            return SKIP
    if args.topology == "victoriametrics" and not (args.vm_bin and os.access(os.path.join(args.vm_bin, "vmalert"),
                                                                              os.X_OK)):
        sys.exit("--vm-bin must name the directory of vmalert (scripts/fetch-victoria-metrics.sh prints it)")

    work = tempfile.mkdtemp(prefix=f"ncclscope-{args.topology}-")
    sd = os.path.join(work, "sd")
    os.makedirs(sd)
    rules = sorted(glob.glob(os.path.join(os.path.abspath(args.rules), "*.yml")))
    servers, job = [], None
    try:
        am = Alertmanager(work)
        servers.append(am)
        made, port, query_port = (prometheus_agents(work, sd, rules, am) if args.topology == "prometheus-agents"
                                  else victoriametrics(work, sd, rules, am, args.vm_bin))
        servers += made
        name = f"{args.topology}-{os.getpid()}"
        env = dict(sim_env(args.libdir), NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SD_DIR=sd,
                   NCCLSCOPE_OUTPUT_GRACE_S="120", NCCLSCOPE_JOB_ID=name)
        fault_args, want_class, marker = CLASSES[args.cls]
        argv = [args.sim, "--ranks", str(args.ranks), "--sizes", "64K:64K", "--iters", "100000000", "--timeout", "400",
                "--expect-hang", "--straggle", "0:50", *fault_args(args.culprit, args.seq)]
        job = Job(name, argv, env, work, marker)
        # A starved host may take minutes to reach the onset; the alert then has AFTER_ONSET_S.
        seen, first, deadline = {}, None, time.time() + ONSET_WITHIN_S
        lag = ScrapeLag(query_port, name, args.culprit)
        in_am = AlertmanagerView(am, name)
        while time.time() < deadline:
            time.sleep(1)
            lag.sample()
            in_am.sample()
            if job.onset is not None:
                deadline = min(deadline, job.onset + AFTER_ONSET_S)
            for labels, _active_at in hang_alerts(port):
                if labels.get("ncclscope_job") == name:
                    # when first seen: vmalert's activeAt is its query time, the interval's start, before it evaluates
                    seen.setdefault(frozenset(labels.items()), (labels, time.time()))
            if first is None and seen:
                first = time.time()
            if first is not None and time.time() - first >= args.watch:
                break
            if job.proc.poll() is not None and first is None:
                break
        if seen:
            in_am.wait_for_first(AM_GRACE_S)
            if not in_am.seen:
                print_notifier_counters(port)
        want = {"class": want_class, "global_rank": str(args.culprit)}
        wrong = [(lab, t) for lab, t in seen.values() if any(lab.get(k) != v for k, v in want.items())]
        if wrong:
            what_the_engine_saw(query_port, name, wrong)
    finally:
        if job:
            job.stop()
            forget_targets(sd, job.name)
        for s in reversed(servers):
            s.stop()

    lag.report()
    within = args.within + lag.excess_s()
    if within > args.within:
        print(f"the scrapes reached the engine {lag.excess_s():.1f} s later than on an idle host (p99 against the "
              f"clock past {IDLE_LAG_P99_S:.0f} s): the alert may take {within:.1f} s")
    alerts = list(seen.values())
    right = [(lab, t) for lab, t in alerts if all(lab.get(k) == v for k, v in want.items())]
    delay = right[0][1] - job.onset if right and job.onset else None
    culprit = "none" if not alerts else ("ok" if right and len(alerts) == 1 else "wrong")
    in_am = in_am.alerts()
    am_ok = "ok" if len(in_am) == 1 and all(in_am[0].get(k) == v for k, v in want.items()) else "wrong"
    for lab, t in alerts:
        print(f"NcclscopeHang {{class={lab.get('class')}, global_rank={lab.get('global_rank')}, comm={lab.get('comm')}}}"
              f" active {t - job.onset:+.1f} s after the onset" if job.onset else f"NcclscopeHang {lab}")
    print(f"Alertmanager: {len(in_am)} NcclscopeHang received: "
          f"{[(a.get('class'), a.get('global_rank')) for a in in_am]}")
    ok = culprit == "ok" and am_ok == "ok" and delay is not None and delay <= within
    if job.onset is None:
        print("FAIL: the culprit never printed its onset line (see the job's log in " + work + ")")
        ok = False
    elif delay is not None and delay > within:
        print(f"FAIL: NcclscopeHang fired {delay:.1f} s after the onset, past {within:.1f} s")
    elif not ok:
        print(f"FAIL: want exactly one NcclscopeHang {want} in the engine and in Alertmanager (logs in {work})")
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    print(f"topology: engine={args.topology} ranks={args.ranks} "
          f"hang_alert_s={'%.1f' % delay if delay is not None else 'none'} culprit={culprit} "
          f"alerts={len(alerts)} alertmanager={am_ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
