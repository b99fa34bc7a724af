// Accounting and profiler events, checked against the bytes actually moved. The children drive the
// ncclNetPlugin_vN tables of the core library linked into this test (the same code as the built .so),
// so they can read the counters through SnapshotNetStats() afterwards. v11+ traffic is attributed to
// the communicator id given to init as well as to the NIC; older ABIs count on the NIC only.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/net_stats.h"
#include "harness.h"

namespace ncclscope::testing {
namespace {

constexpr uint64_t kCommId = 0xC0FFEE12345ull;
const size_t kSizes[] = {0, 1, 4096, 65537, (2u << 20) + 5, 100, 7 << 20};
constexpr int kNum = sizeof(kSizes) / sizeof(kSizes[0]);
constexpr int kMessages = 40;

// A fake NCCL profiler callback: counts NetPlugin start/stop and the bytes in send descriptors.
struct ProfTally {
  int starts = 0, stops = 0, bad_id = 0, bad_descr = 0;
  uint64_t send_bytes = 0;
};
ProfTally tally;
int token;

ncclscope_result_t FakeProfiler(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  if (type == NCCLSCOPE_NET_EVENT_START) {
    if (pHandle == nullptr) ++tally.bad_descr;
    if (pluginId != (NCCLSCOPE_NET_PLUGIN_TYPE_SOCK | 1)) ++tally.bad_id;
    auto* d = static_cast<ncclscope_net_sock_descr_v1_t*>(extData);
    if (d == nullptr || d->type != NCCLSCOPE_NET_SOCK_DESCR_TYPE || d->sock.fd < 0) ++tally.bad_descr;
    if (d != nullptr && d->sock.op == 0) tally.send_bytes += d->sock.length;
    ++tally.starts;
    *eHandle = &token;
  } else if (type == NCCLSCOPE_NET_EVENT_STOP) {
    if (*eHandle != &token) ++tally.bad_descr;
    ++tally.stops;
  }
  return NCCLSCOPE_SUCCESS;
}

const NetStatsRow* Find(const NetStatsSnapshot& s, bool nic_total, uint64_t comm) {
  for (const NetStatsRow& r : s.rows) {
    if (r.nic == "lo" && r.nic_total == nic_total && r.comm_id == comm) return &r;
  }
  return nullptr;
}

uint64_t HistTotal(const NetStatsRow& r) {
  uint64_t n = 0;
  for (uint64_t v : r.latency_log2_ns) n += v;
  return n;
}

class NetAccounting : public ::testing::TestWithParam<int> {};

TEST_P(NetAccounting, CountersMatchBytesMovedExactly) {
  int version = GetParam();
  auto receiver = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId, FakeProfiler);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    void* lc = nullptr;
    CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
    CHILD_CHECK(SendBytes(fd, handle, sizeof(handle)));
    void* rc = nullptr;
    CHILD_CHECK(AcceptLoop(*net, lc, &rc) == 0);
    uint64_t bytes = 0;
    int with_phandle = 0;
    std::vector<char> buf(8 << 20);
    for (int i = 0; i < kMessages; ++i) {
      void* data = buf.data();
      size_t cap = buf.size();
      int tag = 0;
      void* ph = (i % 2 == 0) ? &token : nullptr;  // NCCL passes no phandle outside the proxy
      void* phs[1] = {ph};
      void* req = nullptr;
      CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, phs, &req) == 0 && req);
      if (ph != nullptr) ++with_phandle;
      int sizes[64] = {0};
      CHILD_CHECK(WaitDone(*net, req, sizes) == 0);
      CHILD_CHECK(static_cast<size_t>(sizes[0]) == kSizes[i % kNum]);
      bytes += sizes[0];
    }
    NetStatsSnapshot mid = SnapshotNetStats();
    const NetStatsRow* nic = Find(mid, true, 0);
    CHILD_CHECK(nic != nullptr);
    CHILD_CHECK(nic->bytes_received == bytes && nic->messages_received == kMessages);
    CHILD_CHECK(nic->bytes_sent == 0 && nic->in_flight == 0 && nic->connections_open == 1);
    CHILD_CHECK(HistTotal(*nic) == kMessages);
    const NetStatsRow* comm = Find(mid, false, kCommId);
    if (version >= 11) {
      CHILD_CHECK(comm != nullptr && comm->bytes_received == bytes && comm->messages_received == kMessages);
    } else {
      CHILD_CHECK(comm == nullptr);  // legacy ABIs carry no communicator id
    }
    int want_events = version >= 10 ? with_phandle : 0;
    CHILD_CHECK(tally.starts == want_events && tally.stops == want_events);
    CHILD_CHECK(tally.bad_id == 0 && tally.bad_descr == 0);
    CHILD_CHECK(net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0);
    NetStatsSnapshot end = SnapshotNetStats();
    CHILD_CHECK(Find(end, true, 0)->connections_open == 0);
    CHILD_CHECK(net->Finalize() == 0);
    return 0;
  };
  auto sender = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kLinked, kCommId, FakeProfiler);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    std::vector<char> buf(8 << 20, 9);
    uint64_t bytes = 0, ph_bytes = 0;
    int with_phandle = 0;
    for (int i = 0; i < kMessages; ++i) {
      size_t size = kSizes[i % kNum];
      void* ph = (i % 3 == 0) ? &token : nullptr;
      void* req = nullptr;
      while (req == nullptr) CHILD_CHECK(net->Isend(sc, buf.data(), size, 0, nullptr, ph, &req) == 0);
      if (ph != nullptr) {
        ++with_phandle;
        ph_bytes += size;
      }
      CHILD_CHECK(WaitDone(*net, req, nullptr) == 0);
      bytes += size;
    }
    NetStatsSnapshot s = SnapshotNetStats();
    const NetStatsRow* nic = Find(s, true, 0);
    CHILD_CHECK(nic != nullptr);
    CHILD_CHECK(nic->bytes_sent == bytes && nic->messages_sent == kMessages);
    CHILD_CHECK(nic->bytes_received == 0 && nic->in_flight == 0 && nic->connections_open == 1);
    for (uint64_t e : nic->errors) CHILD_CHECK(e == 0);
    if (version >= 11) {
      const NetStatsRow* comm = Find(s, false, kCommId);
      CHILD_CHECK(comm != nullptr && comm->bytes_sent == bytes && comm->messages_sent == kMessages);
    }
    int want_events = version >= 10 ? with_phandle : 0;
    CHILD_CHECK(tally.starts == want_events && tally.stops == want_events);
    CHILD_CHECK(tally.send_bytes == (version >= 10 ? ph_bytes : 0));
    CHILD_CHECK(net->CloseSend(sc) == 0);
    CHILD_CHECK(net->Finalize() == 0);
    return 0;
  };
  PairResult r = RunPair(receiver, sender);
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 0);
}

