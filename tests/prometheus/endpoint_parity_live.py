#!/usr/bin/env python3
"""The endpoint at parity with the Prometheus client libraries, live: an emulated 2-rank job, one of its ranks asked
with curl for the text format, gzip, OpenMetrics, a kept-alive pair of requests, the landing page and /healthz (each
response's headers and size printed); `promtool check metrics` on the text, the OpenMetrics parser of Python's
prometheus_client (strict) on OpenMetrics, both holding the same series; a web config's response headers on every
response; a real Prometheus (which negotiates OpenMetrics) scraping the rank; the rank's CPU per scrape and bytes
per scrape for each encoding, against the plain text of the same run; and over TLS, the CPU per scrape with a
handshake each time (as before keep-alive) against one kept-alive connection.

  endpoint_parity_live.py SIM LIBDIR
"""
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import check, summary  # noqa: E402
from hang_support import SKIP, Prometheus, sim_env  # noqa: E402

PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
SCRAPES = 200  # per encoding, for the CPU figure


def curl(urls, *headers, verbose=False):
    """(the response headers, with -v curl's account of the connection; the body) of curl GETs of URLS (one
    URL or a list, fetched in one curl run)."""
    argv = ["curl", "-sS", "--dump-header", "/dev/stderr", *([urls] if isinstance(urls, str) else urls)]
    for h in headers:
        argv += ["-H", h]
    if verbose:
        argv.insert(1, "-v")
    r = subprocess.run(argv, capture_output=True, timeout=30)
    return r.stderr.decode(errors="replace"), r.stdout


def show(name, head, body):
    lines = [ln for ln in head.splitlines() if ln and not ln.startswith(("*", ">", "{", "}"))]
    print(f"--- {name}: {len(body)} bytes")
    for ln in lines:
        print("    " + ln.lstrip("< "))


def samples(parse, text):
    """{(name, sorted labels)} of an exposition, by the given prometheus_client parser."""
    return {(s.name, tuple(sorted(s.labels.items()))) for f in parse(text) for s in f.samples}


def strict_parsers():
    """prometheus_client's text and OpenMetrics parsers (Debian's python3-prometheus-client), from this Python
    or the system's."""
    try:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
        from prometheus_client.parser import text_string_to_metric_families as text
        return text, om
    except ImportError:
        return None


def http_thread_cpu_seconds(pid):
    """CPU time of the rank's endpoint thread, which collects, encodes and sends every scrape (the job's own
    threads, busy with its collectives, are left out)."""
    for task in glob.glob(f"/proc/{pid}/task/*"):
        with open(os.path.join(task, "comm")) as f:
            if f.read().strip() != "ncclscope-http":
                continue
        with open(os.path.join(task, "schedstat")) as f:  # nanoseconds on the CPU, not 10 ms clock ticks
            return int(f.read().split()[0]) / 1e9
    raise RuntimeError(f"no ncclscope-http thread in process {pid}")


def scrape_cost(url, pid, headers):
    """(CPU ms of the rank per scrape, bytes per scrape) over SCRAPES kept-alive scrapes, each >= 300 ms apart from
    the endpoint's 250 ms response reuse so that every one is collected and encoded; a query string that changes
    each time keeps them apart too)."""
    import http.client
    host, port = url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    size, c0 = 0, http_thread_cpu_seconds(pid)
    for _ in range(SCRAPES // 10):
        for _ in range(10):
            conn.request("GET", "/metrics?n=%d" % time.monotonic_ns(), headers=headers)
            size += len(conn.getresponse().read())
        time.sleep(0.3)
    return (http_thread_cpu_seconds(pid) - c0) * 1000 / (SCRAPES // 10 * 10), size / (SCRAPES // 10 * 10)


def start_job(sim, env, work, name):
    """An emulated 2-rank job; returns (process, the URL of its first rank, that rank's pid)."""
    sd = env["NCCLSCOPE_SD_DIR"]
    job = subprocess.Popen([sim, "--ranks", "2", "--sizes", "64K:64K", "--iters", "100000000", "--timeout", "300"],
                           env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, name + ".log"), "w"))
    deadline = time.time() + 60
    while time.time() < deadline and len(glob.glob(os.path.join(sd, "*.json"))) < 2:
        time.sleep(0.5)
    first = sorted(glob.glob(os.path.join(sd, "*.json")))[0]
    target = json.load(open(first))[0]["targets"][0]
    return job, target, int(re.search(r"-(\d+)-", os.path.basename(first))[1])


