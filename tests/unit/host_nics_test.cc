// The host's NIC counters: the counter meanings, the reading of RDMA ports and network interfaces, and which
// process speaks for the host. Network interfaces are read from this host's real /sys. This host has no RDMA
// device, so ReadRdmaPorts reads a sysfs tree laid out in a temporary folder as mlx5 and rxe lay theirs out; the
// soft-RoCE guest tier reads a real rxe device's (rdma2_lossy_link_counters). And the TCP transport's own view
// per NIC: TCP_INFO of a registered connection's real sockets.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "host_nics/host_nics.h"
#include "host_nics/host_speaker.h"
#include "host_nics/netdevs.h"
#include "host_nics/process_tcp.h"
#include "host_nics/rdma_ports.h"
#include "core/net_links.h"

namespace ncclscope {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ncclscope-hostnics-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(HostNicsTest, CountersAreSortedByWhatTheyTell) {
  EXPECT_EQ(ClassifyRdmaCounter("port_xmit_data", false).kind, RdmaCounterKind::kBytesSent);
  EXPECT_EQ(ClassifyRdmaCounter("port_xmit_data", false).scale, 4u);  // 4-byte words
  EXPECT_EQ(ClassifyRdmaCounter("symbol_error", false).kind, RdmaCounterKind::kError);
  EXPECT_EQ(ClassifyRdmaCounter("port_xmit_wait", false).kind, RdmaCounterKind::kCongestion);
  EXPECT_EQ(ClassifyRdmaCounter("out_of_sequence", true).kind, RdmaCounterKind::kRetransmit);       // mlx5
  EXPECT_EQ(ClassifyRdmaCounter("local_ack_timeout_err", true).kind, RdmaCounterKind::kRetransmit);
  EXPECT_EQ(ClassifyRdmaCounter("np_cnp_sent", true).kind, RdmaCounterKind::kCongestion);
  EXPECT_EQ(ClassifyRdmaCounter("rcvd_seq_err", true).kind, RdmaCounterKind::kRetransmit);  // rxe
  EXPECT_EQ(ClassifyRdmaCounter("sent_pkts", true).kind, RdmaCounterKind::kPacketsSent);
  EXPECT_EQ(ClassifyRdmaCounter("retrans_pkts", true).kind, RdmaCounterKind::kRetransmit);  // EFA
  EXPECT_EQ(ClassifyRdmaCounter("tx_bytes", true).kind, RdmaCounterKind::kBytesSent);
  EXPECT_EQ(ClassifyRdmaCounter("unicast_xmit_packets", false).kind, RdmaCounterKind::kOther);
  EXPECT_EQ(ClassifyRdmaCounter("rdma_sends", true).kind, RdmaCounterKind::kOther);
  EXPECT_TRUE(ClassifyRdmaCounter("lifespan", true).skip);
  // A hw counter is not taken for a port counter of the same name, nor the other way round.
  EXPECT_EQ(ClassifyRdmaCounter("port_xmit_data", true).kind, RdmaCounterKind::kOther);
  EXPECT_EQ(ClassifyRdmaCounter("out_of_sequence", false).kind, RdmaCounterKind::kOther);
}

TEST(HostNicsTest, ReadsRdmaPortsAsMlx5AndRxeLayThemOut) {
  TempDir sys;
  const std::string ib = sys.path() + "/class/infiniband";
  const std::string mlx = ib + "/mlx5_0/ports/1";
  Write(mlx + "/state", "4: ACTIVE\n");
  Write(mlx + "/rate", "200 Gb/sec (4X HDR)\n");
  Write(mlx + "/link_layer", "InfiniBand\n");
  Write(mlx + "/counters/port_xmit_data", "1000\n");
  Write(mlx + "/counters/port_rcv_packets", "7\n");
  Write(mlx + "/counters/symbol_error", "2\n");
  Write(mlx + "/hw_counters/out_of_sequence", "5\n");
  Write(mlx + "/hw_counters/lifespan", "12\n");
  Write(mlx + "/hw_counters/garbage", "not a number\n");
  Write(ib + "/mlx5_0/device/numa_node", "1\n");
  const std::string rxe = ib + "/rxe0/ports/1";
  Write(rxe + "/state", "1: DOWN\n");
  Write(rxe + "/rate", "10 Gb/sec (1X QDR)\n");
  Write(rxe + "/link_layer", "Ethernet\n");
  Write(rxe + "/gid_attrs/ndevs/0", "eth1\n");
  Write(rxe + "/hw_counters/sent_pkts", "40\n");
  Write(rxe + "/hw_counters/rcvd_seq_err", "3\n");
  Write(rxe + "/hw_counters/link_downed", "6\n");

  const std::vector<RdmaPort> ports = ReadRdmaPorts(sys.path());
  ASSERT_EQ(ports.size(), 2u);
  const RdmaPort& m = ports[0];
  EXPECT_EQ(m.device, "mlx5_0");
  EXPECT_EQ(m.port, 1);
  EXPECT_TRUE(m.active);
  EXPECT_DOUBLE_EQ(m.rate_bytes_per_s, 25e9);
  EXPECT_EQ(m.link_layer, "InfiniBand");
  EXPECT_EQ(m.netdev, "");
  EXPECT_EQ(m.location.numa_node, 1);
  ASSERT_EQ(m.counters.size(), 4u);  // lifespan skipped, garbage unreadable
  EXPECT_EQ(m.counters[0].name, "port_rcv_packets");
  EXPECT_EQ(m.counters[1].name, "port_xmit_data");
  EXPECT_EQ(m.counters[1].value, 4000u);
  EXPECT_EQ(m.counters[2].kind, RdmaCounterKind::kError);
  EXPECT_EQ(m.counters[3].kind, RdmaCounterKind::kRetransmit);
  const RdmaPort& r = ports[1];
  EXPECT_EQ(r.device, "rxe0");
  EXPECT_FALSE(r.active);
  EXPECT_EQ(r.netdev, "eth1");
  EXPECT_EQ(r.location.pci, "");
  EXPECT_EQ(r.location.numa_node, -1);
  ASSERT_EQ(r.counters.size(), 3u);
  EXPECT_EQ(r.counters[0].name, "link_downed");
  EXPECT_EQ(r.counters[1].kind, RdmaCounterKind::kRetransmit);
  EXPECT_EQ(r.counters[2].value, 40u);
  EXPECT_EQ(LinkDowns(r), 6u);
  EXPECT_EQ(LinkDowns(m), std::nullopt);  // this mlx5 layout has no link_downed
}

TEST(HostNicsTest, LinkDownsCountFromTheFirstReadOfEachPort) {
  RdmaPort a, b, none;
  a.device = "ld_a";
  b.device = "ld_b";
  none.device = "ld_none";
  a.port = b.port = none.port = 1;
  a.counters = {{"link_downed", RdmaCounterKind::kError, 5}};
  b.counters = {{"link_downed", RdmaCounterKind::kError, 0}};
  EXPECT_EQ(LinkDownsSinceFirstRead({a, b, none}),
            (std::vector<std::optional<uint64_t>>{0, 0, std::nullopt}));  // 5 downs before this process
  a.counters[0].value = 7;
  EXPECT_EQ(LinkDownsSinceFirstRead({a, b}), (std::vector<std::optional<uint64_t>>{2, 0}));
  a.counters[0].value = 1;  // the driver reloaded: its count starts anew
  EXPECT_EQ(LinkDownsSinceFirstRead({a}), (std::vector<std::optional<uint64_t>>{1}));
}

TEST(HostNicsTest, CarrierChangesOfEveryInterfaceButLoopback) {
  TempDir sys;
  const std::string net = sys.path() + "/class/net";
  Write(net + "/lo/carrier_changes", "0\n");
  Write(net + "/vdata/carrier_changes", "4\n");  // a veth: no device of its own, still read
  Write(net + "/eth0/carrier_changes", "1\n");
  Write(net + "/eth0/device/vendor", "0x15b3\n");
  Write(net + "/tun0/operstate", "up\n");  // no carrier_changes file: left out
  EXPECT_EQ(ReadCarrierChanges(sys.path()),
            (std::vector<std::pair<std::string, uint64_t>>{{"eth0", 1}, {"vdata", 4}}));
}

TEST(HostNicsTest, NoRdmaDeviceNoPorts) { EXPECT_TRUE(ReadRdmaPorts("/nonexistent").empty()); }

// A connected loopback TCP pair {client, accepted peer}.
std::pair<int, int> LoopbackPair() {
  const int server = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || ::listen(server, 1) != 0) {
    return {-1, -1};
  }
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return {-1, -1};
  const int peer = ::accept(server, nullptr, nullptr);
  ::close(server);
  return {client, peer};
}

