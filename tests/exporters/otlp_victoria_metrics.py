#!/usr/bin/env python3
"""OTLP/HTTP push into a real receiver: VictoriaMetrics ingests OTLP protobuf at /opentelemetry/v1/metrics.

An emulated 2-rank job (ncclscope-sim) pushes there every 500 ms (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
OTEL_METRIC_EXPORT_INTERVAL) while each rank's own Prometheus endpoint also serves. Rank 1 pauses 8 s before
ops 100 and 200 (--pause), which holds the job's counters still; there, once two scrapes of a rank's endpoint
1.5 s apart agree, the test asserts that VictoriaMetrics holds every counter series of that rank (all but the
host's kernel counts and the push's own) with the same labels and value, and the resource attributes
(service.name, the job id, host, ranks, an OTEL_RESOURCE_ATTRIBUTES entry) as labels; the histograms likewise,
as VictoriaMetrics' _bucket{le}/_sum/_count series. It prints the series as the receiver shows them and the
push's cost from the self-metrics: CPU and wall time per push, bytes per push and per rank-minute at the default
interval (15 s) and metric level (basic). Then a job shorter than the default interval, with only the base URL
(OTEL_EXPORTER_OTLP_ENDPOINT, /v1/metrics appended): its counts arrive through the last push at finalize and
equal those of the node_exporter textfile's final write. Then the same short job over https (VictoriaMetrics'
second, TLS listener, with a certificate made here by the openssl CLI for localhost and 127.0.0.1), its bodies
gzipped (OTEL_EXPORTER_OTLP_COMPRESSION) and the CA given (OTEL_EXPORTER_OTLP_CERTIFICATE): its counts arrive the
same; and once more without the CA (the system's trust store, which does not hold it): nothing arrives, and the
rank warns that the certificate did not verify.

usage: otlp_victoria_metrics.py SIM LIB_DIR --vm-bin DIR
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from prom_server import Server, free_port, http_get  # noqa: E402

JOB = "otlp-e2e"
RESOURCE_KEYS = {"service.name", "service_name", "ncclscope_job", "host", "global_rank", "local_rank",
                 "deployment.environment", "deployment_environment", "gpu_uuid", "gpu_instance_id"}
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def series_key(name, labels):
    """A series' identity; `le` as a number, since the endpoint and VictoriaMetrics spell bounds apart."""
    return (name, frozenset((k, str(float(v)) if k == "le" else v) for k, v in labels))


def parse_counters(text):
    """{key: value} of the counter and histogram series of a Prometheus exposition."""
    kinds, out = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            kinds[name] = kind
            continue
        m = LINE.match(line)
        if not m:
            continue
        name = m.group(1)
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        if kinds.get(name) == "counter" or (kinds.get(family) == "histogram" and family != name):
            out[series_key(name, LABEL.findall(m.group(2) or ""))] = float(m.group(3))
    return out


def scrape(port):
    return parse_counters(http_get(port, "/metrics", timeout=5).decode())


def targets(sd_dir):
    """{global_rank: port} from the file_sd target files."""
    out = {}
    for name in os.listdir(sd_dir):
        if name.endswith(".json"):
            try:
                with open(os.path.join(sd_dir, name)) as f:
                    entry = json.load(f)[0]
            except (OSError, ValueError, IndexError):
                continue
            out[entry["labels"]["global_rank"]] = int(entry["targets"][0].rsplit(":", 1)[1])
    return out


def vm_query(port, expr):
    body = json.loads(http_get(port, "/api/v1/query", {"query": expr}, timeout=10))
    return body["data"]["result"]


