"""What one rank had issued and what it had in flight when its dump was written.

Collectives are numbered per communicator and function by NCCL (seq from 0), so equal (func, seq) on two ranks
is the same collective. Point-to-point operations are numbered by ncclscope per (peer, direction) from 1:
rank A's Send to B #k pairs with rank B's Recv from A #k. A v2 summary has the last number per (peer,
direction) (`p2p`); a v1 dump only had its flight recorder, so there it is unknown (None) once the recorder has
overwritten entries and holds none for that peer.
"""

PAIRED = {"Send": "Recv", "Recv": "Send"}


def last_coll_seq(d):
    """{func: last collective sequence number issued}."""
    return {o["func"]: o["last_seq"] for o in d["ops"] if o["kind"] == "coll"}


def last_p2p_seq(d, func, peer):
    """Last #k of func (Send/Recv) with peer that this rank issued; 0 if none; None if it cannot be told."""
    table = d.get("_p2p_last")
    if table is None:
        table = d["_p2p_last"] = {(e["peer"], e["func"]): e["last_seq"] for e in d["p2p"]}
    seq = table.get((peer, func))
    if seq is not None:
        return seq
    return 0 if d.get("_p2p_exact", True) else None


def realtime_offset_ns(d):
    """realtime - monotonic in ns from the dump's clock sample (the middle of its two monotonic reads), or None."""
    c = d.get("clock")
    return c["realtime_ns"] - (c["mono_before_ns"] + c["mono_after_ns"]) // 2 if c else None


def in_flight(d):
    """In-flight operations, oldest arrival first."""
    return sorted(d["in_flight"], key=lambda r: r.get("arrival", 0))


def ranges(rs):
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8': rank sets of 16,384 ranks stay one short line."""
    rs = sorted(rs)
    out, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}" if j > i + 1 else f"{rs[i]},{rs[j]}")
        i = j + 1
    return ",".join(out)


def rank_list(rs):
    """'rank 3' / 'ranks 0,1,3' / 'ranks 0-2,4-16383 (16383 ranks)'."""
    rs = sorted(rs)
    if len(rs) == 1:
        return f"rank {rs[0]}"
    text = ranges(rs)
    return f"ranks {text}" + (f" ({len(rs)} ranks)" if len(rs) > 4 else "")


def op_name(r):
    """'AllReduce seq 3' or 'Send to 2 #4' / 'Recv from 1 #4'."""
    if r.get("kind") == "p2p":
        return f"{r['func']} {'to' if r['func'] == 'Send' else 'from'} {r.get('peer', '?')} #{r['seq']}"
    return f"{r['func']} seq {r['seq']}"


def state_text(r):
    """Where an in-flight operation is: enqueued / kernel started (channels done) / network steps done."""
    state = r.get("state", "?")
    if r.get("net_steps_total"):
        return f"{state}, network steps {r.get('net_steps_done', 0)}/{r['net_steps_total']}"
    if state == "kernel_started":
        return f"{state}, kernel channels done {r.get('kernel_channels_done', 0)}/{r.get('channels', 0)}"
    return state


def describe(r):
    ns = r.get("age_ns") or 0
    age = f", in flight {ns / 1e9:.1f} s" if ns >= 1e9 else f", in flight {ns / 1e6:.1f} ms" if ns else ""
    return f"{op_name(r)} ({r.get('bytes', '?')} B), {state_text(r)}{age}"