// Moves `bytes` from one end to the other.
void Transfer(int from, int to, size_t bytes) {
  std::vector<char> buf(64 << 10, 'x');
  size_t sent = 0, received = 0;
  while (received < bytes) {
    if (sent < bytes) {
      const ssize_t n = ::send(from, buf.data(), std::min(buf.size(), bytes - sent), MSG_DONTWAIT);
      if (n > 0) sent += static_cast<size_t>(n);
    }
    const ssize_t n = ::recv(to, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n > 0) received += static_cast<size_t>(n);
  }
}

// Bytes sent over a real loopback TCP connection show in lo's statistics.
TEST(HostNicsTest, LoopbackStatisticsMoveWithTraffic) {
  auto lo = [] {
    const std::vector<Netdev> d = ReadNetdevs("/sys", {"lo"}, {});
    return d.size() == 1 ? d[0] : Netdev{};
  };
  const Netdev before = lo();
  ASSERT_EQ(before.name, "lo") << "no lo in /sys/class/net";
  const auto [client, peer] = LoopbackPair();
  ASSERT_GE(client, 0);
  ASSERT_GE(peer, 0);
  constexpr size_t kBytes = 1 << 20;
  Transfer(client, peer, kBytes);
  for (int fd : {client, peer}) ::close(fd);
  const Netdev after = lo();
  EXPECT_GE(after.tx_bytes - before.tx_bytes, kBytes);
  EXPECT_GE(after.rx_bytes - before.rx_bytes, kBytes);
  EXPECT_GT(after.tx_packets, before.tx_packets);
  EXPECT_TRUE(after.up);
}

