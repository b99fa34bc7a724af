"""Real Prometheus and Alertmanager servers for the Python tests: started on a free loopback port and waited for
until ready (retried on another port if the first is taken between the probe and the bind, or if the answer came from
another test's server on that port), read through their HTTP API, stopped.
"""
import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def listens_on(pid, port):
    """Whether process PID holds the listening TCP socket on 127.0.0.1:PORT. A server that lost the race for its
    port exits, but until then its ready probe can be answered by the winner: another test's server."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(fields[9])
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


def http_get(port, path, params=None, timeout=30):
    """The body of GET http://127.0.0.1:PORT/PATH?PARAMS, as bytes."""
    url = f"http://127.0.0.1:{port}{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


class Server:
    """The program make_argv(port) gives, logging to LOG_PATH, once GET /-/ready answers on its port; raises
    RuntimeError with the log's tail when it will not start."""

    def __init__(self, make_argv, log_path, env=None, attempts=5, ready_s=60):
        self.log_path = log_path
        for _ in range(attempts):
            self.port = free_port()
            with open(log_path, "w") as log:
                self.proc = subprocess.Popen(make_argv(self.port), stdout=log, stderr=subprocess.STDOUT, env=env)
            deadline = time.time() + ready_s
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    http_get(self.port, "/-/ready", timeout=2)
                    if listens_on(self.proc.pid, self.port):
                        return
                    break  # another server answered on our port: ours cannot bind it
                except OSError:
                    time.sleep(0.2)
            self.stop()
        with open(log_path) as f:
            raise RuntimeError(f"{make_argv(0)[0]} would not start: " + f.read()[-2000:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class PrometheusServer(Server):
    """`prometheus --config.file=CONFIG` with its data and log in WORK, plus EXTRA_ARGS."""

    def __init__(self, config, work, extra_args=(), env=None):
        super().__init__(lambda port: ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work}/data",
                                       f"--web.listen-address=127.0.0.1:{port}", *extra_args],
                         os.path.join(work, "prometheus.log"), env)

    def api(self, path, **params):
        """The `data` of an API answer, which must be a success."""
        d = json.loads(http_get(self.port, path, params, timeout=60))
        if d.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {d}")
        return d["data"]

    def query(self, expr):
        return self.api("/api/v1/query", query=expr)["result"]

    def targets_report(self):
        """A line per target: its URL, health, last scrape and last error; for a test that waited in vain."""
        lines = []
        for t in self.api("/api/v1/targets")["activeTargets"]:
            lines.append(f"    {t['scrapeUrl']} {t['health']} last scrape {t['lastScrape']} "
                         f"({t.get('lastScrapeDuration', 0):.3f} s) {t.get('lastError') or ''}")
        return "\n".join(lines) or "    (no active targets)"
