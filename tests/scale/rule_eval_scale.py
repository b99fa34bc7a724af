#!/usr/bin/env python3
"""Rule evaluation time of rules/*.yml at scale, in a real Prometheus or VictoriaMetrics, with a hang that must be named.

--engine prometheus (default): Debian's Prometheus holds the series and evaluates the rules. --engine
victoriametrics: Debian 13's victoria-metrics holds them (pushed the same way, to its remote-write endpoint) and
vmalert evaluates the same rule files against it, started afresh for each phase (--vm-bin: the binaries,
scripts/fetch-victoria-metrics.sh). The CPU and RSS figures are the store's and the rule engine's together.

Synthetic series for RANKS ranks x COMMS communicators, shaped as ncclscope exports them at the default level
(docs/metrics.md) with the file_sd target labels (job, instance, ncclscope_job, host, global_rank, local_rank,
gpu_uuid), are pushed into the head of a real Prometheus through its remote-write receiver: the head is where a
live Prometheus holds the last hours of scraped data, and a series named `up` can be written like any other.
Every series gets one sample every 5 s from HISTORY seconds before now to FUTURE seconds after it (the samples
after now keep every range the rules read full while they are evaluated: a query at time t reads no sample
after t). Families (only those the shipped rules read):

  per rank:            up, ncclscope_process_info, ncclscope_profiler_dropped_events_total, ncclscope_nic_errors_total,
                       ncclscope_operation_duration_seconds_{sum,count}{kind="coll",func} (2 functions)
  per host (8 ranks):  ncclscope_host_rdma_port_* at the basic level for 8 ports (6 series each), from local rank 0
  per rank x comm:     ncclscope_comm_info, ncclscope_comm_last_seq{kind=coll|p2p},
                       ncclscope_comm_in_flight_operations, ncclscope_comm_oldest_in_flight_age_seconds,
                       ncclscope_comm_stalled, ncclscope_comm_operations_total{kind},
                       ncclscope_comm_operation_seconds_total{kind}, ncclscope_comm_bus_bytes_total,
                       ncclscope_comm_dropped_events_total
  while stalled:       ncclscope_comm_wait_seconds{class="peer",...}, ncclscope_comm_wait_last_seq
  while idle:          ncclscope_comm_idle_last_seq (the culprit, on every communicator)

Communicators: comm 0 is the world (all ranks); comm k > 0 splits the ranks into groups of SIZES[k] (8 = a
node's tensor-parallel group, 4 pipeline, 512 data-parallel, ...), one communicator hash per group. 8 ranks per
host. The hang: from ONSET (script start) the culprit rank did not issue the next collective of the world
communicator (last_seq one behind, nothing in flight); every other rank waits in it (in flight, stalled, oldest
age growing) and exports ncclscope_comm_wait_seconds pointing at its ring predecessor. Every other communicator
is idle from then on.

Phases: Prometheus starts with no rules; the series are pushed; then rules/ncclscope-hang.yml alone is loaded
(/-/reload) and evaluated for PHASE seconds, then all three rule files for PHASE seconds. Each group's
evaluationTime (and each rule's) is read from /api/v1/rules after every evaluation, and
prometheus_rule_group_last_duration_seconds from /metrics. Then the NcclscopeHang alert must fire, once, for
the culprit (global rank, host, world communicator, class not_joined), and ncclscope:hang_victim must count
RANKS-1 waiting ranks: the evaluation did the real work.

With --jobs J the store holds J jobs of RANKS ranks (a cluster, e.g. 20 x 512 for 10,240 GPUs), on hosts of their
own, named scale-00 ...: the first hangs as above, the others run on (every communicator progresses, nobody
waits); exactly one NcclscopeHang must name the first job's culprit.

With --variant FILE (another version of the hang rules) the hang rules and the variant are
measured A/B/A/B on the same data before the all-files phase (--phase-all 0 leaves that out).

The last line: scale: engine=E [jobs=J] ranks=N comms=C groups_within_interval=yes|no (every group's slowest evaluation
within its interval) hang_alert_s=X (the hang rules' load to NcclscopeHang first seen firing, polled each second,
during the hang-only phase) culprit=ok|wrong store_rss_gib=Y (the store's peak).

Exit status: 0 pass, 1 fail, 77 prometheus missing. Run by hand for the big figures, e.g.
  tests/scale/rule_eval_scale.py --ranks 16384 --comms 8 --json /tmp/scale.json
ctest runs a small instance (scale_rule_eval_small: --ranks 256 --comms 8), the cost tests (scale_rule_cost_*:
2,048 x 8 with --budget-ranks) and, by hand under label scale_16k, the full-size shapes.
"""

import argparse
import glob
import http.client
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time
import urllib.request

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEP_MS = 5000
RANKS_PER_HOST = 8
# Group size of communicator k (k = 0 is the world). Sizes past the list repeat it.
SIZES = [0, 8, 4, 512, 64, 2, 16, 128]
NAMES = ["world", "tp", "pp", "dp", "ep", "cp", "tp_dp", "dp_shard"]
JOB = "scale"
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from prom_server import PrometheusServer, Server, http_get  # noqa: E402
from hang_support import hang_alerts  # noqa: E402


