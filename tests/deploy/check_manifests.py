#!/usr/bin/env python3
"""Checks deploy/: every Kubernetes manifest parses as YAML with apiVersion, kind and metadata.name; the
PodMonitor selects the example pod and keeps exactly its ncclscope ports (Prometheus anchors a relabel regex);
those ports are NCCLSCOPE_PROM_PORT's default base plus the local rank; the pod takes the ConfigMap it names,
the node name from spec.nodeName and the job from a pod label, the PodMonitor's `ncclscope_job` from the same
label; every NCCLSCOPE_* variable named anywhere in
deploy/ or in docs/kubernetes.md and docs/slurm.md is a declared parameter (src/common/param_list.inc); the
recipes set the profiler half only, the net half being a choice per cluster (the ConfigMap's comments, the batch
script's NET_HALF, run for each value); the Slurm scripts pass `bash -n`. Exit 77 (a ctest skip) when PyYAML is missing, saying so."""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is not installed (Debian: python3-yaml, in scripts/install-deps.sh)")
    sys.exit(77)

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
# Each check is described by what its failure means, so only the failures are printed.
checks = Checks(passed=None, failed="FAIL: ")
check, summary = checks.check, checks.summary


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


params = read("src/common/param_list.inc")
declared = set(re.findall(r'NCCLSCOPE_PARAM\(\w+, \w+, "(NCCLSCOPE_\w+)"', params))
base_port = int(re.search(r'"NCCLSCOPE_PROM_PORT", \w+, "(\d+)"', params).group(1))
check(len(declared) > 20, f"found only {len(declared)} parameters in param_list.inc")

docs = {}
for path in sorted(glob.glob(os.path.join(ROOT, "deploy/kubernetes/*.yaml"))):
    name = os.path.basename(path)
    for doc in yaml.safe_load_all(open(path)):
        if doc is None:
            continue
        for key in ("apiVersion", "kind"):
            check(isinstance(doc.get(key), str), f"{name}: no {key}")
        check(isinstance(doc.get("metadata", {}).get("name"), str), f"{name}: no metadata.name")
        # The Pod checked here is the example; the other pods (the dump reader) are check_pod_security.py's.
        if doc.get("kind") != "Pod" or doc.get("metadata", {}).get("name") == "ncclscope-example":
            docs[doc.get("kind")] = doc

for kind in ("PodMonitor", "ConfigMap", "Pod"):
    check(kind in docs, f"deploy/kubernetes has no {kind}")
if summary():
    sys.exit(1)  # the checks below read these three

monitor, config, pod = docs["PodMonitor"], docs["ConfigMap"], docs["Pod"]
check(monitor["apiVersion"] == "monitoring.coreos.com/v1", "PodMonitor: apiVersion")
selector = monitor["spec"]["selector"]["matchLabels"]
pod_labels = pod["metadata"].get("labels", {})
check(all(pod_labels.get(k) == v for k, v in selector.items()),
      f"PodMonitor selector {selector} misses the pod {pod_labels}")

container = pod["spec"]["containers"][0]
ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
endpoint = monitor["spec"]["podMetricsEndpoints"][0]
check(endpoint.get("path") == "/metrics", "PodMonitor: path is not /metrics")
keeps = [r for r in endpoint.get("relabelings", []) if r.get("action") == "keep"
         and r.get("sourceLabels") == ["__meta_kubernetes_pod_container_port_name"]]
check(len(keeps) == 1, "PodMonitor: no keep on the container port name")
if keeps:
    regex = re.compile(keeps[0]["regex"])
    kept = sorted(n for n in ports if regex.fullmatch(n))
    check(len(kept) == 8, f"PodMonitor keeps {kept} of {sorted(ports)}")
    for other in ("http", "metrics", "ncclscope", "xncclscope-1", "ncclscope-1x"):
        check(not regex.fullmatch(other), f"PodMonitor would scrape a port named {other}")
    for name in kept:
        check(len(name) <= 15, f"port name {name} is longer than Kubernetes allows (15)")
        local_rank = int(name.rsplit("-", 1)[1])
        check(ports[name] == base_port + local_rank, f"{name} is {ports[name]}, ncclscope serves local rank "
              f"{local_rank} on {base_port + local_rank}")

data = config.get("data", {})
check(all(isinstance(v, str) for v in data.values()), "ConfigMap data values must be strings")
# The recipes lead with the profiler half; the net half, in NCCL's data path, is a choice stated per cluster.
check(data.get("NCCL_PROFILER_PLUGIN") == "ncclscope", "ConfigMap: NCCL_PROFILER_PLUGIN is not ncclscope")
check("NCCL_NET_PLUGIN" not in data, "ConfigMap: the net half is set by default, not chosen per cluster")
config_text = read("deploy/kubernetes/configmap.yaml")
for choice in ('NCCLSCOPE_NET_CHAIN: "', "declines", 'NCCLSCOPE_TRANSPORT: "tcp"'):
    check(choice in config_text, f"ConfigMap: the net-half choices do not mention {choice!r}")
