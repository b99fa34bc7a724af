"""What the live hang tests share (tests/prometheus/hang_live.py, hang_matrix.py): a real Prometheus scraping the
emulated jobs every 5 s through file_sd with every rule file loaded, one ncclscope-sim launch per job with its
stderr lines time-stamped, the firing NcclscopeHang alerts by job, and the removal of an ended job's targets.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime

from prom_server import PrometheusServer, http_get

SKIP = 77


# The hang classes the emulated job makes.
CLASSES = {  # name: (sim args for culprit C at sequence S, expected class, stderr marker of the onset)
    "hang": (lambda c, s: ["--ops", "allreduce", "--hang", f"{c}@{s}"], "not_joined", "--hang: stops issuing"),
    "p2p": (lambda c, s: ["--ops", "sendrecv", "--hang", f"{c}@{s}"], "not_joined", "--hang: stops issuing"),
    "kill": (lambda c, s: ["--ops", "allreduce", "--kill", f"{c}@{s}", "--hold-on-error", "120"], "process",
             "--kill: exiting abruptly"),
    "freeze": (lambda c, s: ["--ops", "allreduce", "--freeze", f"{c}@{s}"], "process", "--freeze: stops the whole"),
    "mismatch": (lambda c, s: ["--ops", "allreduce", "--mismatch", f"{c}@{s}"], "mismatch", "--mismatch: issues"),
    "kernel": (lambda c, s: ["--ops", "allreduce", "--stuck-kernel", f"{c}@{s}"], "kernel", "--stuck-kernel: starts"),
}


def sim_env(libdir):
    """The environment every emulated job starts from: the plugin on the library path, its endpoint on a free
    loopback port, its traffic on lo."""
    return dict(os.environ, LD_LIBRARY_PATH=libdir + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
                NCCLSCOPE_PROM_PORT="0", NCCLSCOPE_PROM_BIND="127.0.0.1", NCCLSCOPE_SOCKET_IFNAME="lo")


class Prometheus(PrometheusServer):
    """Prometheus scraping WORK/sd/*.json (file_sd, refreshed every second) every 5 s (timeout 4 s), evaluating
    RULES (rule files) every 5 s, sending to ALERTMANAGER (host:port) if given."""

    def __init__(self, work, rules, alertmanager=None):
        self.work = work
        cfg = os.path.join(work, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global: {scrape_interval: 5s, scrape_timeout: 4s, evaluation_interval: 5s}\n")
            f.write(f"rule_files: {json.dumps(rules)}\n")
            if alertmanager:
                f.write(f"alerting: {{alertmanagers: [{{static_configs: [{{targets: ['{alertmanager}']}}]}}]}}\n")
            f.write("scrape_configs:\n  - job_name: ncclscope\n")
            f.write(f"    file_sd_configs: [{{files: ['{work}/sd/*.json'], refresh_interval: 1s}}]\n")
        super().__init__(cfg, work)

    def get(self, path, **params):
        return self.api(path, **params)


class Job:
    """One ncclscope-sim launch (or a rank of it); its stderr lines are time-stamped as they arrive."""

    def __init__(self, name, argv, env, log_dir, marker=None):
        self.name, self.marker, self.onset = name, marker, None
        self.log = open(os.path.join(log_dir, name + ".log"), "w")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            now = time.time()
            self.log.write(f"[{now:.3f}] {line}")
            self.log.flush()
            if self.marker and self.onset is None and self.marker in line:
                self.onset = now

    def members(self, stopped=True):
        """The pids of the launch's process group (its own session) other than the launcher: the ranks still
        alive; those stopped (SIGSTOP) too unless STOPPED is false."""
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == self.proc.pid:
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == self.proc.pid and fields[0] != "Z" and (stopped or fields[0] not in "Tt"):
                pids.append(int(d))
        return sorted(pids)

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
        self.proc.wait()


ANALYZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "analyze",
                        "ncclscope_analyze.py")


def dump_files(d):
    return {p for p in glob.glob(os.path.join(d, "**", "*"), recursive=True)
            if os.path.isfile(p) and not os.path.basename(p).startswith(".")}


def request_dumps(jobs, dump_dir, wait_s=20):
    """SIGUSR2 to every live rank of the launches `jobs` (one job's); waits until each rank that can (not stopped)
    has written a new dump into dump_dir and the directory is quiet, or WAIT_S. Returns (ranks, ranks able)."""
    before = {p: os.path.getmtime(p) for p in dump_files(dump_dir)}
    pids = [pid for j in jobs for pid in j.members()]
    able = [pid for j in jobs for pid in j.members(stopped=False)]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGUSR2)
        except ProcessLookupError:
            pass
    deadline, last, quiet_since = time.time() + wait_s, None, time.time()
    while time.time() < deadline:
        now_files = {p: os.path.getmtime(p) for p in dump_files(dump_dir)}
        fresh = [p for p, m in now_files.items() if before.get(p) != m]
        if now_files != last:
            last, quiet_since = now_files, time.time()
        if len(fresh) >= len(able) and time.time() - quiet_since >= 1.0:
            break
        time.sleep(0.25)
    return len(pids), len(able)


def analyzer_hang_culprits(dump_dir, job_id):
    """ncclscope-analyze --json --job JOB_ID over the dumps: (its NcclscopeHang culprits as (class, global rank,
    peer's global rank or None), exit status, verdict); the culprits None when its report cannot be read."""
    r = subprocess.run([sys.executable, ANALYZER, dump_dir, "--json", "--jobs", "1", "--job", job_id],
                       capture_output=True, text=True, timeout=120)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        return None, r.returncode, (r.stderr or r.stdout)[-300:]
    named = [(c.get("class"), c.get("global_rank"), (c.get("peer") or {}).get("global_rank"))
             for c in out.get("culprits", []) if c.get("alert") == "NcclscopeHang"]
    return named, r.returncode, out.get("verdict")


def parse_time(s):
    """RFC 3339 with up to nanoseconds, as Prometheus writes activeAt."""
    base, _, frac = s.rstrip("Z").partition(".")
    return datetime.fromisoformat(base + "+00:00").timestamp() + (float("0." + frac) if frac else 0.0)


def hang_alerts(port):
    """NcclscopeHang alerts firing now at the rule engine on PORT (Prometheus's and vmalert's API alike):
    [(labels, activeAt)]."""
    d = json.loads(http_get(port, "/api/v1/alerts", timeout=60))
    if d.get("status") != "success":
        raise RuntimeError(f"/api/v1/alerts: {d}")
    return [(a["labels"], parse_time(a["activeAt"])) for a in d["data"]["alerts"]
            if a["labels"].get("alertname") == "NcclscopeHang" and a["state"] == "firing"]


def firing(prom):
    """NcclscopeHang alerts firing now, by ncclscope_job: [(labels, activeAt)]."""
    out = {}
    for labels, active in hang_alerts(prom.port):
        out.setdefault(labels.get("ncclscope_job"), []).append((labels, active))
    return out


def forget_targets(sd, job):
    """Removes an ended job's file_sd targets (its ranks are gone; the grace period would keep them a while)."""
    for f in os.listdir(sd):
        try:
            with open(os.path.join(sd, f)) as fh:
                if any(t["labels"].get("ncclscope_job") == job for t in json.load(fh)):
                    os.unlink(os.path.join(sd, f))
        except (OSError, ValueError, KeyError, TypeError):
            pass