# --- remote write encoding (protobuf by hand, snappy as literals only: a valid snappy block) ---

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(tag, payload):
    return tag + varint(len(payload)) + payload


_label_cache = {}


def enc_label(name, value):
    key = (name, value)
    b = _label_cache.get(key)
    if b is None:
        inner = field_bytes(b"\x0a", name.encode()) + field_bytes(b"\x12", value.encode())
        b = field_bytes(b"\x0a", inner)
        if len(_label_cache) < 2_000_000:
            _label_cache[key] = b
    return b


def enc_labels(labels):
    return b"".join(enc_label(n, v) for n, v in sorted(labels.items()) if v != "")


class Timeline:
    """The sample timestamps, their encodings, and the cache of encoded sample runs."""

    def __init__(self, start_ms, n):
        self.start_ms = start_ms
        self.n = n
        self.ts = [start_ms + i * STEP_MS for i in range(n)]
        self.ts_enc = [b"\x10" + varint(t) for t in self.ts]
        self.cache = {}

    def samples(self, key, values, first=0):
        """Encoded Sample fields for values[i] at ts[first + i]; cached by key when key is not None."""
        if key is not None:
            b = self.cache.get(key)
            if b is not None:
                return b
        parts = []
        pack = struct.Struct("<d").pack
        for i, v in enumerate(values):
            parts.append(b"\x12\x10\x09" + pack(float(v)) + self.ts_enc[first + i])
        b = b"".join(parts)
        # Sample = 0x09 + 8 bytes + 0x10 + varint(ts): 16 bytes while the timestamp varint is 6 bytes long.
        assert all(len(self.ts_enc[first + i]) == 7 for i in range(len(values)))
        if key is not None:
            self.cache[key] = b
        return b


def snappy_literal(data):
    # Snappy block: varint(uncompressed length), then one literal element (tag 63<<2: length-1 in 4 bytes).
    return varint(len(data)) + bytes([0xFC]) + (len(data) - 1).to_bytes(4, "little") + data


class Writer:
    def __init__(self, port, batch_bytes=4 << 20):
        self.port = port
        self.batch = []
        self.size = 0
        self.batch_bytes = batch_bytes
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.series = 0
        self.samples = 0
        self.requests = 0

    def add(self, labels, samples_enc, nsamples):
        ts = field_bytes(b"\x0a", enc_labels(labels) + samples_enc)
        self.batch.append(ts)
        self.size += len(ts)
        self.series += 1
        self.samples += nsamples
        if self.size >= self.batch_bytes:
            self.flush()

    def flush(self):
        if not self.batch:
            return
        body = snappy_literal(b"".join(self.batch))
        self.batch, self.size = [], 0
        for attempt in range(3):
            try:
                self.conn.request("POST", "/api/v1/write", body, {
                    "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
                    "X-Prometheus-Remote-Write-Version": "0.1.0"})
                r = self.conn.getresponse()
                data = r.read()
                if r.status // 100 != 2:
                    raise RuntimeError(f"remote write: HTTP {r.status}: {data[:300]!r}")
                self.requests += 1
                if self.requests % 100 == 0:
                    print(f"  pushed {self.series} series", file=sys.stderr, flush=True)
                return
            except (ConnectionError, http.client.HTTPException) as e:
                if attempt == 2:
                    raise
                print(f"remote write retry after {e!r}", file=sys.stderr)
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)


# --- the synthetic job ---

def comm_size(k, ranks):
    if k == 0:
        return ranks
    return max(1, min(ranks, SIZES[k % len(SIZES)]))


def comm_of(k, r, ranks):
    """(communicator hash, rank inside it, nranks) of global rank r in communicator type k."""
    size = comm_size(k, ranks)
    group = r // size
    h = (0x9E3779B97F4A7C15 * (k + 1) ^ (group * 0xBF58476D1CE4E5B9)) & 0xFFFFFFFFFFFFFFFF
    return f"0x{h:016x}", r % size, size


def job_name(j, jobs):
    return JOB if jobs == 1 else f"{JOB}-{j:02d}"


def identity(r, j=0, jobs=1, ranks=0):
    """Labels of global rank r of job j; the jobs of a cluster run on hosts of their own."""
    host = f"node{(j * ranks + r) // RANKS_PER_HOST:05d}"
    lr = r % RANKS_PER_HOST
    return {
        "job": "ncclscope",
        "instance": f"{host}:{9850 + lr}",
        "ncclscope_job": job_name(j, jobs),
        "host": host,
        "global_rank": str(r),
        "local_rank": str(lr),
        "gpu_uuid": f"GPU-{r:08x}-5ca1-4e00-8000-{r * 2654435761 % (1 << 48):012x}",
    }


