#!/usr/bin/env python3
"""The largest live emulated job this machine holds, watched by a real Prometheus with rules/ncclscope-hang.yml.

Runs build/bin/ncclscope-sim --ranks N with a hang (default rank 5 stops issuing at op 200) and a straggler,
every rank serving its metrics on 127.0.0.1 and writing a file_sd target; Prometheus scrapes them every 5 s
and evaluates the hang rules every 5 s. Measures: how many targets come up, the ranks' total RSS (sampled every
2 s, the largest sum), Prometheus's RSS, the hang group's evaluation time, and onset -> NcclscopeHang: the onset
is when the sim's `--hang` line reaches its stderr, the firing time the alert's activeAt (from /api/v1/alerts),
and when this script first saw it firing. Passes when NcclscopeHang names the hung rank with class not_joined;
every other NcclscopeHang label set seen firing (a wrong culprit while the ranks' scrapes disagree at the onset)
is listed with how long it fired.

Manual (not in ctest):
  tests/scale/live_big_job.py --ranks 256 [--build build] [--json out.json]
Exit status: 0 pass, 1 fail, 77 prometheus or the sim missing.
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from prom_server import PrometheusServer, http_get  # noqa: E402


def get(port, path, params=None, timeout=30):
    return json.loads(http_get(port, path, params, timeout))


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def parse_time(s):
    # RFC 3339 with nanoseconds, e.g. 2026-11-28T09:01:02.123456789Z
    s = s.rstrip("Z")
    if "." in s:
        head, frac = s.split(".", 1)
        s = head + "." + frac[:6]
    return datetime.datetime.fromisoformat(s).replace(tzinfo=datetime.timezone.utc).timestamp()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--hang", default="5@200")
    ap.add_argument("--straggle", default="0:20")
    ap.add_argument("--timeout", type=int, default=90, help="the sim's --timeout")
    ap.add_argument("--sim-args", default="--ops allreduce --sizes 8:8 --iters 1000000",
                    help="more sim arguments (default: allreduces of 8 bytes until the timeout)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    sim = os.path.join(a.build, "bin", "ncclscope-sim")
    if not shutil.which("prometheus") or not os.access(sim, os.X_OK):
        print("SKIP: prometheus or ncclscope-sim missing")
        return 77
    culprit = a.hang.split("@")[0]
    work = tempfile.mkdtemp(prefix="ncclscope-bigjob-")
    os.makedirs(f"{work}/sd")
    with open(f"{work}/prometheus.yml", "w") as f:
        f.write("global: {scrape_interval: 5s, evaluation_interval: 5s}\n"
                f"rule_files: ['{ROOT}/rules/ncclscope-hang.yml']\n"
                "scrape_configs:\n  - job_name: ncclscope\n"
                f"    file_sd_configs: [{{files: ['{work}/sd/*.json'], refresh_interval: 5s}}]\n")
    server = PrometheusServer(f"{work}/prometheus.yml", work)
    prom, port = server.proc, server.port
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(a.build, "lib"), NCCLSCOPE_SD_DIR=f"{work}/sd",
               NCCLSCOPE_PROM_PORT="0", NCCLSCOPE_PROM_BIND="127.0.0.1", NCCLSCOPE_SOCKET_IFNAME="lo",
               NCCLSCOPE_JOB_ID="bigjob")
    cmd = [sim, "--ranks", str(a.ranks), "--hang", a.hang, "--straggle", a.straggle, "--expect-hang",
           "--timeout", str(a.timeout)] + a.sim_args.split()
    print("$ " + " ".join(cmd), flush=True)
    fig = {"ranks": a.ranks, "command": " ".join(cmd), "culprit_expected": culprit}
    t_start = time.time()
    simp = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    onset = {}
    lines = []

    def read_err():
        for line in simp.stderr:
            lines.append(line)
            if "--hang: stops issuing" in line and "t" not in onset:
                onset["t"] = time.time()
                onset["line"] = line.strip()
                print(f"onset {onset['t'] - t_start:.1f} s after start: {line.strip()}", flush=True)

    def read_out():
        for line in simp.stdout:
            lines.append(line)

    threads = [threading.Thread(target=read_err, daemon=True), threading.Thread(target=read_out, daemon=True)]
    for t in threads:
        t.start()
    # targets_down_max: the most targets down at once (a rank alive but too slow to answer a scrape in time).
    peak = {"ranks_rss_kib": 0, "procs": 0, "prom_rss_kib": 0, "targets_up": 0, "targets_down_max": 0}
    firing = None
    seen_firing_t = None
    eval_times = []
    instances = {}  # every NcclscopeHang label set seen firing: a wrong culprit at the onset shows here
    last_current = set()
    last_sample = 0
    ok = True
    try:
        while simp.poll() is None:
            now = time.time()
            if now - last_sample >= 2:
                last_sample = now
                procs = descendants(simp.pid)
                total = sum(rss_kib(p) for p in procs)
                if total > peak["ranks_rss_kib"]:
                    peak["ranks_rss_kib"], peak["procs"] = total, len(procs)
                peak["prom_rss_kib"] = max(peak["prom_rss_kib"], rss_kib(prom.pid))
                try:
                    up = get(port, "/api/v1/query", {"query": 'count(up{ncclscope_job="bigjob"} == 1)'})
                    res = up["data"]["result"]
                    n_up = int(float(res[0]["value"][1])) if res else 0
                    down = get(port, "/api/v1/query", {"query": 'count(up{ncclscope_job="bigjob"} == 0)'})
                    res = down["data"]["result"]
                    n_down = int(float(res[0]["value"][1])) if res else 0
                    if n_down > peak["targets_down_max"]:
                        peak["targets_down_max"] = n_down
                        peak["first_down_after_s"] = peak.get("first_down_after_s", round(now - t_start, 1))
                    if n_up > peak["targets_up"]:
                        peak["targets_up"] = n_up
                        peak["all_up_after_s"] = round(now - t_start, 1)
                    for g in get(port, "/api/v1/rules")["data"]["groups"]:
                        if g["name"] == "ncclscope.hang" and g.get("lastEvaluation"):
                            if not eval_times or eval_times[-1][0] != g["lastEvaluation"]:
                                eval_times.append((g["lastEvaluation"], g["evaluationTime"]))
                except Exception as e:  # noqa: BLE001 - a slow answer under load is not a failure
                    print(f"query failed: {e!r}", flush=True)
            try:
                current = set()
                for x in get(port, "/api/v1/alerts")["data"]["alerts"]:
                    if x["labels"].get("alertname") != "NcclscopeHang" or x["state"] != "firing":
                        continue
                    key = tuple(sorted(x["labels"].items()))
                    current.add(key)
                    if key not in instances:
                        instances[key] = {"labels": x["labels"], "activeAt": x.get("activeAt"),
                                          "first_seen": time.time(), "summary": x["annotations"].get("summary")}
                        print(f"NcclscopeHang firing {time.time() - t_start:.1f} s after start: {x['labels']}",
                              flush=True)
                    instances[key]["last_seen"] = time.time()
                if current:
                    last_current = current
                    if firing is None:
                        for key in current:
                            lab = dict(key)
                            if lab.get("global_rank") == culprit and lab.get("class") == "not_joined":
                                firing, seen_firing_t = instances[key], instances[key]["first_seen"]
            except Exception as e:  # noqa: BLE001 - a slow answer under load is not a failure
                print(f"alerts query failed: {e!r}", flush=True)
            time.sleep(0.5)
        rc = simp.wait()
        for t in threads:
            t.join(timeout=5)
        fig["sim_exit"] = rc
        fig["wall_s"] = round(time.time() - t_start, 1)
        fig.update(peak)
        fig["ranks_rss_per_rank_mib"] = round(peak["ranks_rss_kib"] / max(1, a.ranks) / 1024, 1)
        evs = [t for _, t in eval_times]
        if evs:
            fig["hang_group_eval_s"] = {"evaluations_seen": len(evs), "median": sorted(evs)[len(evs) // 2],
                                        "max": max(evs)}
        if "t" in onset:
            fig["onset_line"] = onset["line"]
            fig["onset_after_start_s"] = round(onset["t"] - t_start, 1)
        fig["hang_alerts_seen"] = [
            {"labels": v["labels"], "activeAt": v["activeAt"], "still_firing_at_end": k in last_current,
             "seen_s": round(v["last_seen"] - v["first_seen"], 1),
             "onset_to_activeAt_s": round(parse_time(v["activeAt"]) - onset["t"], 1) if "t" in onset else None}
            for k, v in instances.items()]
        if firing:
            fig["alert_labels"] = firing["labels"]
            fig["alert_summary"] = firing.get("summary", "")
            fig["activeAt"] = firing.get("activeAt")
            if "t" in onset:
                fig["onset_to_activeAt_s"] = round(parse_time(firing["activeAt"]) - onset["t"], 1)
                fig["onset_to_seen_firing_s"] = round(seen_firing_t - onset["t"], 1)
        print(json.dumps(fig, indent=1))
        if rc != 0:
            print(f"FAIL: ncclscope-sim exited {rc}; its last lines:\n" + "".join(lines[-15:]))
            ok = False
        if not firing:
            print(f"FAIL: NcclscopeHang should name global rank {culprit}, class not_joined")
            ok = False
        wrong = [v for k, v in instances.items() if v is not firing]
        if wrong:
            print(f"note: NcclscopeHang also fired for {len(wrong)} other label set(s): "
                  f"{[(v['labels'].get('class'), v['labels'].get('global_rank')) for v in wrong]}")
    finally:
        if simp.poll() is None:
            simp.send_signal(signal.SIGTERM)
            simp.wait(timeout=60)
        prom.send_signal(signal.SIGTERM)
        prom.wait(timeout=60)
        fig["ok"] = ok
        if a.json:
            with open(a.json, "w") as f:
                json.dump(fig, f, indent=1)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