// A TCP connection's sockets registered with its link: the scrape reads their TCP_INFO per NIC while the link
// lives, and keeps their count once it is unregistered (before the sockets close).
TEST(NicTcpInfoTest, RegisteredSocketsShowPerNicAndOutliveTheirLink) {
  const auto [client, peer] = LoopbackPair();
  ASSERT_GE(client, 0);
  NetLink link;
  link.nic = "tcp-info-test-nic";
  RegisterNetLink(&link);
  SetNetLinkSockets(&link, {client});
  Transfer(client, peer, 256 << 10);
  auto find = [] {
    for (const NicTcpInfo& t : SnapshotNicTcpInfo()) {
      if (t.nic == "tcp-info-test-nic") return t;
    }
    return NicTcpInfo{};
  };
  const NicTcpInfo open = find();
  EXPECT_EQ(open.nic, "tcp-info-test-nic");
  EXPECT_EQ(open.connections, 1);
  EXPECT_GT(open.rtt_max_s, 0);  // the kernel measured the loopback's round trips
  UnregisterNetLink(&link);
  UnregisterNetLink(&link);  // twice: the count is folded once
  const NicTcpInfo closed = find();
  EXPECT_EQ(closed.nic, "tcp-info-test-nic");
  EXPECT_EQ(closed.connections, 0);
  EXPECT_EQ(closed.retransmits, open.retransmits);
  for (int fd : {client, peer}) ::close(fd);
}

// The process's TCP connections that no link registered (a wrapped plugin's, NCCL's socket transport's): found by
// walking the process's descriptors, per the interface of their local address. Real sockets; the kernel's
// retransmissions cannot be provoked on loopback here, so the live tests (nic_degraded_live --net-chain) show them
// move.
TEST(NicTcpInfoTest, OtherSocketsOfTheProcessAreFoundPerInterfaceAndOursLeftOut) {
  auto lo_count = [](const std::vector<int>& ours) {
    for (const NicTcpRetransmits& t : OtherTcpRetransmits(ours)) {
      if (t.nic == "lo") return 1;
    }
    return 0;
  };
  const auto [client, peer] = LoopbackPair();
  ASSERT_GE(client, 0);
  Transfer(client, peer, 64 << 10);
  // Skipped before any walk sees them: a socket once seen and then skipped counts as closed.
  EXPECT_EQ(lo_count({client, peer}), 0) << "registered sockets are ncclscope's own, counted on their link";
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  ASSERT_EQ(::getsockname(peer, reinterpret_cast<sockaddr*>(&local), &len), 0);
  SkipTcpLocalPort(ntohs(local.sin_port));  // as the metrics endpoint does for its own port
  EXPECT_EQ(lo_count({client}), 0) << "the skipped port's connection is left out";
  SkipTcpLocalPort(0);
  EXPECT_EQ(lo_count({}), 1) << "an unregistered loopback connection is found on lo";
  for (int fd : {client, peer}) ::close(fd);
  EXPECT_EQ(lo_count({}), 1) << "closed connections stay in the per-NIC total";
}

TEST(HostNicsTest, DefaultInterfacesLeaveLoopbackOutAndTakeThoseUnderRdma) {
  for (const Netdev& d : ReadNetdevs("/sys", {}, {})) EXPECT_NE(d.name, "lo");
  const std::vector<Netdev> with_lo = ReadNetdevs("/sys", {}, {"lo"});
  EXPECT_TRUE(std::any_of(with_lo.begin(), with_lo.end(), [](const Netdev& d) { return d.name == "lo"; }));
}