def push_job(w, tl, ranks, comms, culprit, onset_idx, j=0, jobs=1):
    """Every series of job j, rank by rank. Values per communicator type are the same on every rank (so the
    encoded sample runs are cached), except the hang's roles in the world communicator. culprit None: a healthy
    job, running on from the onset (every communicator progresses, nobody waits)."""
    n = tl.n
    h = onset_idx if culprit is not None else n
    thr = 1  # the stall watch flags the communicator one sample (5 s, past the 2 s floor) after the onset
    if getattr(tl, "frozen_at", None) != h:  # the cached runs hold one job kind's progress: a hung or a healthy one
        tl.cache.clear()
        tl.frozen_at = h
    ones = [1] * n
    zeros = [0] * n
    for r in range(ranks):
        ident = identity(r, j, jobs, ranks)
        w.add(dict(ident, __name__="up"), tl.samples("one", ones), n)
        w.add(dict(ident, __name__="ncclscope_process_info", pid=str(100000 + r)), tl.samples("one", ones), n)
        w.add(dict(ident, __name__="ncclscope_profiler_dropped_events_total"), tl.samples("zero", zeros), n)
        w.add(dict(ident, __name__="ncclscope_nic_errors_total", nic=f"mlx5_{r % RANKS_PER_HOST}"),
              tl.samples("zero", zeros), n)
        # The process's operation histogram (its sum and count, per function), frozen from the onset.
        for f, per in (("AllReduce", 3), ("AllGather", 1)):
            ops = [per * min(i, h) for i in range(n)]
            w.add(dict(ident, __name__="ncclscope_operation_duration_seconds_count", kind="coll", func=f),
                  tl.samples(("hcount", f), ops), n)
            w.add(dict(ident, __name__="ncclscope_operation_duration_seconds_sum", kind="coll", func=f),
                  tl.samples(("hsum", f), [o * 0.003 for o in ops]), n)
        if r % RANKS_PER_HOST == 0:  # the host's 8 RDMA ports, from the rank that speaks for the host
            for d in range(RANKS_PER_HOST):
                port = dict(ident, device=f"mlx5_{d}", port="1")
                w.add(dict(port, __name__="ncclscope_host_rdma_port_rate_bytes_per_second", netdev=f"ens{d}np0"),
                      tl.samples("rate", [25e9] * n), n)
                for direction in ("sent", "received"):
                    w.add(dict(port, __name__="ncclscope_host_rdma_port_bytes_total", direction=direction),
                          tl.samples("portbytes", [i * 1e10 for i in range(n)]), n)
                for kind in ("retransmit", "congestion", "error"):
                    w.add(dict(port, __name__=f"ncclscope_host_rdma_port_{kind}_events_total"),
                          tl.samples("zero", zeros), n)
        for k in range(comms):
            comm, crank, size = comm_of(k, r, ranks)
            nnodes = max(1, (size + RANKS_PER_HOST - 1) // RANKS_PER_HOST) if size >= RANKS_PER_HOST else 1
            base = dict(ident, comm=comm, rank=str(crank))
            role = "healthy"
            if k == 0 and culprit is not None:
                role = "culprit" if r == culprit else "waiter"
            rate = (k % 4) + 1  # collectives per 5 s on this communicator type
            # Progress: healthy until the onset, then frozen; the world's waiters issued one more collective.
            def seq(extra):
                return [rate * min(i, h) + (extra if i > h else 0) for i in range(n)]
            w.add(dict(base, __name__="ncclscope_comm_info", comm_name=f"{NAMES[k % len(NAMES)]}",
                       nranks=str(size), nnodes=str(nnodes), abi="v6"), tl.samples("one", ones), n)
            extra = 1 if role == "waiter" else 0
            w.add(dict(base, __name__="ncclscope_comm_last_seq", kind="coll"),
                  tl.samples(("seq", k, extra), seq(extra)), n)
            p2p = k == 2  # the pipeline communicator sends and receives
            w.add(dict(base, __name__="ncclscope_comm_last_seq", kind="p2p"),
                  tl.samples(("p2p", k), [2 * rate * min(i, h) if p2p else 0 for i in range(n)]), n)
            # In flight: now and then while healthy; the world's waiters from the onset on.
            inflight = [(1 if i % 3 == 0 and i < h else 0) for i in range(n)]
            if role == "waiter":
                inflight = [v if i <= h else 1 for i, v in enumerate(inflight)]
            w.add(dict(base, __name__="ncclscope_comm_in_flight_operations"),
                  tl.samples(("inflight", role), inflight), n)
            age = [0.004 if v else 0 for v in inflight]
            if role == "waiter":
                age = [a if i <= h else (i - h) * STEP_MS / 1000 for i, a in enumerate(age)]
            w.add(dict(base, __name__="ncclscope_comm_oldest_in_flight_age_seconds"),
                  tl.samples(("age", role), age), n)
            stalled = [1 if role == "waiter" and i > h + thr else 0 for i in range(n)]
            w.add(dict(base, __name__="ncclscope_comm_stalled"), tl.samples(("stalled", role), stalled), n)
            for kind in ("coll", "p2p"):
                if kind == "p2p" and not p2p:
                    ops = zeros
                    secs = zeros
                else:
                    mult = 1 if kind == "coll" else 2
                    ops = [mult * rate * min(i, h) for i in range(n)]
                    secs = [o * 0.0021 * (k + 1) for o in ops]
                w.add(dict(base, __name__="ncclscope_comm_operations_total", kind=kind),
                      tl.samples(("ops", k, kind), ops), n)
                w.add(dict(base, __name__="ncclscope_comm_operation_seconds_total", kind=kind),
                      tl.samples(("secs", k, kind), secs), n)
            w.add(dict(base, __name__="ncclscope_comm_bus_bytes_total"),
                  tl.samples(("bus", k), [rate * min(i, h) * 67108864.0 for i in range(n)]), n)
            w.add(dict(base, __name__="ncclscope_comm_dropped_events_total"), tl.samples("zero", zeros), n)
            if role == "culprit":
                # Idle on every communicator from the onset on: each one's collectives issued.
                w.add(dict(base, __name__="ncclscope_comm_idle_last_seq", by="kernel"),
                      tl.samples(("idle", k), seq(0)[h + 1:], h + 1), n - h - 1)
            if role == "waiter":
                # Exported only while stalled: from the flag on, how long the oldest operation has waited, and the
                # collectives the rank issued.
                first = h + thr + 1
                w.add(dict(base, __name__="ncclscope_comm_wait_last_seq"),
                      tl.samples(("waitseq", k), seq(extra)[first:], first), n - first)
                waits = [(i - h) * STEP_MS / 1000 for i in range(first, n)]
                pred = (r - 1) % ranks
                w.add(dict(base, __name__="ncclscope_comm_wait_seconds", **{
                    "class": "peer", "func": "AllReduce", "peer_global_rank": str(pred),
                    "peer_host": identity(pred, j, jobs, ranks)["host"], "nic": f"mlx5_{r % RANKS_PER_HOST}",
                    "direction": "recv", "state": "waiting"}), tl.samples(("wait",), waits, first), len(waits))
    w.flush()


# --- Prometheus ---

def get(port, path, params=None, timeout=60):
    return http_get(port, path, params, timeout)


def query(port, expr):
    d = json.loads(get(port, "/api/v1/query", {"query": expr}))
    if d.get("status") != "success":
        raise RuntimeError(f"query {expr}: {d}")
    return d["data"]["result"]


def scalar(port, expr):
    res = query(port, expr)
    return float(res[0]["value"][1]) if res else None


def write_config(path, rule_files):
    with open(path, "w") as f:
        f.write("global: {scrape_interval: 5s, evaluation_interval: 5s}\n")
        f.write("rule_files: [" + ", ".join(f"'{p}'" for p in rule_files) + "]\n")
        f.write("scrape_configs: []\n")


def rss_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def du_bytes(path):
    total = 0
    for d, _, files in os.walk(path):
        for fn in files:
            try:
                total += os.path.getsize(os.path.join(d, fn))
            except OSError:
                pass
    return total


class PrometheusEngine:
    """Debian's Prometheus: the pushed series and the rules in one process; rule files loaded by /-/reload."""
    name = "prometheus"

    def __init__(self, work, memlimit):
        self.cfg = os.path.join(work, "prometheus.yml")
        write_config(self.cfg, [])
        env = dict(os.environ, **({"GOMEMLIMIT": memlimit} if memlimit else {}))
        self.server = PrometheusServer(self.cfg, work, ["--web.enable-remote-write-receiver", "--web.enable-lifecycle"],
                                       env)
        self.store_port = self.rules_port = self.server.port
        self.data = os.path.join(work, "data")

    def load(self, files):
        write_config(self.cfg, files)
        req = urllib.request.Request(f"http://127.0.0.1:{self.store_port}/-/reload", method="POST")
        urllib.request.urlopen(req, timeout=60).read()

    def pids(self):
        return [self.server.proc.pid]

    def series(self):
        return self_metric(self.store_port, "prometheus_tsdb_head_series")

    def group_metrics(self):
        out = {}
        for line in get(self.rules_port, "/metrics").decode().splitlines():
            for name in ("prometheus_rule_group_last_duration_seconds", "prometheus_rule_group_iterations_missed_total",
                         "prometheus_rule_group_iterations_total"):
                if line.startswith(name + "{"):
                    g = line.split('rule_group="', 1)[1].split('"', 1)[0]
                    out.setdefault(os.path.basename(g.split(";")[0]) + ";" + g.split(";")[-1], {})[name] = \
                        float(line.rsplit(" ", 1)[1])
        return out

    def stop(self):
        self.server.stop()


class VictoriaMetricsEngine:
    """Debian 13's victoria-metrics holds the pushed series; vmalert evaluates the rule files against it and writes
    the recorded series back (remote write); a phase's rule files are loaded by starting vmalert afresh."""
    name = "victoriametrics"

    def __init__(self, work, memlimit, vm_bin):
        self.work, self.vm_bin, self.vmalert = work, vm_bin, None
        self.data = os.path.join(work, "vm")
        extra = [f"-memory.allowedBytes={memlimit}"] if memlimit else []
        self.server = Server(lambda port: [os.path.join(vm_bin, "victoria-metrics"), f"-storageDataPath={self.data}",
                                           f"-httpListenAddr=127.0.0.1:{port}", "-retentionPeriod=1d",
                                           "-search.latencyOffset=0s", "-search.maxUniqueTimeseries=0", *extra],
                             os.path.join(work, "victoria-metrics.log"))
        self.store_port = self.rules_port = self.server.port

    def load(self, files):
        if self.vmalert:
            self.vmalert.stop()
        url = f"http://127.0.0.1:{self.store_port}"
        # The flags of deploy/victoriametrics/README.md; -notifier.blackhole: the test reads vmalert's alerts API.
        self.vmalert = Server(lambda port: [os.path.join(self.vm_bin, "vmalert"), *[f"-rule={f}" for f in files],
                                            f"-datasource.url={url}", f"-remoteWrite.url={url}",
                                            "-remoteWrite.flushInterval=1s", "-notifier.blackhole",
                                            "-evaluationInterval=5s", "-rule.evalDelay=0s",
                                            f"-httpListenAddr=127.0.0.1:{port}"],
                              os.path.join(self.work, "vmalert.log"))
        self.rules_port = self.vmalert.port

    def pids(self):
        return [self.server.proc.pid] + ([self.vmalert.proc.pid] if self.vmalert else [])

    def series(self):
        return self_metric(self.store_port, "vm_new_timeseries_created_total")

    def group_metrics(self):
        out = {}
        for line in get(self.rules_port, "/metrics").decode().splitlines():
            for name in ("vmalert_iteration_missed_total", "vmalert_iteration_total"):
                if line.startswith(name + "{"):
                    g = line.split('group="', 1)[1].split('"', 1)[0]
                    out.setdefault(g, {})[name] = float(line.rsplit(" ", 1)[1])
        return out

    def stop(self):
        if self.vmalert:
            self.vmalert.stop()
        self.server.stop()


def measure(port, seconds, groups_wanted):
    """Polls /api/v1/rules each second; returns ({group: [evaluations]} with each evaluation's time and its rules'
    times, when NcclscopeHang was first seen firing or None)."""
    seen, hang_seen = {}, None
    end = time.time() + seconds
    while time.time() < end:
        d = json.loads(get(port, "/api/v1/rules"))
        for g in d["data"]["groups"]:
            if hang_seen is None and any(r.get("name") == "NcclscopeHang" and
                                         any(x.get("state") == "firing" for x in r.get("alerts") or [])
                                         for r in g["rules"]):
                hang_seen = time.time()
            if g["name"] not in groups_wanted:
                continue
            le = g.get("lastEvaluation", "")
            if not le or le.startswith("0001-"):
                continue
            evs = seen.setdefault(g["name"], {})
            if le not in evs:
                # vmalert gives no group time: its rules run one after the other, so their sum.
                evs[le] = {"at": le, "evaluationTime": g.get("evaluationTime", sum(r["evaluationTime"] for r in g["rules"])),
                           "rules": [(r.get("record") or r.get("name"),
                                      ",".join(f"{k}={v}" for k, v in sorted((r.get("labels") or {}).items())
                                               if k in ("class", "via", "from")),
                                      r["evaluationTime"], r.get("health"), r.get("lastError", ""))
                                     for r in g["rules"]]}
        time.sleep(1.0)
    return {g: [evs[k] for k in sorted(evs)] for g, evs in seen.items()}, hang_seen


def self_metric(port, name):
    """A metric of Prometheus's own /metrics (it does not scrape itself here)."""
    for line in get(port, "/metrics").decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{}"):
            return float(line.rsplit(" ", 1)[1])
    return None


def group_intervals(rules_dir):
    """Each rule group's evaluation interval in seconds (the group's own, or the 5 s global)."""
    out = {}
    for path in glob.glob(os.path.join(rules_dir, "*.yml")):
        with open(path) as f:
            for g in yaml.safe_load(f)["groups"]:
                out[g["name"]] = parse_duration(g.get("interval", "5s"))
    return out


def parse_duration(text):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in ("ms", "s", "m", "h"):
        if text.endswith(unit) and text[:-len(unit)].replace(".", "", 1).isdigit():
            return float(text[:-len(unit)]) * units[unit]
    raise ValueError(f"not a duration: {text}")


def group_names(path):
    with open(path) as f:
        return [line.split("name:", 1)[1].strip() for line in f if line.strip().startswith("- name:")]


def summarize(evals, skip_first=1):
    """Evaluation times of a group (the first after a reload, which warms caches, is reported apart)."""
    times = [e["evaluationTime"] for e in evals]
    if not times:
        return None
    rest = times[skip_first:] or times
    per_rule = {}
    for e in evals[skip_first:] or evals:
        for name, cls, t, health, err in e["rules"]:
            key = name + (f"{{{cls}}}" if cls else "")  # rules of one name told apart by class, via, from
            per_rule.setdefault(key, []).append(t)
            if health not in ("ok", "unknown"):
                per_rule.setdefault("errors", []).append(f"{key}: {err}")
    return {"evaluations": len(times), "evaluation_s": [[e["at"], round(t, 3)] for e, t in zip(evals, times)],
            "first_s": times[0],
            "median_s": statistics.median(rest),
            "max_s": max(rest), "rules_median_s": {k: (statistics.median(v) if k != "errors" else v)
                                                   for k, v in per_rule.items()}}


def budget_check(fig, a, cpu_used, hang_evaluations, intervals):
    """The cost test: CPU per hang-group evaluation, scaled linearly in ranks, against interval x cores."""
    per_eval = cpu_used / max(1, hang_evaluations)
    projected = per_eval * a.budget_ranks / a.ranks
    budget = intervals.get("ncclscope.hang", 5) * a.budget_cores
    within = projected <= budget
    fig["budget"] = {"cpu_s_per_hang_evaluation": round(per_eval, 3), "ranks": a.budget_ranks,
                     "projected_cpu_s": round(projected, 2), "budget_cpu_s": budget, "within": within}
    print(f"budget: {per_eval:.3f} CPU s per hang evaluation at {a.ranks} ranks -> {projected:.2f} s at "
          f"{a.budget_ranks} ranks; budget {budget:g} s ({a.budget_cores:g} cores x the interval): "
          f"{'within' if within else 'OVER'}", flush=True)
    return within


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=16384)
    ap.add_argument("--comms", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=1,
                    help="jobs of --ranks ranks each in the store (a cluster): the first hangs, the others run on")
    ap.add_argument("--culprit", type=int, default=None, help="global rank that did not join (default ranks*3/4+5)")
    ap.add_argument("--history", type=int, default=600, help="seconds of samples before now (default 600)")
    ap.add_argument("--future", type=int, default=None,
                    help="seconds of samples after now; must cover the push and both phases (default: estimated)")
    ap.add_argument("--phase", type=int, default=60, help="seconds the hang rules alone are measured (default 60)")
    ap.add_argument("--phase-all", type=int, default=None,
                    help="seconds all three rule files are measured (default: as --phase)")
    ap.add_argument("--settle", type=int, default=30,
                    help="seconds to wait after the push before the rules are loaded (Go's GC and the head settle)")
    ap.add_argument("--variant", default=None,
                    help="a second hang rule file (its group named differently) measured A/B against "
                         "rules/ncclscope-hang.yml: phases hang, variant, hang, variant before the all-files phase")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--memlimit", default=None,
                    help="the store's memory limit: GOMEMLIMIT for Prometheus (7GiB), -memory.allowedBytes for "
                         "victoria-metrics (7GiB)")
    ap.add_argument("--budget-ranks", type=int, default=None,
                    help="the cost test: the engine's CPU seconds per evaluation of the 5 s hang group (all its CPU "
                         "in the hang phase, the 15 s groups' included), scaled linearly to this many ranks, must fit "
                         "in the group's interval on --budget-cores cores")
    ap.add_argument("--budget-cores", type=float, default=1.0)
    ap.add_argument("--engine", choices=["prometheus", "victoriametrics"], default="prometheus")
    ap.add_argument("--vm-bin", help="VictoriaMetrics binaries (scripts/fetch-victoria-metrics.sh prints it)")
    a = ap.parse_args()
    if a.engine == "prometheus" and not shutil.which("prometheus"):
        print("SKIP: prometheus not installed")
        return 77
    if a.engine == "victoriametrics" and not (a.vm_bin and os.access(os.path.join(a.vm_bin, "vmalert"), os.X_OK)):
        sys.exit("--vm-bin must name the directory of vmalert (scripts/fetch-victoria-metrics.sh prints it)")
    t_script = time.time()
    ranks, comms = a.ranks, a.comms
    culprit = a.culprit if a.culprit is not None else (ranks * 3 // 4 + 5) % ranks
    jobs = a.jobs
    nseries = jobs * ranks * (4 + 12 * comms) + (ranks - 1)
    # Estimated push: ~450 us per series (Python and Prometheus's ingestion) measured on a loaded 2-core machine.
    phase_all = a.phase_all if a.phase_all is not None else a.phase
    nphases = 4 if a.variant else 1
    future = a.future if a.future is not None else int(60 + a.settle + nphases * a.phase + phase_all
                                                       + nseries * 600e-6)
    now_ms = int(t_script * 1000) // STEP_MS * STEP_MS
    start_ms = now_ms - a.history * 1000
    n = (a.history + future) * 1000 // STEP_MS + 1
    onset_idx = a.history * 1000 // STEP_MS  # the hang starts now
    tl = Timeline(start_ms, n)

    work = a.work or tempfile.mkdtemp(prefix="ncclscope-scale-")
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    engine = (PrometheusEngine(work, a.memlimit) if a.engine == "prometheus"
              else VictoriaMetricsEngine(work, a.memlimit, a.vm_bin))
    port = engine.store_port
    cpu = lambda: sum(cpu_seconds(p) for p in engine.pids())  # noqa: E731
    rss = lambda: {k: sum(rss_kib(p)[k] for p in engine.pids()) for k in ("VmRSS", "VmHWM")}  # noqa: E731
    fig = {"engine": engine.name, "jobs": jobs, "ranks": ranks, "comms": comms, "culprit": culprit, "history_s": a.history, "future_s": future,
           "samples_per_series": n}
    ok, within, culprit_ok, hang_alert_s = True, True, "wrong", None
    intervals = group_intervals(os.path.join(ROOT, "rules"))
    try:
        print(f"{jobs} job(s) x {ranks} ranks x {comms} communicators, ~{nseries} series x {n} samples; culprit "
              f"global rank {culprit} of {job_name(0, jobs)}; {engine.name} on {port}, work {work}", flush=True)
        t0 = time.time()
        w = Writer(port)
        for j in range(jobs):
            push_job(w, tl, ranks, comms, culprit if j == 0 else None, onset_idx, j, jobs)
        t_push = time.time() - t0
        fig.update(push_s=round(t_push, 1), pushed_series=w.series, pushed_samples=w.samples,
                   push_requests=w.requests)
        print(f"pushed {w.series} series, {w.samples} samples in {t_push:.1f} s ({w.requests} requests)", flush=True)
        fig["head_series_after_push"] = engine.series()
        fig["rss_after_push_kib"] = rss()
        data_end = (start_ms + (n - 1) * STEP_MS) / 1000
        cpu0 = cpu()
        time.sleep(a.settle)
        fig["idle_cpu_per_s"] = round((cpu() - cpu0) / max(1, a.settle), 2)
        print(f"settled {a.settle} s: {engine.name} without rules used {fig['idle_cpu_per_s']:.2f} CPU s per s", flush=True)

        hang_file = os.path.join(ROOT, "rules", "ncclscope-hang.yml")
        phases = [("hang", [hang_file])]
        if a.variant:
            variant = os.path.abspath(a.variant)
            phases = [("hang", [hang_file]), ("variant", [variant]), ("hang2", [hang_file]), ("variant2", [variant])]
        if phase_all > 0:
            phases.append(("all", [os.path.join(ROOT, "rules", f) for f in
                                   ("ncclscope-hang.yml", "ncclscope-recording.yml", "ncclscope-alerts.yml")]))
        fig["phases"] = {}
        for name, files in phases:
            seconds = phase_all if name == "all" else a.phase
            if time.time() + seconds + 10 > data_end:
                print(f"WARNING: the data end within {data_end - time.time():.0f} s; phase {name} would read stale "
                      f"ranges (raise --future)", flush=True)
                ok = False
            engine.load(files)
            groups = [g for path in files for g in group_names(path)]  # every group loaded, the 15 s ones too
            cpu0 = cpu()
            t_phase = time.time()
            if name == "hang":
                t_hang_rules = t_phase  # the hang is in the data from the start: the alert's delay counts from here
            res, hang_seen = measure(engine.rules_port, seconds, groups)
            used = cpu() - cpu0
            if name == "hang":  # vmalert forgets its alerts when the next phase restarts it
                # Timed when first seen firing: vmalert's activeAt is its query time, aligned to the interval,
                # which can precede the load.
                hang_alert_s = hang_seen - t_hang_rules if hang_seen else None
                active = [t for _, t in hang_alerts(engine.rules_port)]
                fig["hang_alert_active_at_s"] = round(min(active) - t_hang_rules, 1) if active else None
                if a.budget_ranks:
                    ok = budget_check(fig, a, used, len(res.get("ncclscope.hang", [])), intervals) and ok
            fig["phases"][name] = {g: summarize(res.get(g, [])) for g in groups}
            # The engine does nothing else here (no scrapes): its CPU time per second of the phase, and per
            # evaluation of the hang group when it runs alone, say what an evaluation costs whatever else runs.
            fig["phases"][name]["engine_cpu_s"] = round(used, 2)
            fig["phases"][name]["engine_cpu_per_s"] = round(used / (time.time() - t_phase), 2)
            nev = sum(len(v) for v in res.values())
            fig["phases"][name]["evaluations_all_groups"] = nev
            fig["phases"][name]["cpu_s_per_evaluation"] = round(used / max(1, nev), 3)
            fig["phases"][name]["heap_inuse_bytes"] = self_metric(port, "go_memstats_heap_inuse_bytes")
            fig["phases"][name]["group_metrics"] = engine.group_metrics()
            fig["phases"][name]["rss_kib"] = rss()
            print(f"phase {name}: {engine.name} used {used:.1f} CPU s in {seconds} s "
                  f"({fig['phases'][name]['cpu_s_per_evaluation']:.2f} per group evaluation); Go heap in use "
                  f"{(fig['phases'][name]['heap_inuse_bytes'] or 0) / 2**30:.2f} GiB, RSS "
                  f"{fig['phases'][name]['rss_kib']['VmRSS'] / 2**20:.2f} GiB", flush=True)
            for g in groups:
                s = fig["phases"][name][g]
                if s is None:
                    if intervals.get(g, 5) > seconds:  # an engine may start a group anywhere in its first interval
                        print(f"note: group {g} (every {intervals[g]:g} s) not evaluated within the {seconds} s of "
                              f"phase {name}")
                        continue
                    print(f"FAIL: group {g} never evaluated in phase {name}")
                    ok = False
                    continue
                print(f"phase {name}: {g}: {s['evaluations']} evaluations, first {s['first_s']:.3f} s, "
                      f"median {s['median_s']:.3f} s, max {s['max_s']:.3f} s", flush=True)
                if s["max_s"] > intervals.get(g, 5):
                    within = False
                for rule, t in sorted(s["rules_median_s"].items(), key=lambda kv: -kv[1]
                                      if not isinstance(kv[1], list) else 0):
                    if rule == "errors":
                        print(f"   rule errors: {t}")
                        ok = False
                    else:
                        print(f"   {t:8.3f} s  {rule}")

        # The alert names the culprit, once; the victims count proves every waiting rank was read.
        alerts = json.loads(get(engine.rules_port, "/api/v1/alerts"))["data"]["alerts"]
        hang = [x for x in alerts if x["labels"].get("alertname") == "NcclscopeHang"]
        others = sorted({x["labels"]["alertname"] for x in alerts} - {"NcclscopeHang"})
        world, _, _ = comm_of(0, culprit, ranks)
        want = {"class": "not_joined", "global_rank": str(culprit), "host": identity(culprit, 0, jobs, ranks)["host"],
                "comm": world, "ncclscope_job": job_name(0, jobs)}
        fig["alerts"] = [{"labels": x["labels"], "state": x["state"], "activeAt": x.get("activeAt")} for x in hang]
        fig["other_alerts"] = others
        victims = scalar(port, 'count(ncclscope:hang_victim)')
        fig["hang_victims"] = victims
        firing = [x for x in hang if x["state"] == "firing"]
        if len(firing) != 1 or any(firing[0]["labels"].get(k) != v for k, v in want.items()):
            print(f"FAIL: NcclscopeHang should fire once with {want}; got {fig['alerts']}")
            ok = False
        else:
            culprit_ok = "ok"
            print(f"NcclscopeHang firing: {firing[0]['labels']}  summary: "
                  f"{firing[0].get('annotations', {}).get('summary', '')}")
            desc = [x for x in alerts if x["labels"].get("alertname") == "NcclscopeHang"][0]["annotations"]
            print(f"  description: {desc.get('description', '')[:200]}")
        if victims != ranks - 1:
            print(f"FAIL: ncclscope:hang_victim counts {victims} waiting ranks, want {ranks - 1}")
            ok = False
        if others:
            print(f"note: other alerts pending or firing: {others}")
        fig["head_series"] = engine.series() or 0
        fig["store_rss_kib"] = rss_kib(engine.pids()[0])
        fig["rss_end_kib"] = rss()
        fig["data_dir_bytes"] = du_bytes(engine.data)
        fig["loadavg"] = os.getloadavg()
        print(f"series {fig['head_series']:.0f}, data dir {fig['data_dir_bytes'] / 2**20:.0f} MiB, store RSS "
              f"{fig['store_rss_kib']['VmRSS'] / 2**20:.2f} GiB (peak {fig['store_rss_kib']['VmHWM'] / 2**20:.2f}), "
              f"{engine.name} RSS "
              f"{fig['rss_end_kib']['VmRSS'] / 2**20:.2f} GiB (peak {fig['rss_end_kib']['VmHWM'] / 2**20:.2f} GiB), "
              f"load average {fig['loadavg'][0]:.1f}", flush=True)
    except Exception as e:  # noqa: BLE001 - any failure is a test failure with its reason
        print(f"FAIL: {e!r}")
        ok = False
    finally:
        engine.stop()
        fig["run_s"] = round(time.time() - t_script, 1)
        fig.update(ok=ok, groups_within_interval=within, hang_alert_s=hang_alert_s, culprit_named=culprit_ok)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(fig, f, indent=1)
        if not a.keep and not a.work:
            shutil.rmtree(work, ignore_errors=True)
        elif not ok:
            for log in glob.glob(os.path.join(work, "*.log")):
                print(f"{log} tail:\n" + open(log).read()[-3000:])
    print(f"{'PASS' if ok else 'FAIL'} in {time.time() - t_script:.0f} s")
    rss_gib = fig.get("store_rss_kib", {}).get("VmHWM", 0) / 2**20
    print(f"scale: engine={engine.name} {'jobs=%d ' % jobs if jobs > 1 else ''}ranks={ranks} comms={comms} "
          f"groups_within_interval={'yes' if within else 'no'} "
          f"hang_alert_s={'%.1f' % hang_alert_s if hang_alert_s is not None else 'none'} culprit={culprit_ok} "
          f"store_rss_gib={rss_gib:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
