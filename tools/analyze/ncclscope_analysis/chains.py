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


def lone_absent_global_rank(comms):
    """The job's one global rank without any dump, when the job's size and every dump's global rank are known
    and exactly one is absent; else None. Counted from the global ranks present, never by listing the job's:
    its size is what a dump claims (up to 1,048,576), the dumps are what was read."""
    ids = [d.get("identity") or {} for ranks in comms.values() for d in ranks.values()]
    if not ids or any(i.get("global_rank") is None for i in ids):
        return None
    world = max([i.get("world_size") or 0 for i in ids] + [len(ranks) for ranks in comms.values()])
    present = sorted({i["global_rank"] for i in ids if 0 <= i["global_rank"] < world})
    if world - len(present) != 1:
        return None
    return next((g for g, p in enumerate(present) if g != p), len(present))


def _blames_one(finding):
    """The finding blames exactly one rank (counting the ranks without a dump it does not list one by one)."""
    return finding is None or finding.get("missing_count", len(finding["ranks"])) == 1


class Graph:
    def __init__(self, comms):
        self.comms = comms
        self.lone_absent = lone_absent_global_rank(comms)
        self.edges = {}     # process -> set of processes it waits on
        self.forced = set()  # roots whatever they wait on (mismatched callers, dead or missing processes)

    def key(self, comm, rank, finding=None):
        d = self.comms[comm].get(rank)
        if d is not None:
            return process_key(d) or ("rank", comm, rank)
        if finding is not None and finding["kind"] == "dead":
            peers = {(e.get("peer_host"), e.get("peer_pid")) for e in finding.get("peers", [])}
            if len(peers) == 1 and None not in next(iter(peers)) and _blames_one(finding):
                host, pid = next(iter(peers))
                return ("proc", host, pid)
        if self.lone_absent is not None and _blames_one(finding):
            # Only a finding that blames one rank without a dump can be that one process: several ranks of one
            # communicator are several processes.
            return ("global", self.lone_absent)
        ident = (finding or {}).get("_wait_ident")
        if ident and _blames_one(finding):  # the others' wait entries name its global rank
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
                for b in dict.fromkeys(f["_blamed"]):  # a process blamed twice in one finding is one place
                    if b in roots:
                        culprits.setdefault(b, []).append((e, f))
            else:
                f["_roots"] = roots
    return culprits
