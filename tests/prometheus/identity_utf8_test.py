#!/usr/bin/env python3
"""Identity values that are not plain text through a 2-rank ncclscope-sim job. Every identity
variable holds invalid UTF-8, control characters (a newline that would forge a log line) and, for the launcher
fallbacks, 100 KB. Checked, for two jobs (one where NCCLSCOPE_JOB_ID and NCCLSCOPE_NODE_NAME win, one where only
the fallbacks TORCHELASTIC_RUN_ID and NODE_NAME are set):
  - `promtool check metrics` passes on each rank's /metrics exposition and on each rank's textfile;
  - the job and host labels are the same in the file_sd target file, the textfile and the exposition, and are what
    the documented rule makes of the raw bytes (invalid UTF-8 and control characters -> U+FFFD, cut at 256 bytes
    on a character boundary), computed here independently with Python's UTF-8 decoder;
  - the file_sd file is strict UTF-8 JSON; an exposition stays small; no log line starts with forged text.
Usage: identity_utf8_test.py SIM_BINARY PLUGIN_DIR"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import check, summary  # noqa: E402

SIM, PLUGIN_DIR = sys.argv[1], sys.argv[2]
RANKS = 2
MAX_BYTES = 256  # kMaxIdentityValueBytes (src/common/safe_text.h)

if shutil.which("promtool") is None:
    print("SKIP: promtool is not installed (scripts/install-deps.sh installs prometheus)")
    sys.exit(77)


def expected(raw):
    """The documented rule, independently: Python's decoder replaces each maximal invalid subpart with U+FFFD."""
    text = "".join("\ufffd" if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else c
                   for c in raw.decode("utf-8", errors="replace"))
    out, size = "", 0
    for c in text:
        size += len(c.encode())
        if size > MAX_BYTES:
            break
        out += c
    return out


LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def labels_of(exposition, metric):
    """The labels of the first sample of `metric` in a text exposition, unescaped."""
    for line in exposition.splitlines():
        if line.startswith(metric + "{"):
            return {k: re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], v) for k, v in LABEL.findall(line)}
    return {}


def promtool_ok(body, what):
    p = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=60)
    check(p.returncode == 0, f"{what}: promtool check metrics passes (rc {p.returncode}: {(p.stdout + p.stderr)[-300:]!r})")


