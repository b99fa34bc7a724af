#!/usr/bin/env python3
"""What an operator reads about versions and the log, through the emulated job (ncclscope-sim exports
ncclGetVersion as NCCL does, answering the release its --abi emulates):
  - each rank's first ncclscope log line names ncclscope's version and NCCL's ("2.28.9" under --abi 2.28);
  - no line says "ncclscope: ncclscope" (one prefix, the logger's);
  - ncclscope_process_info carries nccl_version (the textfile of each rank, under 2.28 and 2.31);
  - NCCLSCOPE_SD_DIR with a loopback NCCLSCOPE_PROM_BIND warns once per rank that the published target is
    unreachable from another host; bound to every interface (the target is the host name) it does not.
Usage: version_and_logs_test.py SIM_BINARY PLUGIN_DIR VERSION"""
import glob
import os
import re
import subprocess
import sys
import tempfile

SIM, PLUGIN_DIR, VERSION = sys.argv[1], sys.argv[2], sys.argv[3]
FAILED = []
RANKS = 2


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(tmp, name, abi, extra_env):
    out = os.path.join(tmp, name)
    os.makedirs(os.path.join(out, "prom"))
    env = dict(os.environ, LD_LIBRARY_PATH=PLUGIN_DIR, NCCLSCOPE_TRANSPORT="tcp", NCCLSCOPE_SOCKET_IFNAME="=lo",
               NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="ALL", NCCLSCOPE_PROM_TEXTFILE_DIR=os.path.join(out, "prom"),
               **extra_env)
    for var in ("NCCLSCOPE_PROM_BIND", "NCCLSCOPE_SD_DIR", "NCCLSCOPE_PROM_PORT"):
        if var not in extra_env:
            env.pop(var, None)
    env.setdefault("NCCLSCOPE_PROM_PORT", "-1")
    p = subprocess.run([SIM, "--abi", abi, "--ranks", str(RANKS), "--iters", "2", "--warmup", "0", "--sizes", "1K:1K"],
                       env=env, capture_output=True, text=True, timeout=240)
    check(p.returncode == 0, f"{name}: sim --abi {abi} exits 0 (got {p.returncode}: {p.stderr[-400:]})")
    return out, p.stdout + p.stderr


def ncclscope_lines(log, rank):
    """The lines the plugin logged through NCCL's logger in `rank` (the sim prints "[rank] NCCL <LEVEL> ")."""
    return [line for line in log.splitlines()
            if re.search(rf"\[{rank}\] .*NCCL (INFO|WARN) ncclscope: ", line)]


def process_info(out):
    series = []
    for f in sorted(glob.glob(os.path.join(out, "prom", "*.prom"))):
        with open(f) as fh:
            series += [line for line in fh if line.startswith("ncclscope_process_info{")]
    return series


with tempfile.TemporaryDirectory() as tmp:
    for abi, nccl in (("2.28", "2.28.9"), ("2.31", "2.31.2")):
        out, log = run(tmp, f"abi{abi}", abi, {})
        for rank in range(RANKS):
            lines = ncclscope_lines(log, rank)
            first = lines[0] if lines else ""
            check(first.endswith(f"NCCL INFO ncclscope: version {VERSION} (NCCL {nccl})"),
                  f"--abi {abi}: rank {rank}'s first ncclscope line names both versions: {first!r}")
        doubled = [line for line in log.splitlines() if "ncclscope: ncclscope" in line]
        check(not doubled, f"--abi {abi}: no line carries the prefix twice ({doubled[:2]})")
        check(len(ncclscope_lines(log, 0)) >= 5, f"--abi {abi}: the plugin logged through NCCL's logger")
        info = process_info(out)
        check(len(info) == RANKS and all(f'nccl_version="{nccl}"' in s for s in info),
              f"--abi {abi}: every rank's ncclscope_process_info has nccl_version=\"{nccl}\": {info}")

    sd_warning = "a loopback address (NCCLSCOPE_PROM_BIND=127.0.0.1): a Prometheus on another host cannot scrape it"
    out, log = run(tmp, "loopback", "2.30", {"NCCLSCOPE_PROM_BIND": "127.0.0.1", "NCCLSCOPE_PROM_PORT": "0",
                                             "NCCLSCOPE_SD_DIR": os.path.join(tmp, "loopback", "sd")})
    for rank in range(RANKS):
        warnings = [line for line in ncclscope_lines(log, rank) if sd_warning in line]
        check(len(warnings) == 1 and "NCCL WARN" in warnings[0] and re.search(r"publishes target 127\.0\.0\.1:\d+",
                                                                              warnings[0]),
              f"loopback bind + file_sd: rank {rank} warns once, naming the target ({warnings})")
    targets = glob.glob(os.path.join(tmp, "loopback", "sd", "*.json"))
    check(len(targets) == RANKS, f"loopback bind + file_sd: the targets are still written ({len(targets)})")

    out, log = run(tmp, "all-interfaces", "2.30", {"NCCLSCOPE_PROM_BIND": "0.0.0.0", "NCCLSCOPE_PROM_PORT": "0",
                                                   "NCCLSCOPE_SD_DIR": os.path.join(tmp, "all-interfaces", "sd")})
    check("loopback address" not in log, "every interface + file_sd: no loopback warning")
    out, log = run(tmp, "loopback-no-sd", "2.30", {"NCCLSCOPE_PROM_BIND": "127.0.0.1", "NCCLSCOPE_PROM_PORT": "0"})
    check("loopback address" not in log, "loopback bind without file_sd: no warning")

if FAILED:
    print(f"{len(FAILED)} check(s) failed")
    sys.exit(1)
print("all checks passed")