TEST(HostNicsTest, NetdevListsFollowNcclSocketIfnameForm) {
  EXPECT_EQ(SplitNetdevList("eth0, =ib0,^docker,"), (std::vector<std::string>{"eth0", "ib0"}));
  EXPECT_TRUE(SplitNetdevList("").empty());
}

TEST(HostNicsTest, LockPathIsPerUserJobAndHostAndSafe) {
  const std::string uid = std::to_string(::getuid());
  EXPECT_EQ(HostSpeakerLockPath("/dev/shm", "job/../1 2", "node 7"),
            "/dev/shm/ncclscope-host-nics-" + uid + "-job_.._1_2-on-node_7.lock");
  EXPECT_EQ(HostSpeakerLockPath("/tmp", "", ""),
            "/tmp/ncclscope-host-nics-" + uid + "-launcher" + std::to_string(::getppid()) + ".lock");
  EXPECT_NE(HostSpeakerLockPath("/dev/shm", "j", "host-a"), HostSpeakerLockPath("/dev/shm", "j", "host-b"));
}

// One speaker among real processes; it hands over when the holder exits.
TEST(HostNicsTest, OneProcessSpeaksAndAnotherTakesOverWhenItExits) {
  TempDir dir;
  const std::string path = dir.path() + "/speaker.lock";
  int to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HostSpeaker speaker(path);
    const char spoke = speaker.Speaks() ? '1' : '0';
    (void)!::write(to_parent[1], &spoke, 1);
    char go;
    (void)!::read(to_child[0], &go, 1);  // hold the lock until the parent has looked
    std::_Exit(0);
  }
  char spoke = 0;
  ASSERT_EQ(::read(to_parent[0], &spoke, 1), 1);
  EXPECT_EQ(spoke, '1');
  HostSpeaker mine(path);
  EXPECT_FALSE(mine.Speaks());
  EXPECT_FALSE(mine.Speaks());
  (void)!::write(to_child[1], "x", 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(mine.Speaks());
  EXPECT_TRUE(mine.Speaks());  // kept
  HostSpeaker another(path);
  EXPECT_FALSE(another.Speaks());  // a second speaker in this process is refused too (flock is per open file)
}

TEST(HostNicsTest, TheHolderRemovesItsLockFileAndTheNextRankMakesANewOne) {
  TempDir dir;
  const std::string path = dir.path() + "/speaker.lock";
  HostSpeaker first(path), second(path);
  ASSERT_TRUE(first.Speaks());
  EXPECT_FALSE(second.Speaks());  // it has the file open, and waits
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    first.Release();  // a forked child shares the open file, not the role: nothing happens
    std::_Exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(fs::exists(path)) << "a forked child's release removed its parent's lock file";
  first.Release();
  EXPECT_FALSE(fs::exists(path));
  // The waiting rank's lock on the removed file would lock nothing another process can see: it makes a new one.
  EXPECT_TRUE(second.Speaks());
  EXPECT_TRUE(fs::exists(path));
  HostSpeaker third(path);
  EXPECT_FALSE(third.Speaks());
}

TEST(HostNicsTest, EndedJobsLockFilesAreSweptButNotLiveOrYoungOrOthersOnes) {
  TempDir dir;
  const std::string mine = "ncclscope-host-nics-" + std::to_string(::getuid()) + "-";
  auto make = [&](const std::string& name, int age_s) {
    const std::string path = dir.path() + "/" + name;
    Write(path, "");
    const timespec times[2] = {{::time(nullptr) - age_s, 0}, {::time(nullptr) - age_s, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
    return path;
  };
  const std::string ended = make(mine + "ended.lock", 3600);
  const std::string live = make(mine + "live.lock", 3600);
  const std::string young = make(mine + "young.lock", 10);
  const std::string ours = make(mine + "ours.lock", 3600);
  const std::string other_user = make("ncclscope-host-nics-" + std::to_string(::getuid() + 1) + "-x.lock", 3600);
  const std::string other_file = make(mine + "notes.txt", 3600);
  HostSpeaker holder(live);
  ASSERT_TRUE(holder.Speaks());
  EXPECT_EQ(RemoveStaleHostSpeakerLocks(dir.path(), ours, 600), 1);
  EXPECT_FALSE(fs::exists(ended));
  for (const std::string& kept : {live, young, ours, other_user, other_file}) EXPECT_TRUE(fs::exists(kept)) << kept;
  EXPECT_TRUE(holder.Speaks());  // untouched
}

TEST(HostNicsTest, AnUnmakeableLockMeansSpeaking) {
  HostSpeaker speaker("/nonexistent-dir/ncclscope.lock");
  EXPECT_TRUE(speaker.Speaks());
}

}  // namespace
}  // namespace ncclscope
