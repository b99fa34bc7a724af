#!/usr/bin/env python3
"""The shape of a recorded plugin-call trace (NCCLSCOPE_RECORD_DIR, format ncclscope.record.v1): which event
types NCCL starts under which parents, on which kind of thread, which states each type goes through, whether
events are stopped before their children start, and the order of the net plugin's calls. Values (pointers,
times, sizes) are left out, so a trace of real NCCL and one of ncclscope-sim can be compared.

  trace_shape.py TRACE.jsonl...                  prints the shape (one JSON object) of the traces together
  trace_shape.py --compare GOLDEN_DIR SIM_DIR    compares the two shapes, prints every difference, exit 1 if any
"""
import collections
import glob
import json
import os
import sys

TYPES = {0x1: "Group", 0x2: "Coll", 0x4: "P2p", 0x8: "ProxyOp", 0x10: "ProxyStep", 0x20: "ProxyCtrl",
         0x40: "KernelCh", 0x80: "NetPlugin", 0x100: "GroupApi", 0x200: "CollApi", 0x400: "P2pApi",
         0x800: "KernelLaunch", 0x1000: "CeColl", 0x2000: "CeSync", 0x4000: "CeBatch"}


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def thread_roles(lines):
    """Role of each recorded thread: 'app' (calls profiler init), 'proxy' (calls net isend/irecv/test),
    'service' (net connect/accept/listen), else 'other'; a thread can hold several roles."""
    roles = collections.defaultdict(set)
    for d in lines:
        c, t = d.get("call"), d.get("tid")
        if c == "init":
            roles[t].add("app")
        elif c in ("net.isend", "net.irecv", "net.test"):
            roles[t].add("proxy")
        elif c in ("net.connect", "net.accept", "net.listen"):
            roles[t].add("service")
    return {t: "+".join(sorted(r)) for t, r in roles.items()}


def shape(paths):
    edges, threads, states, unstopped, stop_first = (collections.Counter() for _ in range(5))
    net_calls, net_threads, fields = collections.Counter(), collections.Counter(), collections.defaultdict(set)
    for path in paths:
        lines = load(path)
        roles = thread_roles(lines)
        kind = {}            # handle id -> type name
        started_children = collections.defaultdict(int)
        stopped = set()
        seq = collections.defaultdict(list)
        for d in lines:
            c = d.get("call")
            role = roles.get(d.get("tid"), "other")
            if c == "startEvent":
                t = TYPES.get(int(d["type"], 16), "Unknown")
                p = d.get("parent")
                pt = "null" if p is None else ("foreign" if p.startswith("?") else kind.get(p, "unknown"))
                edges[f"{pt} -> {t}"] += 1
                threads[f"{t} on {role}"] += 1
                for arm in ("coll", "p2p", "proxyOp", "kernelCh", "collApi", "p2pApi", "groupApi"):
                    if arm in d:
                        fields[t] |= {k for k, v in d[arm].items() if v not in (None, 0, "0x0", False)}
                if p in kind:
                    if p in stopped:
                        stop_first[f"{kind[p]} stopped before a {t} child started"] += 1
                    started_children[p] += 1
                if d.get("handle"):
                    kind[d["handle"]] = t
            elif c == "stopEvent":
                h = d.get("handle")
                stopped.add(h)
                threads[f"stop {kind.get(h, 'unknown')} on {role}"] += 1
            elif c == "recordEventState":
                h = d.get("handle")
                seq[h].append(d["state"])
                threads[f"state {d['state']} of {kind.get(h, 'unknown')} on {role}"] += 1
            elif c and c.startswith("net."):
                net_calls[c] += 1
                net_threads[f"{c} on {role}"] += 1
        for h, t in kind.items():
            if h not in stopped:
                unstopped[t] += 1
        for h, s in seq.items():
            states[f"{kind.get(h, 'unknown')}: {' '.join(map(str, s))}"] += 1
    return {"edges": edges, "threads": threads, "states": states, "never_stopped": unstopped,
            "stopped_before_children": stop_first, "net_calls": net_calls, "net_threads": net_threads,
            "fields": {k: sorted(v) for k, v in fields.items()}}


def compare(golden, sim):
    """Differences in the sets of keys (counts differ with sizes and timing and are not compared)."""
    diffs = []
    for part in ("edges", "threads", "net_threads", "stopped_before_children"):
        g, s = set(golden[part]), set(sim[part])
        diffs += [f"{part}: only real NCCL: {k}" for k in sorted(g - s)]
        diffs += [f"{part}: only the sim: {k}" for k in sorted(s - g)]
    # State sequences: every sequence the sim produces must be one real NCCL produces.
    g, s = set(golden["states"]), set(sim["states"])
    diffs += [f"states: only the sim: {k}" for k in sorted(s - g)]
    for t in sorted(set(golden["fields"]) | set(sim["fields"])):
        g, s = set(golden["fields"].get(t, [])), set(sim["fields"].get(t, []))
        if g != s:
            diffs.append(f"fields of {t}: only real NCCL {sorted(g - s)}, only the sim {sorted(s - g)}")
    return diffs


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        traces = [sorted(glob.glob(os.path.join(d, "*.jsonl"))) for d in sys.argv[2:]]
        if not all(traces):
            print("no traces in one of", sys.argv[2:])
            return 2
        diffs = compare(*(shape(t) for t in traces))
        for d in diffs:
            print(d)
        print(f"{len(diffs)} difference(s)")
        return 1 if diffs else 0
    print(json.dumps(shape(sys.argv[1:]), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
