"""Root causes across communicators: which blamed ranks are culprits and which are victims.

A rank blamed in one communicator (it never issued the operation the others wait in) may itself be waiting in
another communicator, on a rank blamed there: data-parallel ranks wait because a tensor-parallel group is
stuck. Ranks are joined across communicators by their process (host, pid); ranks without a dump are one
process when the job lacks exactly one global rank. Each finding adds edges waiting process -> blamed process;
a blamed process is a root cause when it waits on nobody (or wrote no dump, or called a mismatched
collective, or its own kernel does not finish, or it is an end of a link two ranks wait on each other over, or
it has nothing in flight while others wait on it: waits.py); in a cycle of waits with no way out, every member
is.
"""


def process_key(d):
    return ("proc", d.get("host"), d["pid"]) if "pid" in d else None


def absent_global_ranks(comms):
    """Global ranks without any dump, when the job's size and every dump's global rank are known."""
    dumps = [d for ranks in comms.values() for d in ranks.values()]
    ids = [d.get("identity") or {} for d in dumps]
    if not ids or any(i.get("global_rank") is None for i in ids):
        return None
    world = max([i.get("world_size") or 0 for i in ids] + [len(ranks) for ranks in comms.values()])
    return sorted(set(range(world)) - {i["global_rank"] for i in ids})


class Graph:
    def __init__(self, comms):
        self.comms = comms
        absent = absent_global_ranks(comms)
        self.lone_absent = absent[0] if absent is not None and len(absent) == 1 else None
        self.edges = {}     # process -> set of processes it waits on
        self.forced = set()  # roots whatever they wait on (mismatched callers, dead or missing processes)

    def key(self, comm, rank, finding=None):
        d = self.comms[comm].get(rank)
        if d is not None:
            return process_key(d) or ("rank", comm, rank)
        if finding is not None and finding["kind"] == "dead":
            peers = {(e.get("peer_host"), e.get("peer_pid")) for e in finding.get("peers", [])}
            if len(peers) == 1 and None not in next(iter(peers)) and len(finding["ranks"]) == 1:
                host, pid = next(iter(peers))
                return ("proc", host, pid)
        if self.lone_absent is not None:
            return ("global", self.lone_absent)
        ident = (finding or {}).get("_wait_ident")
        if ident and len(finding["ranks"]) == 1:  # the others' wait entries name its global rank
            return ("global", ident["global_rank"])
        return ("rank", comm, rank)

    def add(self, comm, finding):
        blamed = [self.key(comm, r, finding) for r in finding["ranks"]]
        finding["_blamed"] = blamed
        if finding["kind"] in ("mismatch", "dead", "missing", "straggler", "kernel", "link", "unresponsive"):
            self.forced.update(blamed)
        for w in finding.get("waiting", []):
            src = self.key(comm, w)
            self.edges.setdefault(src, set()).update(b for b in blamed if b != src)

    def roots(self, start):
        """The processes at the ends of the wait chains from `start`."""
        seen, stack, ends = set(), [start], set()
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            nxt = self.edges.get(p) or set()
            if p in self.forced or not nxt:
                ends.add(p)
            else:
                stack.extend(nxt)
        return ends or seen  # a cycle with no way out: every member


def resolve(entries, problems_of):
    """Marks each problem finding root (its blamed ranks include a root cause) or not, and
    returns {process key: [(entry, finding)]} of the root causes; a finding that is not a root keeps the
    processes its chain ends at under '_roots'."""
    graph = Graph({e["comm_hash"]: e["_ranks"] for e in entries})
    for e in entries:
        for f in problems_of(e):
            graph.add(e["comm_hash"], f)
    culprits = {}
    for e in entries:
        for f in problems_of(e):
            if not f["_blamed"]:
                f["root"] = True  # stuck inside: nobody to blame, the verdict says where to look
                continue
            roots = set().union(*(graph.roots(b) for b in f["_blamed"]))
            f["root"] = any(b in roots for b in f["_blamed"])
            if f["root"]:
                for b in f["_blamed"]:
                    if b in roots:
                        culprits.setdefault(b, []).append((e, f))
            else:
                f["_roots"] = roots
    return culprits
