#!/usr/bin/env python3
"""A hang under NCCL 2.31's default event mask in ncclscope (0x6: no KernelCh, so an operation counts as done once
enqueued), with the built plugins and the emulated job (--abi 2.31). Checks:
  - over ncclscope's own TCP transport, --hang 1@3 on 2 ranks: rank 0 logs the stall of its still connections,
    naming global rank 1; its stall dump has a wait with network_only and the peer; its metrics textfile says
    completion_seen by="network" and exports the wait series; ncclscope-analyze names global rank 1, exit 1;
  - over another net plugin (a plain TCP plugin, not ncclscope), the same hang: nothing can see it, and that is
    said: one WARN at init, completion_seen by="none" in the textfile, and ncclscope-analyze on the dumps the
    ranks write on SIGUSR2 says "cannot tell" with exit 5, never "healthy".
The hangs end once the test has seen what it checks (SIGUSR1 to the launcher), within a generous --timeout.
Usage: sim_no_kernelch_test.py SIM_BINARY PLUGIN_DIR ANALYZER"""
import glob
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

SIM, PLUGIN_DIR, ANALYZER = sys.argv[1], sys.argv[2], sys.argv[3]
FAILED = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILED.append(what)


def start(work, net_plugin=None):
    env = dict(os.environ, LD_LIBRARY_PATH=PLUGIN_DIR + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
               NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="lo", NCCLSCOPE_PROM_PORT="-1",
               NCCLSCOPE_DUMP_DIR=os.path.join(work, "dumps"), NCCLSCOPE_PROM_TEXTFILE_DIR=os.path.join(work, "textfile"),
               NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S="1", NCCLSCOPE_JOB_ID="nokch", NCCLSCOPE_STALL_TIMEOUT_S="2")
    env.pop("NCCLSCOPE_EVENT_MASK", None)  # the default for the emulated NCCL 2.31
    os.makedirs(env["NCCLSCOPE_DUMP_DIR"])
    os.makedirs(env["NCCLSCOPE_PROM_TEXTFILE_DIR"])
    argv = [SIM, "--ranks", "2", "--iters", "20", "--sizes", "4K:16K", "--hang", "1@3", "--timeout", "90",
            "--expect-hang", "--abi", "2.31"] + (["--net-plugin", net_plugin] if net_plugin else [])
    log = open(os.path.join(work, "stderr.log"), "w+")
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True), log


def stderr_of(log):
    log.flush()
    with open(log.name) as f:
        return f.read()


def wait_for(what, pred, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.25)
    return None


def dumps(work, rank=None):
    out = []
    for path in glob.glob(os.path.join(work, "dumps", "**", "ncclscope-comm-*"), recursive=True):
        if rank is not None and f"-rank{rank}" not in os.path.basename(path):
            continue
        try:
            with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
                out.append(json.JSONDecoder().raw_decode(f.read().lstrip())[0])
        except (OSError, ValueError, EOFError):
            pass  # being written: read on the next look
    return out


def textfiles(work):
    text = ""
    for path in glob.glob(os.path.join(work, "textfile", "*.prom")):
        with open(path) as f:
            text += f.read()
    return text


def analyze(work):
    r = subprocess.run([sys.executable, ANALYZER, os.path.join(work, "dumps"), "--json"], capture_output=True,
                       text=True, timeout=120)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"error": r.stderr[-400:]}


