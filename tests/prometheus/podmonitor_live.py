#!/usr/bin/env python3
"""deploy/kubernetes/podmonitor.yaml as prometheus-operator runs it, in a real Prometheus scraping a real emulated
job: `up` carries the job, host and local rank the shipped rules join on, the exposition's identity labels keep
their names (no exported_*), the pod's other ports are not scraped, and a frozen rank is named by the shipped
rules' NcclscopeHang (class process, from its failed scrapes) and by NcclscopeRankDown's expression, with its
global rank and communicator, while NcclscopeRankMissing's expression leaves the down target alone.

What stands in for Kubernetes (named as such): the operator's service discovery. Each rank is a file_sd target
carrying the __meta_kubernetes_* labels kubernetes_sd gives a pod's container port, and the scrape job holds the
target labels the operator sets itself (namespace, pod, container, endpoint, job = <namespace>/<name>) followed
by the PodMonitor's own relabelings, translated key for key. Exit 77 (a ctest skip) when prometheus is missing.

Usage: podmonitor_live.py SIM LIB_DIR SOURCE_DIR"""
import glob
import json
import os
import random
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import check, summary  # noqa: E402
from hang_support import SKIP, Job, firing, sim_env  # noqa: E402
from prom_server import PrometheusServer  # noqa: E402

NAMESPACE, JOB, NODE = "ml", "llm-pretrain", "gpu-node-17"


def snake(key):
    return re.sub(r"[A-Z]", lambda m: "_" + m[0].lower(), key)


def scrape_config(monitor, sd_glob, rule_files):
    """The scrape job prometheus-operator generates for the PodMonitor's first endpoint (the parts that shape the
    targets' labels), over file_sd instead of kubernetes_sd; evaluating RULE_FILES."""
    ep = monitor["spec"]["podMetricsEndpoints"][0]
    operator = [
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "target_label": "endpoint"},
        {"target_label": "job", "replacement": f"{NAMESPACE}/{monitor['metadata']['name']}"},
    ]
    own = [{snake(k): v for k, v in r.items()} for r in ep.get("relabelings", [])]
    return {"global": {"scrape_interval": "5s", "scrape_timeout": "4s", "evaluation_interval": "5s"},
            "rule_files": rule_files,
            "scrape_configs": [{"job_name": f"podMonitor/{NAMESPACE}/{monitor['metadata']['name']}/0",
                                "metrics_path": ep.get("path", "/metrics"),
                                "honor_labels": bool(ep.get("honorLabels", False)),
                                "file_sd_configs": [{"files": [sd_glob], "refresh_interval": "1s"}],
                                "relabel_configs": operator + own}]}