def run_job(tmp, name, identity_env, with_sd):
    out = os.path.join(tmp, name)
    for d in ("prom", "sd"):
        os.makedirs(os.path.join(out, d))
    env = {k.encode(): v.encode() for k, v in os.environ.items()
           if not k.startswith("NCCLSCOPE_") and k not in ("SLURM_JOB_ID", "NODE_NAME", "FLUX_JOB_ID", "PBS_JOBID",
                                                            "LSB_JOBID", "JOBSET_NAME", "TORCHELASTIC_RUN_ID")}
    env.update({b"LD_LIBRARY_PATH": PLUGIN_DIR.encode(), b"NCCLSCOPE_TRANSPORT": b"tcp",
                b"NCCLSCOPE_SOCKET_IFNAME": b"=lo", b"NCCL_DEBUG": b"INFO", b"NCCLSCOPE_PROM_PORT": b"0",
                b"NCCLSCOPE_PROM_BIND": b"127.0.0.1", b"NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S": b"1",
                b"NCCLSCOPE_PROM_TEXTFILE_DIR": os.path.join(out, "prom").encode()})
    if with_sd:
        env[b"NCCLSCOPE_SD_DIR"] = os.path.join(out, "sd").encode()
    env.update(identity_env)
    log = open(os.path.join(out, "sim.log"), "wb")
    # Runs until killed: the endpoints are scraped while the ranks live (their own session: one kill ends them).
    p = subprocess.Popen([SIM, "--ranks", str(RANKS), "--iters", "100000000", "--sizes", "64K:64K"], env=env,
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    result = {"sd": [], "metrics": [], "textfiles": []}
    try:
        deadline = time.time() + 90
        while time.time() < deadline and p.poll() is None:
            textfiles = glob.glob(os.path.join(out, "prom", "*.prom"))
            ports = re.findall(rb"metrics endpoint at http://[^:]*:(\d+)/metrics", open(os.path.join(out, "sim.log"), "rb").read())
            if len(textfiles) == RANKS and len(set(ports)) == RANKS:
                break
            time.sleep(0.5)
        ports = sorted(set(re.findall(rb"metrics endpoint at http://[^:]*:(\d+)/metrics",
                                      open(os.path.join(out, "sim.log"), "rb").read())))
        check(len(ports) == RANKS, f"{name}: {RANKS} endpoints logged (got {len(ports)})")
        for port in ports:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{int(port)}/metrics", timeout=10) as r:
                    result["metrics"].append(r.read())
            except OSError as e:  # the job's log says why: a rank that ended, or the endpoint's own warning
                tail = open(os.path.join(out, "sim.log"), "rb").read()[-3000:].decode("utf-8", errors="replace")
                check(False, f"{name}: scrape of port {int(port)} failed ({e!r}; job running: {p.poll() is None}); "
                             f"log tail:\n{tail}")
        time.sleep(1.5)  # one more textfile write, with the communicator's series
        for f in sorted(glob.glob(os.path.join(out, "prom", "*.prom"))):
            result["textfiles"].append(open(f, "rb").read())
        for f in sorted(glob.glob(os.path.join(out, "sd", "*.json"))):
            result["sd"].append(open(f, "rb").read())
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        log.close()
    result["log"] = open(os.path.join(out, "sim.log"), "rb").read()
    return result


def check_job(name, result, want_job, want_host, with_sd):
    check(len(result["metrics"]) == RANKS and len(result["textfiles"]) == RANKS,
          f"{name}: {RANKS} expositions and {RANKS} textfiles")
    for i, body in enumerate(result["metrics"]):
        promtool_ok(body, f"{name}: rank endpoint {i} /metrics")
        check(len(body) < 512 * 1024, f"{name}: endpoint {i} exposition is {len(body)} bytes")
        if not with_sd:  # without file_sd the endpoint carries the identity on ncclscope_process_info
            got = labels_of(body.decode("utf-8", errors="replace"), "ncclscope_process_info")
            check(got.get("ncclscope_job") == want_job and got.get("host") == want_host,
                  f"{name}: endpoint {i}'s process_info job/host are the expected safe values "
                  f"(job {got.get('ncclscope_job', '')[:40]!r}…)")
    for i, body in enumerate(result["textfiles"]):
        promtool_ok(body, f"{name}: textfile {i}")
        # The textfile repeats the identity on every series: a 100 KB job id made megabytes of it.
        check(len(body) < 512 * 1024, f"{name}: textfile {i} is {len(body)} bytes")
        got = labels_of(body.decode("utf-8", errors="replace"), "ncclscope_process_info")
        check(got.get("ncclscope_job") == want_job and got.get("host") == want_host,
              f"{name}: textfile {i}'s job/host are the expected safe values")
    if with_sd:
        check(len(result["sd"]) == RANKS, f"{name}: {RANKS} file_sd target files")
        for i, body in enumerate(result["sd"]):
            labels = json.loads(body.decode("utf-8"))[0]["labels"]  # strict: raises on invalid UTF-8
            check(labels.get("ncclscope_job") == want_job and labels.get("host") == want_host,
                  f"{name}: file_sd {i} carries the same job/host labels as the exposition and textfile")
    forged = [l for l in result["log"].splitlines() if l.startswith(b"FORGED")]
    check(not forged, f"{name}: no log line starts with the text after a newline in a value ({forged[:1]})")
    check(b"was not plain UTF-8 text" in result["log"], f"{name}: the identity warning is logged")


with tempfile.TemporaryDirectory() as tmp:
    bad = b"j\xff\xfe\xc0\xaf\xed\xa0\x80-\xe6\x97\nFORGED line\x1b[2J\x7f\xc2\x85-\xc3\xa9"
    first = {b"NCCLSCOPE_JOB_ID": b"own-" + bad, b"SLURM_JOB_ID": b"slurm-" + bad, b"FLUX_JOB_ID": b"flux-" + bad,
             b"PBS_JOBID": b"pbs-" + bad, b"LSB_JOBID": b"lsb-" + bad, b"JOBSET_NAME": b"set-" + bad,
             b"TORCHELASTIC_RUN_ID": b"te-" + bad, b"NCCLSCOPE_NODE_NAME": b"node-" + bad,
             b"NODE_NAME": b"k8s-" + bad}
    r = run_job(tmp, "own", first, with_sd=True)
    check_job("own", r, expected(first[b"NCCLSCOPE_JOB_ID"]), expected(first[b"NCCLSCOPE_NODE_NAME"]), True)

    # The fallbacks alone, the job id 100 KB long: cut to 256 bytes, no 6.7 MB exposition.
    second = {b"TORCHELASTIC_RUN_ID": b"te-" + bad + b"\xe2\x82\xac" * (100 * 1024 // 3), b"NODE_NAME": b"k8s-" + bad}
    r = run_job(tmp, "fallbacks", second, with_sd=False)
    want = expected(second[b"TORCHELASTIC_RUN_ID"])
    check(len(want.encode()) <= MAX_BYTES and len(want.encode()) > MAX_BYTES - 3, "the expected job label is cut")
    check_job("fallbacks", r, want, expected(second[b"NODE_NAME"]), False)

sys.exit(summary(passed="PASS"))
