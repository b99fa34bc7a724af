#!/usr/bin/env python3
"""Checks deploy/kubernetes/ against the Kubernetes API and the Pod Security Standards.

Schema: every object of a kind the Kubernetes Python client (Debian: python3-kubernetes) models is checked
against that client's types, which are generated from the API's OpenAPI schema: no unknown field, every value of
its field's type, every required field present. The client has no PodMonitor (a Prometheus Operator CRD): that
one is only parsed (check_manifests.py checks its content).
Pod Security: every pod spec (a Pod, or a workload's pod template) passes the "restricted" profile (which
includes "baseline"): no host namespaces, ports, paths or privileged containers, only the restricted volume
types, non-root, no privilege escalation, capabilities dropped, a RuntimeDefault or Localhost seccomp profile;
and, as the example promises, a read-only root file system in every container.
The example pod: its init container copies into the emptyDir the trainer mounts, LD_LIBRARY_PATH leads with its
lib/, and the dump folder is per job on the PersistentVolumeClaim.
The checks are run on broken copies of the example too, each of which must fail.
Exit 77 (a ctest skip), saying why, when PyYAML or the Kubernetes client is missing."""
import copy
import glob
import os
import re
import sys

try:
    import yaml
    import kubernetes
    import kubernetes.client as k8s
