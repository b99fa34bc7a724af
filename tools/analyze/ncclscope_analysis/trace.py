"""Every rank's flight-recorder operations as one Chrome/Perfetto trace (trace event format).

One process per rank process (host, pid), named by its rank in the largest communicator. Tracks (threads) per
communicator: its collectives, and one per (peer, direction) of point-to-point operations. Slices ("X" events)
of one track must nest or not overlap (Perfetto draws a track as a stack), which a rank's Send and Recv, or
an in-flight operation and completed ones started after it but still running at the dump, do not; so each
track is split into lanes, and an operation goes to the first lane where it nests or follows. Times are each
host's CLOCK_MONOTONIC in microseconds: ranks of one host line up, ranks of different hosts do not (the dumps
hold no common clock).
"""
from .progress import op_name

COMPLETED_ARGS = ("bytes", "algo", "proto", "channels", "timing_source", "enqueued_ns", "arrival")
IN_FLIGHT_ARGS = ("bytes", "state", "kernel_channels_done", "channels", "net_steps_done", "net_steps_total")


def _track(rec):
    """(order, label) of the track of one operation: collectives first, then by peer, Send before Recv."""
    if rec.get("kind") == "p2p":
        peer = rec.get("peer", -1)
        send = rec.get("func") == "Send"
        return (1, peer if isinstance(peer, int) else -1, 0 if send else 1), \
            f"{rec.get('func')} {'to' if send else 'from'} {peer}"
    return (0,), "collectives"


def _slices(d):
    """[(start ns, duration ns, record, in flight)] of one dump, ints so that lanes compare exactly."""
    out = []
    for rec in d["flight_recorder"]["completed"]:
        start = rec.get("kernel_start_host_ns") or rec.get("start_ns", 0)
        out.append((int(start), max(0, int(rec.get("duration_ns", 0))), rec, False))
    for rec in d["flight_recorder"]["in_flight"]:
        out.append((int(rec.get("start_ns", 0)), max(0, int(rec.get("age_ns", 0))), rec, True))
    return out


def lanes(slices):
    """{index in slices: lane}: by start (longest first), each slice in the first lane where it follows what
    has ended or nests in the innermost slice still open. Each lane keeps the ends of its open slices."""
    stacks, lane = [], {}
    for i in sorted(range(len(slices)), key=lambda i: (slices[i][0], -slices[i][1])):
        start, end = slices[i][0], slices[i][0] + slices[i][1]
        for k, open_ends in enumerate(stacks):
            while open_ends and open_ends[-1] <= start:  # ended: no later slice (by start) can overlap it
                open_ends.pop()
            if not open_ends or end <= open_ends[-1]:
                break
        else:
            k = len(stacks)
            stacks.append([])
        stacks[k].append(end)
        lane[i] = k
    return lane


def _event(pid, tid, start, dur, rec, flying):
    keys = IN_FLIGHT_ARGS if flying else COMPLETED_ARGS
    return {"ph": "X", "pid": pid, "tid": tid, "name": op_name(rec) + (" (in flight)" if flying else ""),
            "cat": rec["kind"], "ts": start / 1e3, "dur": dur / 1e3, "args": {k: rec.get(k) for k in keys if k in rec}}


def _rank_events(pid, tids, comm, r, d):
    """The slices of one rank of one communicator, with a thread_name per (track, lane) it uses."""
    by_track = {}
    for s in _slices(d):
        by_track.setdefault(_track(s[2]), []).append(s)
    name = d.get("comm_name") or ""
    events = []
    for (order, label), slices in sorted(by_track.items()):
        lane = lanes(slices)
        for k in range(max(lane.values()) + 1):  # tids in lane order, so that lanes sort under their track
            tid = tids.setdefault((comm, order, k), len(tids))
            title = f"comm {comm} {name} rank {r}/{d['nranks']}: {label}".replace("  ", " ")
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": title + (f" (lane {k + 1})" if k else "")}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        events += [_event(pid, tids[(comm, order, lane[i])], *s) for i, s in enumerate(slices)]
    return events


def chrome_trace(comms):
    events = []
    procs = {}  # (host, pid or rank) -> (trace pid, {(comm, track order, lane): tid})
    for comm, ranks in sorted(comms.items(), key=lambda kv: -len(kv[1])):
        for r, d in sorted(ranks.items()):
            key = (d.get("host"), d.get("pid", f"{comm}/{r}"))
            if key not in procs:
                procs[key] = (len(procs), {})
                host = f" on {d['host']}" if d.get("host") else ""
                events.append({"ph": "M", "name": "process_name", "pid": procs[key][0],
                               "args": {"name": f"rank {r}{host}" + (f" (pid {d['pid']})" if "pid" in d else "")}})
                events.append({"ph": "M", "name": "process_sort_index", "pid": procs[key][0],
                               "args": {"sort_index": r}})
    for comm, ranks in sorted(comms.items()):
        for r, d in sorted(ranks.items()):
            pid, tids = procs[(d.get("host"), d.get("pid", f"{comm}/{r}"))]
            events += _rank_events(pid, tids, comm, r, d)
    return {"traceEvents": events, "displayTimeUnit": "ms"}
