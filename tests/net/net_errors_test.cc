// The process's net-error log (core/net_errors.h) as the post-mortem dumps will read it, fed by real TCP
// connections between two forked children that drive the linked core library: after one side is killed,
// the survivor holds one record per failed connection naming the dead process (global rank from its RANK,
// pid, host: learned from the handle by the connector and from the hello by the listener), with the comm
// id given to init (v11+; 0 before) and the kind the NIC counted. Each child sets RANK before its first
// listen or connect, so the two ends have different ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/host.h"
#include "core/net_errors.h"
#include "core/net_stats.h"
#include "harness.h"
#include "net/net_types.h"
#include "net/peer_identity.h"
#include "net/tcp/wire.h"

namespace ncclscope::testing {
namespace {

constexpr uint64_t kCommId = 0xDEADC0DE77ull;
constexpr int kReceiverRank = 3;
constexpr int kSenderRank = 5;

std::vector<std::pair<std::string, std::string>> Env() {
  auto env = BaseEnv();
  env.push_back({"NCCLSCOPE_NET_NTHREADS", "-1"});  // inline: each comm fails only when the test asks it
  return env;
}

void SetRank(int rank) { CHILD_CHECK(setenv("RANK", std::to_string(rank).c_str(), 1) == 0); }

// Waits until the peer child has exited (its end of the socketpair closes), then a moment more for the
// kernel to finish closing its TCP sockets: a clear-to-send that reached a live process's socket unread
// would turn its FIN into a reset, and the test wants the "closed the connection" a dead peer leaves.
void AwaitPeerExit(int fd) {
  char c;
  const double t0 = NowS();
  while (recv(fd, &c, 1, MSG_DONTWAIT) != 0 && NowS() - t0 < 10) usleep(1000);
  usleep(200 * 1000);
}

std::string ExpectedHost() { return HostName().substr(0, net::kWireHostBytes - 1); }

// The NIC-total counter of `kind` on lo.
uint64_t NicErrors(NetErrorKind kind) {
  for (const NetStatsRow& r : SnapshotNetStats().rows) {
    if (r.nic == "lo" && r.nic_total) return r.errors[static_cast<int>(kind)];
  }
  return 0;
}

// One record of a failure of a connection with the process (`rank`, `pid`) on this host.
void CheckRecord(const NetErrorRecord& r, int version, int rank, pid_t pid) {
  CHILD_CHECK(r.comm_id == (version >= 11 ? kCommId : 0));
  CHILD_CHECK(r.nic == "lo");
  CHILD_CHECK(r.peer.rfind("127.0.0.1:", 0) == 0 && r.peer.find(' ') == std::string::npos);
  CHILD_CHECK(r.peer_global_rank == rank);
  CHILD_CHECK(r.peer_pid == pid);
  CHILD_CHECK(r.peer_host == ExpectedHost());
  const std::string who = "peer " + r.peer + " (global rank " + std::to_string(rank) + ", pid " +
                          std::to_string(pid) + " on " + ExpectedHost() + ")";
  CHILD_CHECK(r.text.find(who) != std::string::npos);
  CHILD_CHECK(r.monotonic_ns != 0);
  CHILD_CHECK(NicErrors(r.kind) >= 1);
}

class NetErrorLog : public ::testing::TestWithParam<int> {};

// The listener dies: the connector (sending side) names it from the handle's identity. With
// `old_listener`, the handle's identity is blanked as a build before wire version 2 wrote it: the record
// then names the address only.
void ConnectorView(int version, bool old_listener) {
  auto receiver = [=](int fd) {
    SetRank(kReceiverRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    const pid_t me = getpid();
    void *lc = nullptr, *rc = nullptr;
    CHILD_CHECK(SendBytes(fd, &me, sizeof(me)));
    CHILD_CHECK(ListenAndAccept(*net, fd, &lc, &rc));
    std::vector<char> buf(1 << 20);
    void* data = buf.data();
    size_t cap = buf.size();
    int tag = 0;
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
    CHILD_CHECK(WaitDone(*net, req, nullptr) == 0);
    kill(getpid(), SIGKILL);
    return 0;
  };
  auto sender = [=](int fd) {
    SetRank(kSenderRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    ClearNetErrorsForTest();
    pid_t peer = 0;
    CHILD_CHECK(RecvBytes(fd, &peer, sizeof(peer)));
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    if (old_listener) {
      char* payload = handle + sizeof(net::HandleHeader);
      memset(payload + offsetof(net::tcp::TcpHandlePayload, wire_version), 0, sizeof(uint16_t));
      memset(payload + offsetof(net::tcp::TcpHandlePayload, identity), 0, sizeof(net::WireIdentity));
    }
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    std::vector<char> buf(1 << 20, 3);
    void* req = nullptr;
    while (req == nullptr) CHILD_CHECK(net->Isend(sc, buf.data(), buf.size(), 0, nullptr, nullptr, &req) == 0);
    CHILD_CHECK(WaitDone(*net, req, nullptr) == 0);
    CHILD_CHECK(RecentNetErrors().empty());
    // The receiver is gone now: send until the failure surfaces (bounded).
    const double t0 = NowS();
    int r = 0;
    while (r == 0 && NowS() - t0 < 15) {
      req = nullptr;
      r = net->Isend(sc, buf.data(), buf.size(), 0, nullptr, nullptr, &req);
      if (r == 0 && req != nullptr) r = WaitDone(*net, req, nullptr, 15);
    }
    CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR || r == NCCLSCOPE_SYSTEM_ERROR);
    // Later calls return the same error without a second record.
    req = nullptr;
    CHILD_CHECK(net->Isend(sc, buf.data(), buf.size(), 0, nullptr, nullptr, &req) != 0);
    const std::vector<NetErrorRecord> records = RecentNetErrors();
    CHILD_CHECK(records.size() == 1);
    if (old_listener) {
      const NetErrorRecord& rec = records[0];
      CHILD_CHECK(rec.peer_global_rank == -1 && rec.peer_pid == -1 && rec.peer_host.empty());
      CHILD_CHECK(rec.peer.rfind("127.0.0.1:", 0) == 0);
      CHILD_CHECK(rec.text.find("peer " + rec.peer) != std::string::npos);
      CHILD_CHECK(rec.text.find("peer " + rec.peer + " (") == std::string::npos);
    } else {
      CheckRecord(records[0], version, kReceiverRank, peer);
    }
    CHILD_CHECK(LastWarning().find(records[0].text) != std::string::npos);
    CHILD_CHECK(net->CloseSend(sc) == 0);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, Env());
  EXPECT_EQ(r.recv_status, 128 + SIGKILL);
  EXPECT_EQ(r.send_status, 0);
}

TEST_P(NetErrorLog, ConnectorNamesTheKilledListener) { ConnectorView(GetParam(), false); }
TEST_P(NetErrorLog, ConnectorOfAnOldListenerNamesItsAddress) { ConnectorView(GetParam(), true); }

// The connector dies: the listener (receiving side) names it from its hello, the record naming it
// "closed the connection" (how the analyzer tells a killed rank from a hung one).
TEST_P(NetErrorLog, ListenerNamesTheKilledConnector) {
  const int version = GetParam();
  auto receiver = [=](int fd) {
    SetRank(kReceiverRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    ClearNetErrorsForTest();
    void *lc = nullptr, *rc = nullptr;
    CHILD_CHECK(ListenAndAccept(*net, fd, &lc, &rc));
    pid_t peer = 0;
    CHILD_CHECK(RecvBytes(fd, &peer, sizeof(peer)));
    AwaitPeerExit(fd);
    std::vector<char> buf(1 << 20);
    void* data = buf.data();
    size_t cap = buf.size();
    int tag = 0;
    void* req = nullptr;
    const int posted = net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req);
    const int r = posted != 0 ? posted : WaitDone(*net, req, nullptr, 15);
    CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR || r == NCCLSCOPE_SYSTEM_ERROR);
    const std::vector<NetErrorRecord> records = RecentNetErrors();
    CHILD_CHECK(records.size() == 1);
    CheckRecord(records[0], version, kSenderRank, peer);
    CHILD_CHECK(records[0].text.find("closed the connection") != std::string::npos);
    CHILD_CHECK(records[0].kind == NetErrorKind::kRecv);
    CHILD_CHECK(NicErrors(NetErrorKind::kRecv) == 1);
    CHILD_CHECK(net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0);
    return 0;
  };
  auto sender = [=](int fd) {
    SetRank(kSenderRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    void* sc = nullptr;
    CHILD_CHECK(ConnectToPeer(*net, fd, &sc));
    const pid_t me = getpid();
    CHILD_CHECK(SendBytes(fd, &me, sizeof(me)));
    kill(getpid(), SIGKILL);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, Env());
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 128 + SIGKILL);
}

// A connect refused by a listener that is gone is recorded too, naming it from the handle.
TEST_P(NetErrorLog, RefusedConnectNamesTheListener) {
  const int version = GetParam();
  auto receiver = [=](int fd) {
    SetRank(kReceiverRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    void* lc = nullptr;
    CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
    CHILD_CHECK(net->CloseListen(lc) == 0);
    const pid_t me = getpid();
    CHILD_CHECK(SendBytes(fd, handle, sizeof(handle)) && SendBytes(fd, &me, sizeof(me)));
    return 0;
  };
  auto sender = [=](int fd) {
    SetRank(kSenderRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    ClearNetErrorsForTest();
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    pid_t peer = 0;
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)) && RecvBytes(fd, &peer, sizeof(peer)));
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc, 10) == NCCLSCOPE_REMOTE_ERROR);
    const std::vector<NetErrorRecord> records = RecentNetErrors();
    CHILD_CHECK(records.size() == 1);
    CHILD_CHECK(records[0].kind == NetErrorKind::kConnect);
    CheckRecord(records[0], version, kReceiverRank, peer);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, Env());
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 0);
}