def stop_job(job):
    job.terminate()
    try:
        job.wait(30)
    except subprocess.TimeoutExpired:
        job.kill()


def tls_cost(sim, libdir, work):
    """The endpoint thread's CPU per scrape over TLS: a new connection (a handshake) each scrape, as before
    keep-alive, against one kept-alive connection; prints both and says whether the connection was reused."""
    import http.client
    import ssl
    d = os.path.join(work, "tls")
    os.makedirs(os.path.join(d, "sd"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout", f"{d}/key.pem", "-out", f"{d}/cert.pem"],
                   check=True, capture_output=True)
    with open(f"{d}/web.yml", "w") as f:
        f.write(f"tls_server_config:\n  cert_file: {d}/cert.pem\n  key_file: {d}/key.pem\n")
    env = dict(sim_env(libdir), NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SD_DIR=f"{d}/sd",
               NCCLSCOPE_PROM_WEB_CONFIG=f"{d}/web.yml", NCCLSCOPE_JOB_ID=f"parity-tls-{os.getpid()}")
    job, target, pid = start_job(sim, env, d, "job")
    try:
        host, port = target.split(":")
        ctx = ssl.create_default_context(cafile=f"{d}/cert.pem")
        ctx.check_hostname = False
        n = 100

        def scrapes(reuse):
            conn, socks = None, set()
            c0 = http_thread_cpu_seconds(pid)
            for i in range(n):
                if conn is None or not reuse:
                    if conn:
                        conn.close()
                    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=10)
                conn.request("GET", f"/metrics?n={i}")
                conn.getresponse().read()
                socks.add(id(conn.sock))
                if i % 10 == 9:
                    time.sleep(0.3)  # past the 250 ms response reuse
            conn.close()
            return (http_thread_cpu_seconds(pid) - c0) * 1000 / n, len(socks)

        fresh, _ = scrapes(False)
        kept, connections = scrapes(True)
        print(f"--- TLS, the endpoint thread's CPU per scrape ({n} each): a handshake each time {fresh:.3f} ms, "
              f"kept alive {kept:.3f} ms ({kept / fresh:.2f}x)")
        check(connections == 1, f"TLS: {n} scrapes went over {connections} kept-alive connection(s)")
    finally:
        stop_job(job)


