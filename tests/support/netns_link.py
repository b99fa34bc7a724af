"""Two emulated hosts on this one: network namespaces joined by a veth pair (the data link), each also joined to
this namespace by a management veth (the metrics path), for the live tests whose fault is on a link
(tests/prometheus/hang_live.py: the link taken down; nic_degraded_live.py: a slow or lossy link). Needs root and
`ip netns`.
"""
import subprocess


class NetnsLink:
    """Two network namespaces joined by a veth pair (the data link), each also joined to this namespace by a
    management veth (bootstrap-free metrics path), so that taking the data link down leaves the scrapes alone."""

    def __init__(self, tag):
        self.tag = tag
        self.ns = [f"ncs{tag}a", f"ncs{tag}b"]
        self.data_ip = [f"10.77.{tag}.1", f"10.77.{tag}.2"]
        self.mgmt_ip = [f"10.78.{tag}.2", f"10.78.{tag}.6"]
        self.made = []

    def sh(self, cmd):
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{cmd}: {r.stderr.strip()}")

    def setup(self):
        t, (a, b) = self.tag, self.ns
        # What a run killed before its teardown left behind (the test runs alone: RUN_SERIAL), or `ip netns add`
        # fails with "File exists".
        for leftover in [f"ip netns del {ns}" for ns in self.ns] + [f"ip link del ncsm{t}{e}" for e in "ab"]:
            subprocess.run(leftover, shell=True, capture_output=True)
        for ns in self.ns:
            self.sh(f"ip netns add {ns}")
            self.made.append(ns)
            self.sh(f"ip -n {ns} link set lo up")
        self.sh(f"ip link add ncsd{t}a netns {a} type veth peer name ncsd{t}b netns {b}")
        for i, (ns, end) in enumerate(((a, "a"), (b, "b"))):
            self.sh(f"ip -n {ns} link set ncsd{t}{end} name vdata")
            self.sh(f"ip -n {ns} addr add {self.data_ip[i]}/24 dev vdata")
            self.sh(f"ip -n {ns} link set vdata up")
            host_ip = f"10.78.{t}.{1 + 4 * i}"
            self.sh(f"ip link add ncsm{t}{end} type veth peer name vmgmt netns {ns}")
            self.made.append(f"link:ncsm{t}{end}")
            self.sh(f"ip addr add {host_ip}/30 dev ncsm{t}{end}")
            self.sh(f"ip link set ncsm{t}{end} up")
            self.sh(f"ip -n {ns} addr add {self.mgmt_ip[i]}/30 dev vmgmt")
            self.sh(f"ip -n {ns} link set vmgmt up")

    def shape(self, side, qdisc):
        """A queueing discipline on SIDE's (0 or 1) end of the data link, e.g. "tbf rate 8mbit burst 64kb latency
        20ms": what leaves that namespace over the link goes through it."""
        self.sh(f"ip netns exec {self.ns[side]} tc qdisc replace dev vdata root {qdisc}")

    def take_down(self):
        self.sh(f"ip -n {self.ns[0]} link set vdata down")

    def teardown(self):
        for m in reversed(self.made):
            cmd = f"ip link del {m[5:]}" if m.startswith("link:") else f"ip netns del {m}"
            subprocess.run(cmd, shell=True, capture_output=True)
