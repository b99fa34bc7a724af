#!/usr/bin/env python3
"""Summarises a `bench_net --runs=N --trace=FILE` trace (run_trace.h): per size and run, the plugin against the
plain pair measured next to it, then what might set a slow run apart:
  CPU s/GiB   each side's CPU seconds per GiB moved (the host's speed);
  helpers     where the transport's helper threads ran: each one's main CPU, '!' where a sender's and a
              receiver's helper shared one;
  rwnd%       the largest share of a plugin socket's busy time that the receiver's window held it back;
  rcvbuf MiB  the smallest receive buffer the kernel autotuned among the plugin's receiving sockets;
  rexmit      retransmitted segments on the plugin's sockets, and the host's TCP timeouts meanwhile;
  line ns     one cache line's round trip between the first two CPUs the process may use, just before the pair
              (cacheline_probe.h): how far apart the host kept them."""
import collections
import sys


def rows(path):
    """Every line of the trace as {key: value} (all values strings)."""
    return [dict(kv.split("=", 1) for kv in line.split()) for line in open(path)]


def parse(path):
    procs, threads, sockets, netstat, hosts = {}, collections.defaultdict(list), collections.defaultdict(list), {}, {}
    for row in rows(path):
        key = (int(row["size"]), int(row["run"]), row["role"])
        kind = row.get("kind", "process")
        if kind == "process":
            procs[key] = row
        elif kind == "thread":
            threads[key].append(row)
        elif kind == "socket":
            sockets[key].append(row)
        elif kind == "netstat":
            netstat[key] = row
        elif kind == "host":
            hosts[key[:2]] = row
    return procs, threads, sockets, netstat, hosts


def helpers(threads, prefix):
    """Main CPU of each of one process's threads whose name starts with prefix."""
    return [int(t["cpu"]) for t in threads if t["name"].startswith(prefix)]


def main(path):
    procs, threads, sockets, netstat, hosts = parse(path)
    runs = collections.defaultdict(dict)
    for (size, run, role), row in procs.items():
        runs[(size, run)][role] = row
    print(f"{'size':>8} {'run':>4} {'paired':>7}  CPU s/GiB plain s/r  plugin s/r   helpers tx | rx      rwnd%"
          f"  rcvbuf MiB  rexmit  timeouts  line ns")
    for (size, run), sides in sorted(runs.items()):
        if not {"plain-send", "plain-recv", "plugin-send", "plugin-recv"} <= sides.keys():
            continue
        cpu = {k: (float(v["user"]) + float(v["sys"])) / (int(v["bytes"]) / 2**30) for k, v in sides.items()}
        paired = float(sides["plain-send"]["secs"]) / float(sides["plugin-send"]["secs"])
        tx = helpers(threads.get((size, run, "plugin-send"), []), "ncclscope-tx")
        rx = helpers(threads.get((size, run, "plugin-recv"), []), "ncclscope-rx")
        shared = "!" if set(tx) & set(rx) else " "
        send_socks = sockets.get((size, run, "plugin-send"), [])
        recv_socks = sockets.get((size, run, "plugin-recv"), [])
        rwnd = max((int(s["rwnd_limited_us"]) / max(1, int(s["busy_us"])) for s in send_socks), default=0)
        rcvbuf = min((int(s["rcvbuf"]) / 2**20 for s in recv_socks), default=0)
        rexmit = sum(int(s["retrans"]) for s in send_socks)
        timeouts = netstat.get((size, run, "plugin-send"), {}).get("TCPTimeouts", "-")
        line_ns = hosts.get((size, run), {}).get("cacheline_rtt_ns", "-")
        print(f"{size >> 20:>5}MiB {run:>4} {paired:>6.2f}x  {cpu['plain-send']:>7.3f}/{cpu['plain-recv']:<6.3f}"
              f" {cpu['plugin-send']:>5.3f}/{cpu['plugin-recv']:<6.3f} {','.join(map(str, tx)) or '-':>6} |"
              f" {','.join(map(str, rx)) or '-':<6}{shared} {rwnd * 100:>5.0f}% {rcvbuf:>10.1f} {rexmit:>7} {timeouts:>9}"
              f" {line_ns:>8}")


if __name__ == "__main__":
    main(sys.argv[1])