def main():
    sim, libdir = sys.argv[1], sys.argv[2]
    for tool in ("curl", "promtool", "prometheus", "openssl"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} is not installed (scripts/install-deps.sh installs it)")
            return SKIP
    parsers = strict_parsers()
    if parsers is None and sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    if parsers is None:
        print("SKIP: prometheus_client is not installed (Debian's python3-prometheus-client; install-deps.sh)")
        return SKIP
    work = tempfile.mkdtemp(prefix="ncclscope-parity-")
    sd = os.path.join(work, "sd")
    os.makedirs(sd)
    web = os.path.join(work, "web.yml")
    with open(web, "w") as f:
        f.write("http_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-Content-Type-Options: nosniff\n")
    env = dict(sim_env(libdir), NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SD_DIR=sd, NCCLSCOPE_PROM_WEB_CONFIG=web,
               NCCLSCOPE_JOB_ID=f"parity-{os.getpid()}")
    prom = None
    job, target, rank_pid = start_job(sim, env, work, "job")
    try:
        url = f"http://{target}"
        time.sleep(2)

        head, text = curl(url + "/metrics")
        show("text (no Accept)", head, text)
        check("Content-Type: text/plain; version=0.0.4" in head, "text: the 0.0.4 content type")
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True)
        check(lint.returncode == 0, f"text: promtool check metrics ({lint.stdout.decode().strip() or 'clean'})")

        head, packed = curl(url + "/metrics", "Accept-Encoding: gzip")
        show("gzip", head, packed)
        check("Content-Encoding: gzip" in head, "gzip: Content-Encoding: gzip")
        unpacked = gzip.decompress(packed)
        check(unpacked.startswith(b"# HELP"), f"gzip: inflates to the exposition ({len(unpacked)} bytes)")

        head, om = curl(url + "/metrics", "Accept: " + PROMETHEUS_ACCEPT)
        show("OpenMetrics (Prometheus's Accept)", head, om)
        check("application/openmetrics-text; version=1.0.0" in head, "OpenMetrics: its content type")
        check(om.endswith(b"# EOF\n"), "OpenMetrics: ends with # EOF")
        text_parse, om_parse = parsers
        try:
            om_series = samples(om_parse, om.decode())
            text_series = samples(text_parse, text.decode())
            check(bool(om_series) and om_series == text_series,
                  f"OpenMetrics: the strict parser reads {len(om_series)} samples, the same series as the text's "
                  f"{len(text_series)}")
        except ValueError as e:
            check(False, f"OpenMetrics: the strict parser refused it: {e}")

        head, _ = curl([url + "/metrics", url + "/healthz"], verbose=True)
        reused = "Re-using existing connection" in head
        print("--- keep-alive: curl /metrics then /healthz on one connection")
        for ln in head.splitlines():
            if ln.startswith(("* Connected", "* Re-using", "< HTTP", "* Connection #")):
                print("    " + ln)
        check(reused and "Connection: close" not in head, "keep-alive: the second request reused the connection")

        for path, want in (("/", b"<a href=\"/metrics\">"), ("/healthz", b"ok\n")):
            head, body = curl(url + path)
            show(path, head, body)
            check(head.startswith("HTTP/1.1 200") and want in body, f"{path}: 200 with its page")
            check("X-Frame-Options: deny" in head and "X-Content-Type-Options: nosniff" in head,
                  f"{path}: the web config's headers")
        head, _ = curl(url + "/nope")
        check(head.startswith("HTTP/1.1 404") and "X-Frame-Options: deny" in head, "/nope: 404 with the headers")

        prom = Prometheus(work, [])
        deadline, up = time.time() + 120, []  # the first scrapes; slow only on a starved host
        while time.time() < deadline:
            up = prom.query('up{job="ncclscope"} == 1')
            if len(up) == 2:
                break
            time.sleep(1)
        check(len(up) == 2, f"Prometheus (negotiating OpenMetrics) scrapes both ranks: {len(up)} up")
        if len(up) != 2:
            print("--- Prometheus's targets\n" + prom.targets_report())
        counters = prom.query('count({__name__=~"ncclscope_.*_total"})')
        check(bool(counters) and float(counters[0]["value"][1]) > 0,
              "Prometheus stores the counters under their _total names")

        print(f"--- cost per scrape (the rank's endpoint thread; {SCRAPES} kept-alive scrapes each, this run)")
        base_cpu, base_bytes = scrape_cost(url, rank_pid, {})
        for name, headers in (("text", {}), ("text+gzip", {"Accept-Encoding": "gzip"}),
                              ("OpenMetrics", {"Accept": PROMETHEUS_ACCEPT}),
                              ("OpenMetrics+gzip", {"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"})):
            cpu, size = scrape_cost(url, rank_pid, headers)
            print(f"    {name:17s} {cpu:6.3f} ms CPU ({cpu / base_cpu if base_cpu else 0:4.2f}x the plain text's "
                  f"{base_cpu:.3f})  {size:8.0f} bytes ({size / base_bytes:4.2f}x)")
    finally:
        if prom:
            prom.stop()
        stop_job(job)
    tls_cost(sim, libdir, work)
    if summary(context=f"logs in {work}"):
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("endpoint parity: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