// A failure is counted by kind on the NIC (here: a connect refused by a closed listener).
TEST(NetAccountingErrors, RefusedConnectCountedAsConnectError) {
  pid_t pid = Spawn(
      [] {
        auto net = OpenAndInit(12, TableSource::kLinked, kCommId);
        char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        void* lc = nullptr;
        CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
        CHILD_CHECK(net->CloseListen(lc) == 0);
        void* sc = nullptr;
        CHILD_CHECK(ConnectLoop(*net, handle, &sc, 10) == NCCLSCOPE_REMOTE_ERROR);
        NetStatsSnapshot snap = SnapshotNetStats();
        const NetStatsRow* nic = Find(snap, true, 0);
        CHILD_CHECK(nic != nullptr);
        CHILD_CHECK(nic->errors[static_cast<int>(NetErrorKind::kConnect)] == 1);
        CHILD_CHECK(net->Finalize() == 0);
        return 0;
      },
      BaseEnv());
  EXPECT_EQ(Reap(pid, 30), 0);
}

INSTANTIATE_TEST_SUITE_P(Tcp, NetAccounting, ::testing::Values(8, 9, 10, 11, 12),
                         [](const ::testing::TestParamInfo<int>& i) { return "v" + std::to_string(i.param); });

}  // namespace
}  // namespace ncclscope::testing