except ImportError as e:
    # pyenv and venv interpreters lack Debian's python3-kubernetes; Debian's own interpreter has it.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print(f"SKIP: {e} (Debian: python3-yaml and python3-kubernetes, in scripts/install-deps.sh)")
    sys.exit(77)

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
PRIMITIVES = {"str": str, "int": int, "bool": bool, "float": (int, float)}
# resource.Quantity is a string in the client's types; the API takes a number too (nvidia.com/gpu: 8).
QUANTITY_FIELDS = {("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
                   ("V1EmptyDirVolumeSource", "size_limit")}


def check_type(value, type_name, where, errors, quantity=False):
    """Appends to errors where value does not fit the client's type type_name (e.g. 'list[V1Container]')."""
    if value is None:
        return
    m = re.fullmatch(r"list\[(.+)\]", type_name)
    if m:
        if not isinstance(value, list):
            errors.append(f"{where}: a list expected, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_type(item, m.group(1), f"{where}[{i}]", errors, quantity)
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{where}: a map expected, got {type(value).__name__}")
            return
        for key, item in value.items():
            check_type(item, m.group(1), f"{where}.{key}", errors, quantity)
        return
    if type_name == "object":  # IntOrString, RawExtension
        return
    if type_name in PRIMITIVES:
        allowed = (str, int, float) if quantity and type_name == "str" else PRIMITIVES[type_name]
        if isinstance(value, bool) and type_name != "bool" or not isinstance(value, allowed):
            errors.append(f"{where}: {type_name} expected, got {type(value).__name__} {value!r}")
        return
    if type_name == "datetime":
        return
    cls = getattr(k8s, type_name)
    if not isinstance(value, dict):
        errors.append(f"{where}: an object ({type_name}) expected, got {type(value).__name__}")
        return
    by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    for key, item in value.items():
        if key not in by_json:
            errors.append(f"{where}: unknown field {key!r} (not in {type_name})")
            continue
        attr = by_json[key]
        check_type(item, cls.openapi_types[attr], f"{where}.{key}", errors, (type_name, attr) in QUANTITY_FIELDS)


def schema_errors(doc, name):
    """The API schema's verdict on one object, or None when the client does not model its kind."""
    group_version = doc.get("apiVersion", "")
    group, _, version = group_version.rpartition("/")
    # Kubernetes' own groups ("", apps, batch, *.k8s.io) are modelled as V1Pod, V1Deployment...; a CRD's are not.
    type_name = f"{version.capitalize()}{doc.get('kind', '')}"
    if not hasattr(k8s, type_name) or not (group in ("", "apps", "batch", "policy") or group.endswith(".k8s.io")):
        return None
    errors = []
    check_type(doc, type_name, name, errors)
    if not errors:
        try:  # the client's constructors reject a missing required field
            k8s.ApiClient()._ApiClient__deserialize(doc, type_name)
        except ValueError as e:
            errors.append(f"{name}: {e}")
    return errors


BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {None, "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}


def pod_security_errors(spec, where):
    """The Pod Security Standards' restricted profile (baseline included), plus a read-only root everywhere."""
    errors = []
    pod_sc = spec.get("securityContext") or {}
    for host in ("hostNetwork", "hostPID", "hostIPC", "hostUsers"):
        if host != "hostUsers" and spec.get(host):
            errors.append(f"{where}: {host} (baseline)")
    for sysctl in pod_sc.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            errors.append(f"{where}: sysctl {sysctl.get('name')} (baseline)")
    for v in spec.get("volumes") or []:
        kinds = set(v) - {"name"}
        if "hostPath" in kinds:
            errors.append(f"{where}: volume {v.get('name')} is a hostPath (baseline)")
        elif not kinds <= RESTRICTED_VOLUMES:
            errors.append(f"{where}: volume {v.get('name')} is a {sorted(kinds)} (restricted)")
    containers = [("initContainers", c) for c in spec.get("initContainers") or []] + \
                 [("containers", c) for c in spec.get("containers") or []] + \
                 [("ephemeralContainers", c) for c in spec.get("ephemeralContainers") or []]
    if not any(kind == "containers" for kind, _ in containers):
        errors.append(f"{where}: no containers")

    def setting(sc, key):  # a container's setting, else the pod's
        return sc.get(key) if sc.get(key) is not None else pod_sc.get(key)

    for options in [pod_sc] + [(c.get("securityContext") or {}) for _, c in containers]:
        se = options.get("seLinuxOptions") or {}
        if se.get("type") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            errors.append(f"{where}: seLinuxOptions {se} (baseline)")
        if (options.get("windowsOptions") or {}).get("hostProcess"):
            errors.append(f"{where}: windowsOptions.hostProcess (baseline)")
        if options.get("runAsUser") == 0:
            errors.append(f"{where}: runAsUser 0 (restricted)")
    for kind, c in containers:
        name = f"{where}.{kind}[{c.get('name')}]"
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            errors.append(f"{name}: privileged (baseline)")
        if sc.get("procMount", "Default") != "Default":
            errors.append(f"{name}: procMount {sc.get('procMount')} (baseline)")
        for port in c.get("ports") or []:
            if port.get("hostPort"):
                errors.append(f"{name}: hostPort {port['hostPort']} (baseline)")
        caps = sc.get("capabilities") or {}
        for cap in caps.get("add") or []:
            if cap not in BASELINE_CAPS:
                errors.append(f"{name}: adds capability {cap} (baseline)")
            elif cap != "NET_BIND_SERVICE":
                errors.append(f"{name}: adds capability {cap} (restricted: NET_BIND_SERVICE only)")
        if "ALL" not in (caps.get("drop") or []):
            errors.append(f"{name}: capabilities do not drop ALL (restricted)")
        if sc.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{name}: allowPrivilegeEscalation is not false (restricted)")
        if setting(sc, "runAsNonRoot") is not True:
            errors.append(f"{name}: runAsNonRoot is not true, in the container or the pod (restricted)")
        seccomp = (setting(sc, "seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            errors.append(f"{name}: seccompProfile {seccomp}, not RuntimeDefault or Localhost (restricted)")
        if kind != "ephemeralContainers" and sc.get("readOnlyRootFilesystem") is not True:
            errors.append(f"{name}: readOnlyRootFilesystem is not true")
    return errors


def pod_specs(doc):
    """(where, pod spec) of a Pod or of a workload's pod template."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "Pod":
        yield f"{kind}/{doc['metadata']['name']}", spec
    elif "template" in spec:
        yield f"{kind}/{doc['metadata']['name']} template", spec["template"].get("spec") or {}
    elif "jobTemplate" in spec:
        yield f"{kind}/{doc['metadata']['name']} jobTemplate", spec["jobTemplate"]["spec"]["template"]["spec"]


def example_errors(pod):
    """The example pod's wiring: plugin volume, library path, per-job dump folder on the claim."""
    errors = []
    spec = pod["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    inits = spec.get("initContainers") or []
    trainer = spec["containers"][0]
    mounts = {m["name"]: m for m in trainer.get("volumeMounts", [])}
    env = {e["name"]: e for e in trainer.get("env", [])}
    if len(inits) != 1:
        return [f"the example has {len(inits)} init containers, not the one that copies ncclscope"]
    init = inits[0]
    if "ncclscope-init" not in init.get("image", ""):
        errors.append(f"the init container runs {init.get('image')}, not the ncclscope-init image")
    dest = (init.get("args") or ["/opt/ncclscope"])[0]
    init_mounts = [m for m in init.get("volumeMounts", []) if m["mountPath"] == dest]
    if not init_mounts:
        errors.append(f"the init container copies into {dest}, which it does not mount")
    else:
        shared = init_mounts[0]["name"]
        if "emptyDir" not in volumes.get(shared, {}):
            errors.append(f"the plugin volume {shared} is not an emptyDir")
        if shared not in mounts:
            errors.append(f"the trainer does not mount the plugin volume {shared}")
        else:
            lib = mounts[shared]["mountPath"] + "/lib"
            path = env.get("LD_LIBRARY_PATH", {}).get("value", "")
            if path.split(":")[0] != lib:
                errors.append(f"LD_LIBRARY_PATH {path!r} does not lead with {lib}")
    dump_dir = env.get("NCCLSCOPE_DUMP_DIR", {}).get("value", "")
    if "$(NCCLSCOPE_JOB_ID)" not in dump_dir:
        errors.append(f"NCCLSCOPE_DUMP_DIR {dump_dir!r} is not per job ($(NCCLSCOPE_JOB_ID))")
    names = [e["name"] for e in trainer.get("env", [])]
    if "NCCLSCOPE_JOB_ID" in names and "NCCLSCOPE_DUMP_DIR" in names and \
            names.index("NCCLSCOPE_JOB_ID") > names.index("NCCLSCOPE_DUMP_DIR"):
        errors.append("NCCLSCOPE_DUMP_DIR comes before NCCLSCOPE_JOB_ID, so $(NCCLSCOPE_JOB_ID) is not expanded")
    under = [m for m in mounts.values() if os.path.dirname(dump_dir.rstrip("/")) == m["mountPath"].rstrip("/")]
    if not under:
        errors.append(f"NCCLSCOPE_DUMP_DIR {dump_dir!r} is not one folder below a mount (ncclscope makes one level)")
    elif "persistentVolumeClaim" not in volumes.get(under[0]["name"], {}):
        errors.append(f"the dumps' volume {under[0]['name']} is no PersistentVolumeClaim: they die with the pod")
    elif under[0].get("readOnly"):
        errors.append("the dumps' volume is mounted read-only")
    return errors


def main():
    failures, schema_checked, parsed_only, pods = [], [], [], {}
    paths = sorted(glob.glob(os.path.join(ROOT, "deploy/kubernetes/**/*.yaml"), recursive=True))
    for path in paths:
        name = os.path.relpath(path, ROOT)
        try:
            docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
        except yaml.YAMLError as e:
            failures.append(f"{name}: {e}")
            continue
        for doc in docs:
            where = f"{name}: {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
            errors = schema_errors(doc, where)
            if errors is None:
                parsed_only.append(where)
            else:
                schema_checked.append(where)
                failures += errors
            for pod_where, spec in pod_specs(doc):
                failures += pod_security_errors(spec, f"{name}: {pod_where}")
                pods[doc["metadata"]["name"]] = doc
    if "ncclscope-example" not in pods:
        failures.append("deploy/kubernetes has no pod ncclscope-example")
    else:
        failures += example_errors(pods["ncclscope-example"])
        failures += self_test_failures(pods["ncclscope-example"])
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        return 1
    print(f"checked against the API types of the Kubernetes Python client {kubernetes.__version__}: "
          f"{', '.join(schema_checked)}")
    print(f"parsed only (a CRD the client does not model): {', '.join(parsed_only) or 'none'}")
    print(f"Pod Security 'restricted': {len(pods)} pod specs pass ({', '.join(sorted(pods))})")
    return 0


def self_test_failures(pod):
    """Each broken copy of the example must be caught: the checks above can fail."""
    def broken(change):
        doc = copy.deepcopy(pod)
        change(doc["spec"])
        return doc

    def trainer(spec):
        return spec["containers"][0]

    cases = {
        "a hostPath volume": lambda s: s["volumes"].append({"name": "h", "hostPath": {"path": "/var/log"}}),
        "hostNetwork": lambda s: s.update(hostNetwork=True),
        "a privileged trainer": lambda s: trainer(s)["securityContext"].update(privileged=True),
        "SYS_ADMIN added": lambda s: trainer(s)["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
        "no drop ALL in the init container":
            lambda s: s["initContainers"][0]["securityContext"]["capabilities"].update(drop=[]),
        "privilege escalation allowed": lambda s: trainer(s)["securityContext"].pop("allowPrivilegeEscalation"),
        "root allowed": lambda s: s["securityContext"].pop("runAsNonRoot"),
        "runAsUser 0 in a container": lambda s: trainer(s)["securityContext"].update(runAsUser=0),
        "seccomp Unconfined": lambda s: s["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        "a hostPort": lambda s: trainer(s)["ports"][0].update(hostPort=9850),
        "a writable root": lambda s: trainer(s)["securityContext"].update(readOnlyRootFilesystem=False),
        "a misspelt field": lambda s: trainer(s)["securityContext"].update(readOnlyRootFileSystem=True),
        "a port as a string": lambda s: trainer(s)["ports"][0].update(containerPort="9850"),
        "a container without a name": lambda s: trainer(s).pop("name"),
        "dumps beside their volume": lambda s: [m.update(mountPath="/opt/x") for m in trainer(s)["volumeMounts"]
                                            if m["name"] == "ncclscope-dumps"],
        "the library path without the plugin": lambda s: [e.update(value="/usr/lib") for e in trainer(s)["env"]
                                                          if e["name"] == "LD_LIBRARY_PATH"],
    }
    missed = []
    for what, change in cases.items():
        doc = broken(change)
        found = schema_errors(doc, "broken") + pod_security_errors(doc["spec"], "broken")
        if what.startswith(("dumps", "the library")):  # the example's own wiring
            found += example_errors(doc)
        if not found:
            missed.append(f"the checks miss {what} in the example pod")
        elif os.environ.get("VERBOSE"):
            print(f"{what}: {found[0]}")
    return missed


if __name__ == "__main__":
    sys.exit(main())