// Many connections to one dead peer: one record each, and only the newest kMaxNetErrors are kept, in the
// order their failures surfaced (each comm is asked in turn: inline mode fails a comm only when asked).
void ManyConnections(int version, int n) {
  auto receiver = [=](int fd) {
    SetRank(kReceiverRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    ClearNetErrorsForTest();
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    void* lc = nullptr;
    CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
    CHILD_CHECK(SendBytes(fd, handle, sizeof(handle)));
    std::vector<void*> rcs(n, nullptr);
    for (void*& rc : rcs) CHILD_CHECK(AcceptLoop(*net, lc, &rc) == 0);
    const char all_accepted = 1;
    CHILD_CHECK(SendBytes(fd, &all_accepted, 1));
    pid_t peer = 0;
    CHILD_CHECK(RecvBytes(fd, &peer, sizeof(peer)));
    AwaitPeerExit(fd);
    std::vector<char> buf(4096);
    std::vector<std::string> texts;  // each comm's error as logged, in the order they failed
    for (void* rc : rcs) {
      void* data = buf.data();
      size_t cap = buf.size();
      int tag = 0;
      void* req = nullptr;
      const int posted = net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req);
      const int r = posted != 0 ? posted : WaitDone(*net, req, nullptr, 15);
      CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR || r == NCCLSCOPE_SYSTEM_ERROR);
      texts.push_back(LastWarning());
    }
    const std::vector<NetErrorRecord> records = RecentNetErrors();
    const size_t kept = std::min<size_t>(n, kMaxNetErrors);
    CHILD_CHECK(records.size() == kept);
    std::set<std::string> peers;
    for (size_t i = 0; i < kept; ++i) {
      CheckRecord(records[i], version, kSenderRank, peer);
      CHILD_CHECK(texts[n - kept + i].find(records[i].text) != std::string::npos);
      peers.insert(records[i].peer);
    }
    CHILD_CHECK(peers.size() == kept);  // one record per connection
    CHILD_CHECK(NicErrors(NetErrorKind::kRecv) == static_cast<uint64_t>(n));
    for (void* rc : rcs) CHILD_CHECK(net->CloseRecv(rc) == 0);
    CHILD_CHECK(net->CloseListen(lc) == 0);
    return 0;
  };
  auto sender = [=](int fd) {
    SetRank(kSenderRank);
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    for (int i = 0; i < n; ++i) {
      void* sc = nullptr;  // the handle's cookie is cleared once a connect completes: reusable
      CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    }
    char all_accepted = 0;
    CHILD_CHECK(RecvBytes(fd, &all_accepted, 1));
    const pid_t me = getpid();
    CHILD_CHECK(SendBytes(fd, &me, sizeof(me)));
    kill(getpid(), SIGKILL);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, Env());
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 128 + SIGKILL);
}

TEST_P(NetErrorLog, OneRecordPerFailedConnection) { ManyConnections(GetParam(), 3); }
TEST_P(NetErrorLog, KeepsOnlyTheNewest) { ManyConnections(GetParam(), static_cast<int>(kMaxNetErrors) + 4); }

// v10 carries no communicator id (records say 0); v12 does.
INSTANTIATE_TEST_SUITE_P(Tcp, NetErrorLog, ::testing::Values(10, 12),
                         [](const ::testing::TestParamInfo<int>& i) { return "v" + std::to_string(i.param); });

}  // namespace
}  // namespace ncclscope::testing
