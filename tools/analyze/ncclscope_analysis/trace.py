"""Every rank's flight-recorder operations as one Chrome/Perfetto trace (trace event format).

One process per rank process (host, pid), named by its rank in the largest communicator; one track (thread)
per communicator. Times are each host's CLOCK_MONOTONIC in microseconds: ranks of one host line up, ranks of
different hosts do not (the dumps hold no common clock).
"""
from .progress import op_name


def chrome_trace(comms):
    events = []
    procs = {}  # (host, pid or rank) -> (trace pid, label rank, label size)
    for comm, ranks in sorted(comms.items(), key=lambda kv: -len(kv[1])):
        for r, d in sorted(ranks.items()):
            key = (d.get("host"), d.get("pid", f"{comm}/{r}"))
            if key not in procs:
                procs[key] = len(procs)
                host = f" on {d['host']}" if d.get("host") else ""
                events.append({"ph": "M", "name": "process_name", "pid": procs[key],
                               "args": {"name": f"rank {r}{host}" + (f" (pid {d['pid']})" if "pid" in d else "")}})
                events.append({"ph": "M", "name": "process_sort_index", "pid": procs[key], "args": {"sort_index": r}})
    for tid, (comm, ranks) in enumerate(sorted(comms.items())):
        for r, d in sorted(ranks.items()):
            pid = procs[(d.get("host"), d.get("pid", f"{comm}/{r}"))]
            name = d.get("comm_name") or ""
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": f"comm {comm} {name} rank {r}/{d['nranks']}".rstrip()}})
            for rec in d["flight_recorder"]["completed"]:
                start = rec.get("kernel_start_host_ns") or rec.get("start_ns", 0)
                events.append({"ph": "X", "pid": pid, "tid": tid, "name": op_name(rec), "cat": rec["kind"],
                               "ts": start / 1e3, "dur": rec.get("duration_ns", 0) / 1e3,
                               "args": {k: rec.get(k) for k in ("bytes", "algo", "proto", "channels", "timing_source",
                                                                "enqueued_ns", "arrival") if k in rec}})
            for rec in d["flight_recorder"]["in_flight"]:
                events.append({"ph": "X", "pid": pid, "tid": tid, "name": op_name(rec) + " (in flight)",
                               "cat": rec["kind"], "ts": rec.get("start_ns", 0) / 1e3, "dur": rec.get("age_ns", 0) / 1e3,
                               "args": {k: rec.get(k) for k in ("bytes", "state", "kernel_channels_done", "channels",
                                                                "net_steps_done", "net_steps_total") if k in rec}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}