check(int(data.get("NCCLSCOPE_PROM_PORT", base_port)) == base_port, "ConfigMap's port differs from the pod's ports")
refs = [e["configMapRef"]["name"] for e in container.get("envFrom", []) if "configMapRef" in e]
check(config["metadata"]["name"] in refs, f"the pod takes ConfigMaps {refs}, not {config['metadata']['name']}")
env = {e["name"]: e for e in container.get("env", [])}
node = env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
check(node == "spec.nodeName", f"NODE_NAME comes from {node}, not spec.nodeName")
job = env.get("NCCLSCOPE_JOB_ID", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
check(job.startswith("metadata.labels['"), f"NCCLSCOPE_JOB_ID comes from {job!r}, not a pod label")
# `up`'s ncclscope_job must be the exposition's: the PodMonitor's last relabeling into it reads the same pod label
# (kubernetes_sd's name for it: non-alphanumerics become _), and honorLabels keeps the exposition's own as is.
job_label = re.sub(r"[^a-zA-Z0-9_]", "_", job[len("metadata.labels['"):-2])
into_job = [r["sourceLabels"] for r in endpoint.get("relabelings", []) if r.get("targetLabel") == "ncclscope_job"]
check(bool(into_job) and into_job[-1] == [f"__meta_kubernetes_pod_label_{job_label}"],
      f"PodMonitor: ncclscope_job from {into_job[-1:]}, the pod's NCCLSCOPE_JOB_ID from label {job_label}")
check(endpoint.get("honorLabels") is True, "PodMonitor: honorLabels is not true (identity labels become exported_*)")
mount = [m["mountPath"] for m in container.get("volumeMounts", [])]
check(data.get("NCCLSCOPE_DUMP_DIR") in mount,
      f"NCCLSCOPE_DUMP_DIR {data.get('NCCLSCOPE_DUMP_DIR')} is not mounted ({mount})")

# Every NCCLSCOPE_* name users will copy from deploy/ and the two pages is one ncclscope reads.
texts = {p: open(p).read() for p in glob.glob(os.path.join(ROOT, "deploy/**/*"), recursive=True) if os.path.isfile(p)}
for page in ("docs/kubernetes.md", "docs/slurm.md"):
    texts[page] = read(page)
for path, text in texts.items():
    for name in sorted(set(re.findall(r"\bNCCLSCOPE_[A-Z0-9_]*[A-Z0-9]\b", text))):
        check(name in declared, f"{os.path.relpath(path, ROOT)} names {name}, which is no ncclscope parameter")

# The batch script's two halves, run as written for each NET_HALF: the environment the ranks would get.
sbatch = read("deploy/slurm/train.sbatch")
halves = re.search(r"^# --- ncclscope's two halves.*?^# --- end of ncclscope's two halves ---$", sbatch, re.S | re.M)
check(halves is not None, "train.sbatch: no marked block of ncclscope's two halves")
if halves:
    def env_of(**given):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "NET_"))}
        env.update(given, NCCL_NET="AWS Libfabric")
        r = subprocess.run(["bash", "-c", "set -u\n" + halves.group(0) + "\nenv"], env=env, capture_output=True,
                           text=True)
        got = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        return r.returncode, {k: v for k, v in got.items() if k.startswith("NCCL")}
    for given, want in [({}, {"NCCL_PROFILER_PLUGIN": "ncclscope", "NCCL_NET": "AWS Libfabric"}),
                        ({"NET_HALF": "off"}, {"NCCL_PROFILER_PLUGIN": "ncclscope", "NCCL_NET": "AWS Libfabric"}),
                        ({"NET_HALF": "wrap", "NET_CHAIN": "ofi"},
                         {"NCCL_PROFILER_PLUGIN": "ncclscope", "NCCL_NET_PLUGIN": "ncclscope",
                          "NCCLSCOPE_NET_CHAIN": "ofi"}),
                        ({"NET_HALF": "tcp"}, {"NCCL_PROFILER_PLUGIN": "ncclscope", "NCCL_NET_PLUGIN": "ncclscope",
                                               "NCCLSCOPE_TRANSPORT": "tcp", "NCCL_NET": "AWS Libfabric"})]:
        rc, got = env_of(**given)
        check(rc == 0 and got == want, f"train.sbatch with {given}: rc {rc}, NCCL environment {got}, want {want}")
    for given in ({"NET_HALF": "wrap"}, {"NET_HALF": "ib"}):
        rc, _ = env_of(**given)
        check(rc != 0, f"train.sbatch with {given} goes on instead of stopping with a message")

# No page copies the old recipe that put the net half in every job.
for page in ("README.md", "docs/slurm.md", "docs/kubernetes.md", "docs/install.md", "docs/endpoint-security.md"):
    check("NCCL_NET_PLUGIN=ncclscope NCCL_PROFILER_PLUGIN=ncclscope" not in read(page),
          f"{page} still sets the net half for every cluster")

for script in glob.glob(os.path.join(ROOT, "deploy/slurm/*.sbatch")):
    r = subprocess.run(["bash", "-n", script], capture_output=True, text=True)
    check(r.returncode == 0, f"{script}: bash -n: {r.stderr.strip()}")

if summary():
    sys.exit(1)
print(f"deploy/ manifests fine: {len(docs)} Kubernetes objects, {len(texts)} files checked for parameter names")
