#!/usr/bin/env python3
"""The hang alert live: a real Prometheus (Debian's) scrapes emulated NCCL jobs every 5 s through file_sd and
evaluates the shipped rules/ncclscope-hang.yml; each job hangs in one class and NcclscopeHang must name its
culprit and class within 15 s of the onset, while healthy jobs with a 400 ms straggler and with 6 s operations
raise nothing.

Fault jobs (3 ranks unless said; rank 0 straggles 50 ms per operation so the hang comes after the job has been
scraped for ~10 s, as in a job that has run for a while):
  hang      --hang 1@200                          not_joined, global rank 1
  p2p       --ops sendrecv --hang 1@200           not_joined, global rank 1 (a point-to-point ring)
  kill      --kill 1@200 --hold-on-error 40       process,    global rank 1 (survivors hold their failed op)
  freeze    --freeze 2@200                        process,    global rank 2 (SIGSTOP: its endpoint stops answering)
  mismatch  --mismatch 1@200                      mismatch,   global rank 1
  kernel    --stuck-kernel 2@200                  kernel,     global rank 2 (an emulated kernel that never ends)
  link      2 ranks in two network namespaces joined by a veth pair that is taken down mid-run: link, between
            global ranks 0 and 1 (skipped, with the reason, where namespaces cannot be created).
Onset is the fault line the rank prints (the moment the link is taken down, for link); the alert time is the
alert's activeAt. --rounds N repeats the fault jobs (fresh job ids); --table prints the docs/measurements.md rows;
--within S is the bound checked (15 s; by design the worst case is the threshold + one scrape + one evaluation
interval: 2 s + 5 + 5, and 5 s + 5 + 5 for a mismatch, whose rank waits in a function it never completed).

After the alerts, every live rank of each hung job is sent SIGUSR2 and `ncclscope-analyze --json --job JOB` over
the jobs' dumps (each job with its own NCCLSCOPE_JOB_ID and dump directory, under one tree) must name one hang
culprit, with exactly the alert's class and global rank (for the link, both ends), and exit 1 (a hang).

Prometheus loads every rule file of rules/ (as deployed). With --alertmanager CONFIG (deploy/alertmanager/
alertmanager.yml) it also sends to a real Alertmanager (Debian's) running that configuration, its receivers
pointed at a webhook receiver in this process and its timers shortened (group_wait 5 s, group_interval 10 s;
grouping and inhibition as shipped): each hang must give exactly one notification while the job hangs, with one
firing NcclscopeHang naming the culprit; and alerts posted straight to it (NcclscopeHang with three victims of
the same communicator) must give one notification with the NcclscopeHang alone (the victims inhibited).
"""
import argparse
import glob
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from prom_server import Server, free_port  # noqa: E402
from hang_support import (ANALYZER, SKIP, Job, Prometheus, analyzer_hang_culprits, firing, forget_targets,  # noqa: E402
                          request_dumps, sim_env)
from netns_link import NetnsLink  # noqa: E402