def finish(proc, log):
    try:
        proc.send_signal(signal.SIGUSR1)  # the launcher ends the job as at its timeout
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def over_ncclscope_tcp(work):
    proc, log = start(work)
    try:
        line = wait_for("the stall line", lambda: next(
            (ln for ln in stderr_of(log).splitlines() if "connections moved nothing" in ln), None))
        check(line is not None and "global rank 1" in line,
              f"rank 0 logs its still connections and whom it waits on: {line!r}")
        stall = wait_for("rank 0's stall dump", lambda: next(
            (d for d in dumps(work, 0) if (d.get("wait") or {}).get("network_only")), None))
        w = (stall or {}).get("wait") or {}
        peers = w.get("peers") or []
        check(stall is not None and w.get("class") == "peer" and peers and peers[0].get("peer_global_rank") == 1,
              f"rank 0's stall dump: a network-only wait on global rank 1 ({w})")
        check(stall is not None and stall.get("completion_seen") == "network", "its dump says completion_seen network")
        text = wait_for("the wait series", lambda: (lambda t: t if "ncclscope_comm_wait_seconds{" in t else None)(
            textfiles(work)))
        check(text is not None and 'ncclscope_comm_completion_seen{' in text and 'by="network"' in text,
              "the textfile exports completion_seen by=\"network\" and the wait series")
        # The rank that stopped issuing is idle on every communicator: it exports its collectives issued, by
        # "network", one behind rank 0's beside its wait (the hang rules' idle rule compares the two).
        idle = wait_for("rank 1's idle series", lambda: (lambda t: t if re.search(
            r'^ncclscope_comm_idle_last_seq\{[^}]*by="network"[^}]*,global_rank="1"', t, re.M) else None)(
            textfiles(work)))
        waiting = re.search(r'^ncclscope_comm_wait_last_seq\{[^}]*,global_rank="0"[^}]*\} (\S+)', idle or "", re.M)
        behind = re.search(r'^ncclscope_comm_idle_last_seq\{[^}]*,global_rank="1"[^}]*\} (\S+)', idle or "", re.M)
        check(waiting is not None and behind is not None and float(behind.group(1)) < float(waiting.group(1)),
              f"rank 1 exports ncclscope_comm_idle_last_seq by=network, behind rank 0's ncclscope_comm_wait_last_seq "
              f"({behind and behind.group(1)} < {waiting and waiting.group(1)})")
    finally:
        finish(proc, log)
    code, report = analyze(work)
    culprits = [(c.get("class"), c.get("global_rank")) for c in report.get("culprits", [])]
    check(code == 1 and any(g == 1 for _, g in culprits),
          f"ncclscope-analyze names global rank 1 (exit {code}, culprits {culprits}, {report.get('verdict')})")


def over_another_plugin(work):
    inner = os.path.join(PLUGIN_DIR, "libnccl-net-inner-tcp-v12.so")
    if not os.path.exists(inner):
        check(False, f"{inner} is built with the tests (tests/net/inner)")
        return
    proc, log = start(work, net_plugin=inner)
    try:
        text = wait_for("completion_seen none", lambda: (lambda t: t if 'by="none"' in t else None)(textfiles(work)))
        check(text is not None, "the textfile says completion_seen by=\"none\"")
        warn = wait_for("the init WARN", lambda: "has no KernelCh" in stderr_of(log))
        check(bool(warn), "one WARN at init says the mask has no KernelCh")
        time.sleep(3)  # past the stall floor and timeout: still nothing can be flagged
        before = {p for p in glob.glob(os.path.join(work, "dumps", "**", "*"), recursive=True)}
        for pid in children(proc.pid):
            os.kill(pid, signal.SIGUSR2)
        wait_for("a request dump per rank", lambda: len([p for p in glob.glob(
            os.path.join(work, "dumps", "**", "*request*"), recursive=True) if p not in before]) >= 2, timeout=30)
        check(stderr_of(log).count("has no KernelCh") == 2, "the WARN once per rank process")
    finally:
        finish(proc, log)
    code, report = analyze(work)
    check(code == 5 and report.get("status") == "cannot_tell" and "cannot tell" in report.get("verdict", ""),
          f"ncclscope-analyze says cannot tell, exit 5 (exit {code}: {report.get('verdict') or report})")


def children(pid):
    out = []
    for status in glob.glob("/proc/[0-9]*/status"):
        try:
            with open(status) as f:
                if any(ln.split()[1:] == [str(pid)] for ln in f if ln.startswith("PPid:")):
                    out.append(int(status.split("/")[2]))
        except OSError:
            pass
    return out


def main():
    with tempfile.TemporaryDirectory(prefix="ncclscope-nokch-") as work:
        os.makedirs(os.path.join(work, "tcp"))
        over_ncclscope_tcp(os.path.join(work, "tcp"))
        os.makedirs(os.path.join(work, "other"))
        over_another_plugin(os.path.join(work, "other"))
    print("FAILED: " + "; ".join(FAILED) if FAILED else "PASS")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