def free_base_port(count):
    """A port P with P..P+COUNT-1 free on loopback: each rank serves on NCCLSCOPE_PROM_PORT + its local rank."""
    while True:
        base = random.randrange(20000, 40000)
        try:
            for port in range(base, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue


def rank_of(url):
    """(local rank, global rank, pid) from the rank's own ncclscope_process_info."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    line = next(ln for ln in text.splitlines() if ln.startswith("ncclscope_process_info{"))
    labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
    return labels["local_rank"], labels["global_rank"], int(labels["pid"])


def pod_targets(base, count, pod_sd):
    """The pod's ports as kubernetes_sd would label them (named ncclscope-<local rank>), plus its other port
    (named http), which the PodMonitor must not scrape. Returns {local rank: (global rank, pid)}."""
    meta = {"__meta_kubernetes_namespace": NAMESPACE, "__meta_kubernetes_pod_name": f"{JOB}-worker-0",
            "__meta_kubernetes_pod_container_name": "trainer", "__meta_kubernetes_pod_node_name": NODE,
            "__meta_kubernetes_pod_label_training_kubeflow_org_job_name": JOB,
            "__meta_kubernetes_pod_label_ncclscope_io_scrape": "true"}
    ranks, groups = {}, []
    for port in range(base, base + count):
        local, global_rank, pid = rank_of(f"http://127.0.0.1:{port}/metrics")
        ranks[local] = (global_rank, pid)
        groups.append({"targets": [f"127.0.0.1:{port}"],
                       "labels": dict(meta, __meta_kubernetes_pod_container_port_name=f"ncclscope-{local}")})
    groups.append({"targets": [f"127.0.0.1:{base}"],
                   "labels": dict(meta, __meta_kubernetes_pod_container_port_name="http")})
    with open(os.path.join(pod_sd, "pod.json.tmp"), "w") as f:
        json.dump(groups, f)
    os.rename(os.path.join(pod_sd, "pod.json.tmp"), os.path.join(pod_sd, "pod.json"))
    return ranks


def wait_for(fetch, want, seconds):
    """FETCH() every second until WANT(its answer) or SECONDS pass; the last answer."""
    deadline, got = time.time() + seconds, []
    while time.time() < deadline:
        got = fetch()
        if want(got):
            break
        time.sleep(1)
    return got


def main():
    sim, libdir, src = sys.argv[1:4]
    if not shutil.which("prometheus"):
        print("SKIP: prometheus is not installed (scripts/install-deps.sh installs it)")
        return SKIP
    monitor = yaml.safe_load(open(os.path.join(src, "deploy/kubernetes/podmonitor.yaml")))
    config_map = yaml.safe_load(open(os.path.join(src, "deploy/kubernetes/configmap.yaml")))
    alerts = yaml.safe_load(open(os.path.join(src, "rules/ncclscope-alerts.yml")))
    expr = {r["alert"]: r["expr"] for g in alerts["groups"] for r in g["rules"] if "alert" in r}
    rank_down, rank_missing = expr["NcclscopeRankDown"], expr["NcclscopeRankMissing"]

    work = tempfile.mkdtemp(prefix="ncclscope-podmonitor-")
    pod_sd = os.path.join(work, "pod-sd")
    os.makedirs(pod_sd)
    # As the example pod runs a rank: the ConfigMap's identity mode, ports from a base (no file_sd of its own), the
    # node name and the job from the pod.
    base = free_base_port(2)
    env = dict(sim_env(libdir), NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_PROM_PORT=str(base), NODE_NAME=NODE,
               NCCLSCOPE_JOB_ID=JOB,
               NCCLSCOPE_PROM_IDENTITY_LABELS=config_map["data"]["NCCLSCOPE_PROM_IDENTITY_LABELS"])
    job = Job("job", [sim, "--ranks", "2", "--sizes", "64K:64K", "--iters", "100000000", "--timeout", "300"], env, work)
    prom = None
    try:
        deadline = time.time() + 60
        while True:
            try:
                ranks = pod_targets(base, 2, pod_sd)
                break
            except (OSError, StopIteration, KeyError):
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        cfg = os.path.join(work, "prometheus.yml")
        with open(cfg, "w") as f:
            yaml.safe_dump(scrape_config(monitor, os.path.join(pod_sd, "*.json"),
                                         sorted(glob.glob(os.path.join(src, "rules", "*.yml")))), f)
        prom = PrometheusServer(cfg, work)

        target = f'up{{job="{NAMESPACE}/{monitor["metadata"]["name"]}"}}'
        up = wait_for(lambda: prom.query(target + " == 1"), lambda r: len(r) == 2, 120)
        check(len(up) == 2 and len(prom.query(target)) == 2,
              f"the two ranks' ports are scraped and the pod's http port is not ({len(prom.query(target))} targets)")
        if len(up) != 2:
            print("--- Prometheus's targets\n" + prom.targets_report())
        for series in up:
            m = series["metric"]
            lr = m.get("local_rank", "?")
            check(m.get("ncclscope_job") == JOB and m.get("host") == NODE and lr in ranks,
                  f"up of {m.get('endpoint')}: ncclscope_job={m.get('ncclscope_job')} host={m.get('host')} "
                  f"local_rank={lr}")
        exported = prom.query('count({__name__=~"ncclscope_.+", exported_ncclscope_job!=""} or '
                              '{__name__=~"ncclscope_.+", exported_host!=""} or '
                              '{__name__=~"ncclscope_.+", exported_local_rank!=""})')
        check(not exported, "no exposition label renamed exported_* (honorLabels)")
        info = wait_for(lambda: prom.query(f'ncclscope_comm_info{{ncclscope_job="{JOB}"}}'), lambda r: len(r) >= 2, 30)
        check(sorted(s["metric"].get("global_rank", "") for s in info) == ["0", "1"],
              f"ncclscope_comm_info names both global ranks under the operator's labels ({len(info)} series)")
        count = prom.query('count by (ncclscope_job) (up{ncclscope_job!=""})')
        check([c["value"][1] for c in count] == ["2"], "the rules' ranks-up count sees both targets")
        # `up` has no global_rank here: the hang rules take each target's from its ncclscope_process_info.
        mapped = wait_for(lambda: prom.query(f'ncclscope:target_global_rank{{ncclscope_job="{JOB}"}}'),
                          lambda r: len(r) >= 2, 60)
        check(sorted(s["metric"].get("global_rank", "") for s in mapped) == ["0", "1"],
              f"ncclscope:target_global_rank gives both targets their global rank ({len(mapped)} series)")

        # Freeze local rank 1: its scrapes time out (up 0), rank 0 waits on it; RankDown names it.
        frozen_global, frozen_pid = ranks["1"]
        os.kill(frozen_pid, signal.SIGSTOP)
        t0 = time.time()
        try:
            # The rule has no `for`: it fires at its first true evaluation.
            hang = wait_for(lambda: firing(prom).get(JOB, []), lambda r: len(r) >= 1, 90)
            hang_s = time.time() - t0
            down = wait_for(lambda: prom.query(rank_down), lambda r: len(r) >= 1, 60)
            # Its series went stale with its failed scrapes; a down target is RankDown's, not RankMissing's.
            missing = prom.query(rank_missing)
        finally:
            os.kill(frozen_pid, signal.SIGCONT)
        named = sorted({(s["metric"].get("global_rank"), s["metric"].get("host")) for s in down})
        check(named == [(frozen_global, NODE)] and all(s["metric"].get("comm") for s in down),
              f"NcclscopeRankDown's expression names the frozen rank: {named} with its communicator(s)")
        check(missing == [], "NcclscopeRankMissing's expression leaves the down target to RankDown: "
              f"{[s['metric'].get('global_rank') for s in missing]}")
        culprits = sorted({(labels.get("global_rank"), labels.get("class")) for labels, _ in hang})
        check(culprits == [(frozen_global, "process")],
              f"NcclscopeHang (the shipped rules) names the frozen rank, {hang_s:.0f} s after the freeze: "
              f"(global rank, class) {culprits}")
        via = prom.query(f'count by (via) (last_over_time(ncclscope:hang_culprit{{ncclscope_job="{JOB}"}}[5m]))')
        print(f"podmonitor identity: the culprit was recorded via {sorted(v['metric'].get('via', '') for v in via)}"
              " (silent_edge: its overdue or failed scrape; failed_edge: a peer's failed connection; "
              "empty: failed scrapes)")
    finally:
        if prom:
            prom.stop()
        job.stop()
    if summary(context=f"logs in {work}"):
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("podmonitor identity: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
