"""What one communicator did: operations and bytes per function, bus bandwidth, drops, per rank."""
from .progress import RankRuns, missing_fields


def _span(values):
    lo, hi = min(values), max(values)
    return lo if lo == hi else [lo, hi]


def summarize(ranks):
    """Per-function totals from each rank's `ops` table and bus bandwidth from its aggregates (nccl-tests
    bus bytes over GPU/proxy-timed duration, timed operations only, summed per function on load), plus dump
    metadata and drops."""
    d0 = next(iter(ranks.values()))
    funcs = {}
    for r, d in ranks.items():
        for o in d["ops"]:
            f = funcs.setdefault((o["kind"], o["func"]), {"ops": {}, "bytes": {}, "last_seq": {}, "bus": 0.0, "ns": 0})
            f["ops"][r] = o["count"]
            f["bytes"][r] = o["bytes"]
            f["last_seq"][r] = o["last_seq"]
        for key, (bus, ns) in d.get("_bus", {}).items():
            f = funcs.get(key)
            if f is not None:
                f["bus"] += bus
                f["ns"] += ns
    dropped = {}
    for r, d in sorted(ranks.items()):
        total = sum(v for v in d.get("dropped", {}).values() if isinstance(v, int))
        if total:
            dropped[r] = d["dropped"]
    ops_per_rank = max((sum(o["count"] for o in d["ops"]) for d in ranks.values()), default=0)
    return {
        "comm_name": d0.get("comm_name"), "nranks": d0["nranks"], "ranks_found": sorted(ranks),
        **missing_fields(RankRuns.missing(ranks, d0["nranks"]), "missing"),
        "hosts": sorted({d.get("host") for d in ranks.values() if d.get("host")}),
        "dump_reasons": sorted({d.get("reason") for d in ranks.values() if d.get("reason")}),
        "stalled": sorted(r for r, d in ranks.items() if d.get("stalled")),
        "ops_per_rank": ops_per_rank,
        "functions": [{
            "kind": k, "func": fn,
            "ops_per_rank": _span(f["ops"].values()), "bytes_per_rank": _span(f["bytes"].values()),
            "busbw_gbps": f["bus"] / f["ns"] if f["ns"] else None,
            "last_seq": dict(sorted(f["last_seq"].items()))} for (k, fn), f in sorted(funcs.items())],
        "dropped": dropped,
        "flight_recorder_overwritten": sorted(r for r, d in ranks.items()
                                              if (d.get("flight_recorder") or {}).get("overwritten")),
    }