def comm_counters(snapshot):
    """The counters a pause holds still: all of ncclscope's but the host's kernel counts and the push's own."""
    return {k: v for k, v in snapshot.items()
            if k[0].startswith("ncclscope_") and not k[0].startswith(("ncclscope_host_", "ncclscope_otlp_"))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sim")
    ap.add_argument("lib")
    ap.add_argument("--vm-bin", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ncclscope-otlp-")
    cert, key = os.path.join(work, "vm.crt"), os.path.join(work, "vm.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    tls_port = free_port()
    vm = Server(lambda port: [os.path.join(args.vm_bin, "victoria-metrics"), f"-storageDataPath={work}/vm",
                              f"-httpListenAddr=127.0.0.1:{port},127.0.0.1:{tls_port}", "-tls=false,true",
                              f"-tlsCertFile=,{cert}", f"-tlsKeyFile=,{key}", "-retentionPeriod=1d",
                              "-search.latencyOffset=0s"], os.path.join(work, "victoria-metrics.log"))
    sd = os.path.join(work, "sd")
    os.makedirs(sd)
    env = dict(os.environ, LD_LIBRARY_PATH=args.lib, NCCLSCOPE_JOB_ID=JOB, NCCLSCOPE_SD_DIR=sd,
               NCCLSCOPE_PROM_PORT="0", NCCLSCOPE_PROM_BIND="127.0.0.1", NCCLSCOPE_SOCKET_IFNAME="lo",
               NCCLSCOPE_HOST_NETDEVS="lo",
               OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=f"http://127.0.0.1:{vm.port}/opentelemetry/v1/metrics",
               OTEL_METRIC_EXPORT_INTERVAL="500", OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci")
    log = open(os.path.join(work, "sim.log"), "w")
    sim = subprocess.Popen([args.sim, "--ranks", "2", "--comms", "1", "--ops", "allreduce", "--sizes", "1M:1M",
                            "--iters", "300", "--pause", "1:8/100"], stdout=log, stderr=subprocess.STDOUT, env=env)
    failures = []
    checked = {}
    try:
        deadline = time.time() + 200
        previous, stable_since = {}, {}
        while time.time() < deadline and len(checked) < 2 and sim.poll() is None:
            time.sleep(0.5)
            for rank, port in targets(sd).items():
                if rank in checked:
                    continue
                try:
                    now = scrape(port)
                except OSError:
                    continue
                ops = sum(v for k, v in now.items() if k[0] == "ncclscope_comm_operations_total")
                if ops == 0 or comm_counters(now) != comm_counters(previous.get(rank, {})):
                    previous[rank], stable_since[rank] = now, time.time()
                    continue
                if time.time() - stable_since[rank] < 1.5:
                    continue
                if compare(vm.port, rank, port, now, failures):
                    checked[rank] = True
                else:
                    previous[rank] = {}  # the counters moved: wait for them to hold still again
        sim.wait(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        failures.append("the sim did not finish in time")
        sim.kill()
    finally:
        log.close()
    if sim.returncode not in (0, None):
        failures.append(f"the sim exited {sim.returncode}")
    if len(checked) < 2:
        failures.append(f"only ranks {sorted(checked)} were compared during a pause")
    short_job(vm.port, args, work, failures, "otlp-short",
              {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{vm.port}/opentelemetry"})
    https = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"https://localhost:{tls_port}/opentelemetry/v1/metrics",
             "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}
    short_job(vm.port, args, work, failures, "otlp-https", dict(https, OTEL_EXPORTER_OTLP_CERTIFICATE=cert))
    short_job(vm.port, args, work, failures, "otlp-untrusted", https, trusted=False)
    vm.stop()
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        with open(os.path.join(work, "sim.log")) as f:
            print("sim log tail:\n" + f.read()[-1500:])
        print(f"(kept {work})")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


def same(endpoint, stored):
    """Counts exactly; a fractional total (seconds) to 1e-12: VictoriaMetrics keeps about 15 significant digits."""
    if endpoint == int(endpoint):
        return stored == endpoint
    return math.isclose(endpoint, stored, rel_tol=1e-12)


def stored_series(vm_port, selector):
    series = vm_query(vm_port, '{__name__=~"ncclscope_.*_(total|bucket|sum|count)",' + selector + '}')
    stored = {}
    for s in series:
        labels = dict(s["metric"])
        name = labels.pop("__name__")
        stored[series_key(name, [(k, v) for k, v in labels.items() if k not in RESOURCE_KEYS])] = (
            float(s["value"][1]), labels)
    return series, stored


def compare(vm_port, rank, port, snapshot, failures):
    """Every counter series of `rank`'s endpoint (comm_counters), in VictoriaMetrics with the same value."""
    selector = f'ncclscope_job="{JOB}",global_rank="{rank}"'
    want = comm_counters(snapshot)
    # At 500 ms pushes, two have landed 1.5 s after the counters stopped; a loaded host may take VictoriaMetrics
    # seconds more to make new series searchable, hence the retries while the counters still hold.
    for _ in range(10):
        time.sleep(1.5)
        series, stored = stored_series(vm_port, selector)
        if comm_counters(scrape(port)) != want:
            print(f"rank {rank}: the counters moved during the comparison; trying again at the next pause")
            return None
        missing = [k for k in want if k not in stored]
        wrong = [(k, want[k], stored[k][0]) for k in want if k in stored and not same(want[k], stored[k][0])]
        if not missing and not wrong:
            break
    hist = sum(1 for k in want if not k[0].endswith("_total"))
    print(f"rank {rank}: {len(want)} series on the endpoint ({len(want) - hist} counters, {hist} histogram "
          f"_bucket/_sum/_count; all but ncclscope_host_*, ncclscope_otlp_*), "
          f"{len(want) - len(missing) - len(wrong)} in VictoriaMetrics with the same value")
    if hist == 0:
        failures.append(f"rank {rank}: no histogram series to compare")
    for k in missing[:5]:
        failures.append(f"rank {rank}: {k[0]}{dict(k[1])} not in VictoriaMetrics")
    for k, a, b in wrong[:5]:
        failures.append(f"rank {rank}: {k[0]}{dict(k[1])} = {a} on the endpoint, {b} in VictoriaMetrics")
    if not want:
        failures.append(f"rank {rank}: no communicator counter on the endpoint")
        return None
    # The resource attributes, as labels of every series.
    example = next(iter(stored.values()))[1] if stored else {}
    for key, value in (("ncclscope_job", JOB), ("global_rank", rank)):
        if example.get(key) != value:
            failures.append(f"rank {rank}: label {key}={example.get(key)!r}, want {value!r}")
    service = example.get("service.name", example.get("service_name"))
    if service != "ncclscope":
        failures.append(f"rank {rank}: no service.name=ncclscope label: {example}")
    for key in ("host", "local_rank"):
        if key not in example:
            failures.append(f"rank {rank}: no {key} label")
    if "ci" not in (example.get("deployment.environment"), example.get("deployment_environment")):
        failures.append(f"rank {rank}: the OTEL_RESOURCE_ATTRIBUTES entry is not a label: {example}")
    everything = vm_query(vm_port, '{__name__=~"ncclscope_.*",' + selector + '}')
    names = sorted({s["metric"]["__name__"] for s in everything})
    hist = [n[:-len("_bucket")] for n in names if n.endswith("_bucket")]
    print(f"rank {rank}: {len(names)} metric names in VictoriaMetrics; histograms as _bucket/_sum/_count: "
          + ", ".join(hist[:3]))
    ops = [s for s in series if s["metric"]["__name__"] == "ncclscope_comm_operations_total"]
    for s in ops[:2]:
        print(f"  as stored: {json.dumps(s['metric'], sort_keys=True)} {s['value'][1]}")
    bucket = vm_query(vm_port, '{__name__=~"ncclscope_.*_bucket",' + selector + '}')
    if bucket:
        print(f"  a histogram bucket as stored: {json.dumps(bucket[0]['metric'], sort_keys=True)}")
    else:
        failures.append(f"rank {rank}: no histogram _bucket series in VictoriaMetrics")
    cost(rank, snapshot, failures)
    return True


def short_job(vm_port, args, work, failures, job, otlp_env, trusted=True):
    """A job shorter than the default 15 s interval, pushing as `otlp_env` says: only the last push, at finalize,
    can carry its counts. They must equal what the node_exporter textfile's final write says; where the receiver's
    certificate is not `trusted`, nothing may arrive and the ranks must say why."""
    textfiles = os.path.join(work, f"textfiles-{job}")
    os.makedirs(textfiles)
    env = dict(os.environ, LD_LIBRARY_PATH=args.lib, NCCLSCOPE_JOB_ID=job, NCCLSCOPE_PROM_PORT="-1",
               NCCLSCOPE_PROM_TEXTFILE_DIR=textfiles, NCCLSCOPE_SOCKET_IFNAME="lo", NCCLSCOPE_HOST_NETDEVS="lo",
               **otlp_env)
    began = time.time()
    log_path = os.path.join(work, f"{job}.log")
    with open(log_path, "w") as log:
        rc = subprocess.run([args.sim, "--ranks", "2", "--ops", "allreduce", "--sizes", "64K:64K", "--iters", "30"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, timeout=120).returncode
    took = time.time() - began
    if rc != 0:
        failures.append(f"{job}: the sim exited {rc}")
        return
    if not trusted:
        time.sleep(2)
        got = vm_query(vm_port, f'ncclscope_comm_operations_total{{ncclscope_job="{job}"}}')
        with open(log_path) as f:
            warned = [line.strip() for line in f if "OTLP push to https://" in line]
        print(f"{job}: {len(got)} series in VictoriaMetrics; the ranks warned: {warned[:1]}")
        if got or not warned or "certificate verify failed" not in warned[0]:
            failures.append(f"{job}: a receiver whose certificate is not trusted got {len(got)} series, and the "
                            f"ranks warned {warned[:1]}")
        return
    want = {}
    for name in (n for n in os.listdir(textfiles) if n.endswith(".prom")):
        with open(os.path.join(textfiles, name)) as f:
            for line in f:
                m = LINE.match(line.strip())
                if m and m.group(1) == "ncclscope_comm_operations_total":
                    labels = dict(LABEL.findall(m.group(2) or ""))
                    want[labels["global_rank"]] = want.get(labels["global_rank"], 0) + float(m.group(3))
    got = {}
    for _ in range(20):  # the push is done when the sim exits; VictoriaMetrics may take seconds to show it
        time.sleep(1)
        got = {}
        for r in vm_query(vm_port, f'ncclscope_comm_operations_total{{ncclscope_job="{job}"}}'):
            rank = r["metric"]["global_rank"]
            got[rank] = got.get(rank, 0) + float(r["value"][1])
        if got == want:
            break
    print(f"{job} ({took:.1f} s, under the 15 s interval; {', '.join(f'{k}={v}' for k, v in otlp_env.items())}): "
          f"operations per rank in VictoriaMetrics {got}, in the final textfiles {want}")
    if not want or got != want:
        failures.append(f"{job}: VictoriaMetrics has {got}, the final textfiles say {want}")


def cost(rank, snapshot, failures):
    def total(name):
        return sum(v for k, v in snapshot.items() if k[0] == name)
    pushes, failed = total("ncclscope_otlp_exports_total"), total("ncclscope_otlp_exports_failed_total")
    if pushes == 0:
        failures.append(f"rank {rank}: ncclscope_otlp_exports_total is 0 on the endpoint")
        return
    if failed:
        failures.append(f"rank {rank}: {failed:.0f} of {pushes:.0f} pushes failed")
    ok = pushes - failed
    per_push = total("ncclscope_otlp_export_bytes_total") / ok if ok else 0
    print(f"rank {rank}: {pushes:.0f} pushes, {failed:.0f} failed; per push: "
          f"{total('ncclscope_otlp_export_cpu_seconds_total') / pushes * 1e6:.0f} us CPU, "
          f"{total('ncclscope_otlp_export_seconds_total') / pushes * 1e6:.0f} us wall, {per_push:.0f} bytes; "
          f"{per_push * 4 / 1024:.1f} KiB per rank-minute at the default 15 s interval")


if __name__ == "__main__":
    sys.exit(main())
