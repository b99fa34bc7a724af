"""What one communicator did: operations and bytes per function, bus bandwidth, drops, per rank."""


def _span(values):
    lo, hi = min(values), max(values)
    return lo if lo == hi else [lo, hi]


def summarize(ranks):
    """Per-function totals from each rank's `ops` table and bus bandwidth from its aggregates (nccl-tests
    bus bytes over GPU/proxy-timed duration, timed operations only), plus dump metadata and drops."""
    d0 = next(iter(ranks.values()))
    funcs = {}
    for r, d in ranks.items():
        for o in d["ops"]:
            f = funcs.setdefault((o["kind"], o["func"]), {"ops": {}, "bytes": {}, "last_seq": {}, "bus": 0.0, "ns": 0})
            f["ops"][r] = o["count"]
            f["bytes"][r] = o["bytes"]
            f["last_seq"][r] = o["last_seq"]
        for a in d.get("aggregates", []):
            f = funcs.get((a.get("kind"), a.get("func")))
            if f is not None and a.get("latency_count") and a.get("count"):
                # bus_bytes counts every operation of the bucket; only the timed ones have a duration.
                f["bus"] += a["bus_bytes"] * a["latency_count"] / a["count"]
                f["ns"] += a["latency_sum_ns"]
    dropped = {}
    for r, d in sorted(ranks.items()):
        total = sum(v for v in d.get("dropped", {}).values() if isinstance(v, int))
        if total:
            dropped[r] = d["dropped"]
    return {
        "comm_name": d0.get("comm_name"), "nranks": d0["nranks"], "ranks_found": sorted(ranks),
        "missing": sorted(set(range(d0["nranks"])) - set(ranks)),
        "hosts": {r: d.get("host") for r, d in sorted(ranks.items())},
        "dump_reasons": {r: d.get("reason") for r, d in sorted(ranks.items())},
        "stalled": sorted(r for r, d in ranks.items() if d.get("stalled")),
        "functions": [{
            "kind": k, "func": fn,
            "ops_per_rank": _span(f["ops"].values()), "bytes_per_rank": _span(f["bytes"].values()),
            "busbw_gbps": f["bus"] / f["ns"] if f["ns"] else None,
            "last_seq": dict(sorted(f["last_seq"].items()))} for (k, fn), f in sorted(funcs.items())],
        "dropped": dropped,
        "flight_recorder_overwritten": {r: d["flight_recorder"].get("overwritten", 0) for r, d in sorted(ranks.items())
                                        if d["flight_recorder"].get("overwritten")},
    }
