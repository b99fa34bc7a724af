"""What one rank had issued and what it had in flight when its dump was written.

Collectives are numbered per communicator and function by NCCL (seq from 0), so equal (func, seq) on two ranks
is the same collective. Point-to-point operations are numbered by ncclscope per (peer, direction) from 1:
rank A's Send to B #k pairs with rank B's Recv from A #k. The dump's `ops` table has the last collective
sequence number per function but not per peer, so per-peer progress comes from the flight recorder and is
unknown (None) once the recorder has overwritten entries and holds none for that peer.
"""

PAIRED = {"Send": "Recv", "Recv": "Send"}


def last_coll_seq(d):
    """{func: last collective sequence number issued}."""
    return {o["func"]: o["last_seq"] for o in d["ops"] if o["kind"] == "coll"}


def records(d):
    fr = d["flight_recorder"]
    return fr["completed"] + fr["in_flight"]


def last_p2p_seq(d, func, peer):
    """Last #k of func (Send/Recv) with peer that this rank issued; 0 if none; None if it cannot be told."""
    seqs = [r["seq"] for r in records(d) if r["kind"] == "p2p" and r["func"] == func and r.get("peer") == peer]
    if seqs:
        return max(seqs)
    return None if d["flight_recorder"].get("overwritten", 0) else 0


def in_flight(d):
    """In-flight operations, oldest arrival first."""
    return sorted(d["flight_recorder"]["in_flight"], key=lambda r: r.get("arrival", 0))


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
