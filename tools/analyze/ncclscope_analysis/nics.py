"""Degraded NICs from the dumps, by the evidence and thresholds of the live alert NcclscopeNicDegraded
(mixin/config.libsonnet): each dump's host_nics holds what its host's RDMA ports counted since the rank began
(retransmission, congestion and error events) and the TCP transport's retransmissions per NIC. A NIC is named when
its retransmission and error events per second exceed EVENTS_PER_SECOND and reach DOMINANCE of the job's busiest
NIC's rate, with at least MIN_EVENTS of them (what the alert's 20 s window needs at that rate: a short job's
connection setup retransmits a few segments). Per host and NIC the largest rate any dump shows counts (every rank
of a host sees the same ports).
The rates are over the ranks' lives, not the alert's 20 s, so a fault late in a long job counts less here.
A NIC whose link went down since the rank began (an RDMA port's link_downs, or the carrier changes of an interface
the rank uses, two per down and up) is named as flapping, as NcclscopeNicFlapping does live: the dumps cannot tell
the job's slowdown window, so every link down counts.
Each dump also says which NICs its rank's traffic uses (rank_nics: exact where ncclscope carries it, inferred
from NCCL_IB_HCA and the PCI tree where NCCL's own transport does), so a degraded NIC is named with its ranks.
"""

EVENTS_PER_SECOND = 1.0
DOMINANCE = 0.25
MIN_EVENTS = 20


def _rates(comms):
    """{(host, nic, port or None): (events, seconds)} with the largest rate per key."""
    best = {}

    def keep(key, events, seconds):
        if seconds > 0 and (key not in best or events / seconds > best[key][0] / best[key][1]):
            best[key] = (events, seconds)

    for ranks in comms.values():
        for d in ranks.values():
            h = d.get("host_nics")
            if not isinstance(h, dict):
                continue
            seconds = h.get("seconds") or 0
            for p in h.get("rdma") or []:
                keep((d.get("host"), p["nic"], p["port"]), p["retransmit"] + p["error"], seconds)
            for t in h.get("tcp") or []:
                keep((d.get("host"), t["nic"], None), t["retransmits"], seconds)
    return best


def _users(comms):
    """{(host, nic, port or None): ({rank}, {mapping})}: the ranks (global where known) whose traffic uses the NIC."""
    users = {}
    for ranks in comms.values():
        for r, d in ranks.items():
            uses = ((d.get("host_nics") or {}).get("rank_nics")) or {}
            rank = (d.get("identity") or {}).get("global_rank")
            for n in uses.get("nics") or []:
                entry = users.setdefault((d.get("host"), n["nic"], n.get("port")), (set(), set()))
                entry[0].add(rank if rank is not None else r)
                entry[1].add(uses.get("mapping"))
    return users


def degraded(comms):
    """The degraded NICs, busiest first: [{"host", "nic", "port", "events", "seconds", "per_second", "ranks",
    "mapping"}] (ranks: those whose traffic uses the NIC, [] when no dump says)."""
    best = _rates(comms)
    rates = {k: e / s for k, (e, s) in best.items()}
    top = max(rates.values(), default=0.0)
    users = _users(comms)
    named = [k for k, r in rates.items()
             if r > EVENTS_PER_SECOND and r >= DOMINANCE * top and best[k][0] >= MIN_EVENTS]
    return [{"host": k[0], "nic": k[1], "port": k[2], "events": best[k][0], "seconds": round(best[k][1], 1),
             "per_second": round(rates[k], 2), "ranks": sorted(users.get(k, ((), ()))[0]),
             "mapping": ",".join(sorted(m for m in users.get(k, ((), ()))[1] if m))}
            for k in sorted(named, key=lambda k: -rates[k])]


def flapping(comms):
    """The NICs whose link went down, most downs first: [{"host", "nic", "port", "link_downs", "ranks",
    "mapping"}]. Per host and NIC the most any dump counts (the ranks of a host began at different times)."""
    downs = {}
    for ranks in comms.values():
        for d in ranks.values():
            h = d.get("host_nics")
            if not isinstance(h, dict):
                continue
            for p in h.get("rdma") or []:
                key = (d.get("host"), p["nic"], p["port"])
                downs[key] = max(downs.get(key, 0), p.get("link_downs", 0))
            for n in h.get("netdevs") or []:
                key = (d.get("host"), n["nic"], None)
                downs[key] = max(downs.get(key, 0), (n["carrier_changes"] + 1) // 2)
    users = _users(comms)
    return [{"host": k[0], "nic": k[1], "port": k[2], "link_downs": n, "ranks": sorted(users.get(k, ((), ()))[0]),
             "mapping": ",".join(sorted(m for m in users.get(k, ((), ()))[1] if m))}
            for k, n in sorted(downs.items(), key=lambda kv: (-kv[1], str(kv[0]))) if n > 0]


def _used_by(n):
    return (f"; used by rank{'s' if len(n['ranks']) > 1 else ''} {', '.join(map(str, n['ranks']))}"
            f" ({n['mapping']})" if n.get("ranks") else "")


def describe_flap(n):
    port = f" port {n['port']}" if n["port"] is not None else ""
    return f"NIC {n['nic']}{port} on {n['host']}: its link went down {n['link_downs']} time(s){_used_by(n)}"


def describe(n):
    port = f" port {n['port']}" if n["port"] is not None else ""
    return (f"NIC {n['nic']}{port} on {n['host']}: {n['events']} retransmission and error events in "
            f"{n['seconds']:.0f} s ({n['per_second']:.1f}/s){_used_by(n)}")