class Webhook:
    """Alertmanager's webhook receiver: keeps every notification (its JSON body) with the time it came."""

    def __init__(self):
        self.notifications, self.lock = [], threading.Lock()
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with hook.lock:
                    hook.notifications.append((time.time(), self.path, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def for_job(self, job, status="firing"):
        """The notifications of one NCCL job (its groups carry ncclscope_job) with the given status."""
        with self.lock:
            return [n for n in self.notifications
                    if n[2].get("groupLabels", {}).get("ncclscope_job") == job and n[2].get("status") == status]

    def stop(self):
        self.server.shutdown()


class Alertmanager:
    """Debian's Alertmanager on free ports with its own data dir, no cluster, running the example configuration
    with its receivers pointed at the webhook and its timers shortened for the test."""

    def __init__(self, work, config, webhook_port):
        import yaml
        with open(config) as f:
            cfg = yaml.safe_load(f)
        cfg["route"].update(group_wait="5s", group_interval="10s")
        for r in cfg["receivers"]:
            for w in r.get("webhook_configs", []):
                w["url"] = f"http://127.0.0.1:{webhook_port}/{r['name']}"
        path = os.path.join(work, "alertmanager.yml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        self.server = Server(lambda port: ["prometheus-alertmanager", f"--config.file={path}",
                                           f"--storage.path={work}/am-data", f"--web.listen-address=127.0.0.1:{port}",
                                           "--cluster.listen-address="],
                             os.path.join(work, "alertmanager.log"))
        self.port = self.server.port

    def post(self, alerts):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/v2/alerts", data=json.dumps(alerts).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(req, timeout=10).close()

    def stop(self):
        self.server.stop()


def inhibition_check(am, hook):
    """Alerts posted straight to Alertmanager: a root cause and three victims of one communicator, and a victim of
    another communicator of the same job. Want one notification with NcclscopeHang alone for the first, and the
    other communicator's victim notified on its own (inhibition is per communicator)."""
    end = (datetime.now(timezone.utc) + timedelta(minutes=5)).isoformat()
    base = {"ncclscope_job": "am-inhibit", "severity": "critical"}
    hang = dict(base, alertname="NcclscopeHang", comm="0xa1", global_rank="1", host="h1", **{"class": "not_joined"})
    victims = [dict(base, alertname="NcclscopeCommStalled", comm="0xa1", rank="0", global_rank="0", host="h0"),
               dict(base, alertname="NcclscopeCommStalled", comm="0xa1", rank="2", global_rank="2", host="h2"),
               dict(base, alertname="NcclscopeCommRankNotJoining", comm="0xa1", rank="1", global_rank="1", host="h1")]
    other = dict(base, alertname="NcclscopeCommStalled", comm="0xb2", rank="0", global_rank="0", host="h0")
    am.post([{"labels": a, "endsAt": end} for a in [hang] + victims + [other]])
    deadline = time.time() + 40
    while time.time() < deadline and len(hook.for_job("am-inhibit")) < 2:
        time.sleep(0.5)
    time.sleep(12)  # one group_interval more: no second notification may follow
    got = hook.for_job("am-inhibit")
    failures = []
    by_comm = {}
    for _, _, body in got:
        by_comm.setdefault(body["groupLabels"].get("comm"), []).append(sorted(a["labels"]["alertname"] for a in body["alerts"]))
    if by_comm.get("0xa1") != [["NcclscopeHang"]]:
        failures.append(f"Alertmanager inhibition: communicator 0xa1 notified {by_comm.get('0xa1')}, want one "
                        "notification with NcclscopeHang alone (its 3 victims inhibited)")
    if by_comm.get("0xb2") != [["NcclscopeCommStalled"]]:
        failures.append(f"Alertmanager inhibition: communicator 0xb2 notified {by_comm.get('0xb2')}, want its own "
                        "NcclscopeCommStalled (another communicator is not inhibited)")
    print(f"alertmanager inhibition: notifications by communicator {by_comm}")
    return failures


FAULTS = {  # name: (sim args, expected class, expected culprit global rank, stderr marker of the onset)
    "hang": (["--hang", "1@200"], "not_joined", "1", "--hang: stops issuing"),
    "p2p": (["--ops", "sendrecv", "--hang", "1@200"], "not_joined", "1", "--hang: stops issuing"),
    "kill": (["--kill", "1@200", "--hold-on-error", "40"], "process", "1", "--kill: exiting abruptly"),
    "freeze": (["--freeze", "2@200"], "process", "2", "--freeze: stops the whole process"),
    "mismatch": (["--mismatch", "1@200"], "mismatch", "1", "--mismatch: issues"),
    "kernel": (["--stuck-kernel", "2@200"], "kernel", "2", "--stuck-kernel: starts"),
}
COMMON = ["--sizes", "8:8", "--iters", "1000000", "--straggle", "0:50", "--expect-hang"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sim")
    ap.add_argument("libdir")
    ap.add_argument("rules")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--classes", default="hang,p2p,kill,freeze,mismatch,kernel,link")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--within", type=float, default=15.0, help="seconds from onset to alert allowed (15)")
    ap.add_argument("--alertmanager", help="Alertmanager configuration to run (deploy/alertmanager/alertmanager.yml)")
    args = ap.parse_args()
    if not shutil.which("prometheus"):
        print("SKIP: the prometheus server is not installed (scripts/install-deps.sh installs it)")
        return SKIP
    classes = args.classes.split(",")
    work = tempfile.mkdtemp(prefix="ncclscope-hang-live-")
    os.makedirs(os.path.join(work, "sd"))
    env0 = sim_env(args.libdir)
    am = hook = None
    if args.alertmanager:
        if not shutil.which("prometheus-alertmanager"):
            print("SKIP: prometheus-alertmanager is not installed (scripts/install-deps.sh installs it)")
            return SKIP
        hook = Webhook()
        am = Alertmanager(work, args.alertmanager, hook.port)
    rules = sorted(glob.glob(os.path.join(os.path.abspath(args.rules), "*.yml")))
    prom = Prometheus(work, rules, f"127.0.0.1:{am.port}" if am else None)
    jobs, failures, results, links = [], [], {}, []

    def dump_dir(job):  # one job's dumps; the analyzer reads the whole tree with --job, as after a reused dir
        path = os.path.join(work, "dumps", job)
        os.makedirs(path, exist_ok=True)  # the library creates the directory it is given, not its parents
        return path

    def launch(name, argv, marker=None, env_extra=None, sd=None):
        env = dict(env0, NCCLSCOPE_JOB_ID=sd or name, NCCLSCOPE_SD_DIR=os.path.join(work, "sd"),
                   NCCLSCOPE_DUMP_DIR=dump_dir(sd or name))
        env.update(env_extra or {})
        j = Job(name, argv, env, work, marker)
        jobs.append(j)
        return j

    try:
        # Healthy for the whole run: a 400 ms straggler, and operations that take 6 s each.
        launch("healthy-straggle", [args.sim, "--ranks", "2", "--ops", "allreduce,sendrecv", "--sizes", "4K:4K",
                                    "--iters", "1000000", "--straggle", "1:400", "--timeout", "3600"])
        launch("healthy-slow", [args.sim, "--ranks", "2", "--ops", "allreduce", "--sizes", "1M:1M", "--iters",
                                "1000000", "--straggle", "0:6000", "--timeout", "3600"])
        netns_ok, netns_why = True, ""
        if "link" in classes:
            probe = NetnsLink(250)
            try:
                probe.setup()
            except (RuntimeError, OSError) as e:
                netns_ok, netns_why = False, str(e)
            probe.teardown()
            if not netns_ok:
                print(f"SKIP class link: cannot create network namespaces here ({netns_why}); it needs root and "
                      "`ip netns`")
        if am:
            failures += inhibition_check(am, hook)
        for rnd in range(1, args.rounds + 1):
            round_jobs = {}
            for c in classes:
                if c == "link":
                    if not netns_ok:
                        continue
                    link = NetnsLink(rnd)
                    link.setup()
                    links.append(link)
                    name, port = f"link-r{rnd}", free_port()
                    for r in (0, 1):
                        extra = {"RANK": str(r), "LOCAL_RANK": "0", "WORLD_SIZE": "2", "NCCLSCOPE_SOCKET_IFNAME": "vdata",
                                 "NCCLSCOPE_PROM_BIND": link.mgmt_ip[r]}
                        launch(f"{name}-rank{r}", ["ip", "netns", "exec", link.ns[r], args.sim, "--ranks", "2", "--rank",
                                                   str(r), "--root", f"{link.data_ip[0]}:{port}", "--ops", "allreduce",
                                                   "--sizes", "64K:64K", "--iters", "1000000", "--straggle", "0:50",
                                                   "--timeout", "90"], env_extra=extra, sd=name)
                    round_jobs[name] = ("link", None, None, link)
                    continue
                sim_args, cls, culprit, marker = FAULTS[c]
                name = f"{c}-r{rnd}"
                ops = [] if "--ops" in sim_args else ["--ops", "allreduce"]
                j = launch(name, [args.sim, "--ranks", "3", "--timeout", "60"] + ops + COMMON + sim_args, marker)
                round_jobs[name] = (c, cls, culprit, j)
            # The link is taken down once both of its ranks have been scraped for a while, like the others' onset.
            link_onset = {}
            start = time.time()
            seen = {}
            while time.time() - start < 50:
                now = time.time()
                for name, (c, cls, culprit, j) in round_jobs.items():
                    if c == "link" and name not in link_onset and now - start > 11:
                        j.take_down()
                        link_onset[name] = time.time()
                for job, alerts in firing(prom).items():
                    if job in round_jobs and job not in seen:
                        seen[job] = alerts
                    if job and job.startswith("healthy"):
                        failures.append(f"false alarm on healthy job {job}: {alerts[0][0]}")
                if len(seen) == len(round_jobs):
                    break
                time.sleep(0.5)
            # The analyzer over each hung job's dumps (its stall dumps, and every live rank's on SIGUSR2) must name
            # the culprit the alert named, in the same words: the class and the global rank (a link: both ends).
            for name, (c, cls, culprit, j) in round_jobs.items():
                if name not in seen:
                    continue
                labels = seen[name][0][0]
                launches = [k for k in jobs if k.name == name or k.name.startswith(name + "-rank")]
                alert = (labels.get("class"), labels.get("global_rank"))
                # A second dump request 5 s later where the first disagrees: the alert can come before a rank's own
                # stall threshold has passed (its dump then has no `wait` yet), as an operator would dump again.
                for attempt in (1, 2):
                    request_dumps(launches, dump_dir(name))
                    named, rc, verdict = analyzer_hang_culprits(os.path.join(work, "dumps"), name)
                    if c == "link":
                        ends = {labels.get("global_rank"), labels.get("peer_global_rank")}
                        ok = named is not None and len(named) == 1 and named[0][0] == "link" and \
                            {str(named[0][1]), str(named[0][2])} == ends
                    else:
                        ok = named is not None and [(n[0], str(n[1])) for n in named] == [alert]
                    if ok or attempt == 2:
                        break
                    print(f"round {rnd} {name:12s} analyzer, first dumps: {named}: {verdict}; dumping again")
                    time.sleep(5)
                print(f"round {rnd} {name:12s} analyzer (exit {rc}, dump request {attempt}) names "
                      + (", ".join(f"{n[0]} gr{n[1]}" + (f"->gr{n[2]}" if n[2] is not None else "") for n in named)
                         if named is not None else f"nothing: {verdict}")
                      + f"; the alert {alert[0]} gr{alert[1]}: {'same' if ok else 'DIFFERENT'}")
                if not ok or rc != 1:  # the report in full, and the dumps kept, to see why
                    keep = tempfile.mkdtemp(prefix=f"ncclscope-hang-live-{name}-dumps-")
                    shutil.copytree(dump_dir(name), keep, dirs_exist_ok=True)
                    r = subprocess.run([sys.executable, ANALYZER, keep], capture_output=True, text=True, timeout=120)
                    print(f"{name}: the analyzer's report (dumps kept in {keep}):\n{r.stdout[-6000:]}{r.stderr[-600:]}")
                    failures.append(f"{name}: the analyzer names {named} (exit {rc}, want 1 for a hang), the alert "
                                    f"class {alert[0]} global rank {alert[1]}: {verdict}")
            if am:  # each hang's notification, and no second one while the job still hangs
                deadline = time.time() + 30
                while time.time() < deadline and not all(hook.for_job(n) for n in seen):
                    time.sleep(0.5)
                time.sleep(12)  # one group_interval (10 s) more
                for name, (c, cls, culprit, j) in round_jobs.items():
                    if name not in seen:
                        continue
                    got = hook.for_job(name)
                    alerts = [a["labels"] for n in got for a in n[2]["alerts"]]
                    print(f"round {rnd} {name:12s} alertmanager: {len(got)} notification(s): "
                          + "; ".join(f"{a.get('alertname')} class {a.get('class')} gr{a.get('global_rank')}" for a in alerts))
                    want_gr = {"0", "1"} if c == "link" else {culprit}
                    if len(got) != 1 or len(alerts) != 1 or alerts[0].get("alertname") != "NcclscopeHang" \
                            or alerts[0].get("global_rank") not in want_gr:
                        failures.append(f"{name}: Alertmanager sent {len(got)} notification(s) with {alerts}, want one "
                                        f"with one NcclscopeHang naming global rank {'/'.join(sorted(want_gr))}")
            if rnd == 1:  # the dashboard's hang panels show the culprits and the waits while the jobs hang
                root = os.path.dirname(os.path.abspath(args.rules))
                r = subprocess.run([sys.executable, os.path.join(root, "tests/dashboards/check_dashboard.py"),
                                    os.path.join(root, "dashboards/ncclscope-overview.json"), "--prometheus",
                                    f"http://127.0.0.1:{prom.port}", "--require", "17,18"],
                                   capture_output=True, text=True)
                print("dashboard hang panels:", (r.stdout + r.stderr).strip().splitlines()[-1:])
                if r.returncode != 0:
                    failures.append("the dashboard's hang panels (17, 18): " + (r.stdout + r.stderr)[-600:])
            for name, (c, cls, culprit, j) in round_jobs.items():
                onset = link_onset.get(name) if c == "link" else j.onset
                if name not in seen:
                    failures.append(f"{name}: no NcclscopeHang within {time.time() - start:.0f} s of the job's start "
                                    f"(onset {'seen' if onset else 'not seen'})")
                    results.setdefault(c, []).append(None)
                    continue
                labels, active = seen[name][0]
                delay = active - onset if onset else None
                named = f"{labels.get('class')} gr{labels.get('global_rank')}"
                if c == "link":
                    named += f"->gr{labels.get('peer_global_rank')} {labels.get('nic', '')}"
                    ok = labels.get("class") == "link" and {labels.get("global_rank"), labels.get("peer_global_rank")} == {"0", "1"}
                else:
                    ok = labels.get("class") == cls and labels.get("global_rank") == culprit
                if len(seen[name]) != 1:
                    failures.append(f"{name}: {len(seen[name])} alerts, want one per root cause: {seen[name]}")
                if not ok:
                    failures.append(f"{name}: alert names {named}, want {cls or 'link'} gr{culprit or '0/1'}: {labels}")
                if delay is None or delay > args.within:
                    failures.append(f"{name}: onset to alert {delay} s, want <= {args.within:.0f} s")
                print(f"round {rnd} {name:12s} onset->alert {delay:5.1f} s  names {named}" if delay is not None else
                      f"round {rnd} {name:12s} onset not seen; names {named}")
                results.setdefault(c, []).append((delay, named))
            for name, (c, cls, culprit, j) in round_jobs.items():
                for k in [k for k in jobs if k.name == name or k.name.startswith(name + "-rank")]:
                    k.stop()
                forget_targets(os.path.join(work, "sd"), name)
        # The healthy jobs never exported a wait series (the adaptive threshold never fired), let alone an alert.
        for h in ("healthy-straggle", "healthy-slow"):
            n = prom.query(f'count(count_over_time(ncclscope_comm_wait_seconds{{ncclscope_job="{h}"}}[30m]))')
            # (NcclscopeStraggler may be pending on the 400 ms straggler: that one is right.)
            a = prom.query(f'count(count_over_time(ALERTS{{ncclscope_job="{h}", alertname!="NcclscopeStraggler"}}[30m]))')
            ops = prom.query(f'max(sum without (kind) (ncclscope_comm_last_seq{{ncclscope_job="{h}"}}))')
            print(f"{h}: {ops[0]['value'][1] if ops else 0} operations, wait series {n[0]['value'][1] if n else 0}, "
                  f"alerts {a[0]['value'][1] if a else 0}")
            if n or a:
                failures.append(f"{h}: false alarm (wait series {n}, alerts {a})")
            if hook and hook.for_job(h):
                failures.append(f"{h}: Alertmanager notified {hook.for_job(h)}")
            if not ops:
                failures.append(f"{h}: no metrics were scraped: the healthy control did not run")
        if args.table:
            print("\n| class | runs | onset → alert s (min / median / max) | named |")
            print("|---|---|---|---|")
            for c in classes:
                got = [r for r in results.get(c, []) if r]
                if not got:
                    continue
                d = [r[0] for r in got if r[0] is not None]
                names = sorted({r[1] for r in got})
                print(f"| {c} | {len(got)} | {min(d):.1f} / {statistics.median(d):.1f} / {max(d):.1f} | {', '.join(names)} |")
    finally:
        for j in jobs:
            j.stop()
        for link in links:
            link.teardown()
        prom.stop()
        if am:
            am.stop()
            hook.stop()
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"PASS: every hang named within {args.within:.0f} s; no false alarm on the healthy jobs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
