// Connection churn leaks nothing on the verbs transport, in the soft-RoCE guest: two processes
// on rxe0 run 200 cycles of listen, connect, accept, one small message each way (registered buffers),
// close everything (every other cycle with a receive still posted, every 50th also a refused connect). Each compares its open fds (/proc/self/fd), threads (/proc/self/task) and its QPs,
// CQs and MRs (`rdma resource show qp|cq|mr`, lines with its pid) after cycle 1 (the warm-up: device
// context, PD, async-event thread) and after cycle 200, prints them, and fails on any difference.
// On a host without a verbs device it prints SKIP and exits 77.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "harness.h"
#include "plugin_net.h"
#include "verbs_guest_util.h"

namespace ncclscope::testing {
namespace {

constexpr int kCycles = 200;

struct Counts {
  int fds, threads, qps, cqs, mrs;
  bool operator==(const Counts&) const = default;
};

Counts Take(bool print = false) {
  return {CountDirEntries("/proc/self/fd"), CountDirEntries("/proc/self/task"), CountRdmaResources("qp", print),
          CountRdmaResources("cq", print), CountRdmaResources("mr", print)};
}

void Print(const char* who, const char* when, const Counts& c) {
  fprintf(stderr, "%s %s: fds %d threads %d qps %d cqs %d mrs %d\n", who, when, c.fds, c.threads, c.qps, c.cqs,
          c.mrs);
}

// One cycle, symmetric: both sides listen, swap handles, connect to each other, accept, then send one
// 256-byte message to the other and receive one, and close all three comms and both registrations.
// Odd cycles also abort: a receive that never completes (its buffer registered by irecv itself) is
// still posted at close. Every 50th cycle also connects to its own closed listener (refused).
// `during` (cycle 0) gets the counts while the comms are open, to show that the counting sees them.
bool Cycle(PluginNet& net, int fd, int i, Counts* during = nullptr) {
  char mine[NCCLSCOPE_NET_HANDLE_MAXSIZE], theirs[NCCLSCOPE_NET_HANDLE_MAXSIZE];
  void *lc = nullptr, *sc = nullptr, *rc = nullptr;
  if (net.Listen(0, mine, &lc) != 0) return false;
  if (!SendBytes(fd, mine, sizeof(mine)) || !RecvBytes(fd, theirs, sizeof(theirs))) return false;
  double deadline = NowS() + 20;
  while (sc == nullptr || rc == nullptr) {
    if (sc == nullptr && net.Connect(0, theirs, &sc) != 0) return false;
    if (rc == nullptr && net.Accept(lc, &rc) != 0) return false;
    if (NowS() > deadline) return false;
  }
  std::vector<char> out(256, static_cast<char>(i)), in(256, 0);
  void *smh = nullptr, *rmh = nullptr;
  if (net.RegMr(sc, out.data(), out.size(), &smh) != 0 || net.RegMr(rc, in.data(), in.size(), &rmh) != 0) {
    return false;
  }
  void* data = in.data();
  size_t cap = in.size();
  int tag = i;
  void *rreq = nullptr, *sreq = nullptr;
  if (net.Irecv(rc, 1, &data, &cap, &tag, &rmh, nullptr, &rreq) != 0 || rreq == nullptr) return false;
  while (sreq == nullptr) {
    if (net.Isend(sc, out.data(), out.size(), i, smh, nullptr, &sreq) != 0 || NowS() > deadline) return false;
  }
  int sizes[8];
  if (WaitDone(net, sreq, nullptr, 20) != 0 || WaitDone(net, rreq, sizes, 20) != 0) return false;
  if (sizes[0] != 256 || in[255] != static_cast<char>(i)) return false;
  std::vector<char> never(1 << 16);
  if (i % 2 == 1) {
    void* p = never.data();
    size_t n = never.size();
    int t = 1 << 20;  // no isend uses it
    void* abandoned = nullptr;
    if (net.Irecv(rc, 1, &p, &n, &t, nullptr, nullptr, &abandoned) != 0 || abandoned == nullptr) return false;
  }
  if (during != nullptr) *during = Take(true);
  // Both sides finished both directions before either closes (a close could otherwise fail the peer).
  char sync = 0;
  if (!SendBytes(fd, &sync, 1) || !RecvBytes(fd, &sync, 1)) return false;
  if (net.DeregMr(sc, smh) != 0 || net.DeregMr(rc, rmh) != 0 || net.CloseSend(sc) != 0 || net.CloseRecv(rc) != 0 ||
      net.CloseListen(lc) != 0) {
    return false;
  }
  if (i % 50 == 49) {
    void* refused = nullptr;
    if (ConnectLoop(net, mine, &refused, 10) <= 0 || refused != nullptr) return false;
  }
  return true;
}

int Churn(int fd, const char* who) {
  auto net = OpenAndInit(12, TableSource::kDlopen);
  Counts during{};
  CHILD_CHECK(Cycle(*net, fd, 0, &during));
  Print(who, "during cycle 1 ", during);
  // A send and a receive comm are open: a QP and a CQ each, their control blocks and the buffers' MR.
  CHILD_CHECK(during.qps >= 2 && during.cqs >= 2 && during.mrs >= 3);
  const Counts before = Take();
  const double t0 = NowS();
  for (int i = 1; i < kCycles; ++i) CHILD_CHECK(Cycle(*net, fd, i));
  const Counts after = Take();
  fprintf(stderr, "%s: %d cycles in %.1f s\n", who, kCycles - 1, NowS() - t0);
  Print(who, "after cycle 1  ", before);
  Print(who, "after cycle 200", after);
  CHILD_CHECK(before == after);
  CHILD_CHECK(CountThreadsNamed("ncclscope-ibev") == 1);  // one event thread for rxe0
  CHILD_CHECK(net->Finalize() == 0);
  return 0;
}

TEST(VerbsLeakGuest, TwoHundredConnectCyclesLeakNoFdThreadQpCqOrMr) {
  PairResult r = RunPair([](int fd) { return Churn(fd, "a"); }, [](int fd) { return Churn(fd, "b"); },
                         VerbsGuestEnv(), 240);
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 0);
}

}  // namespace
}  // namespace ncclscope::testing
