// In-process tests of what names a peer in errors and the post-mortem net-error log: the identity each
// process puts on the wire, how a received one is read (unknowns, truncation, hostile bytes), how a peer is
// described, the log's bound and order, and CommAccounting recording a comm's first failure once even
// when several threads fail it at once (run under TSan with the concurrency label).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/host.h"
#include "core/net_errors.h"
#include "net/comm_accounting.h"
#include "net/peer_identity.h"

namespace ncclscope::net {
namespace {

WireIdentity Wire(int rank_plus1, int pid, const char* host) {
  WireIdentity w{};
  w.global_rank_plus1 = rank_plus1;
  w.pid = pid;
  strncpy(w.host, host, sizeof(w.host));
  return w;
}

TEST(PeerIdentity, DescribeNamesWhatIsKnown) {
  EXPECT_EQ(PeerFromWire("10.0.0.1:5000", Wire(4, 1234, "hostB")).Describe(),
            "10.0.0.1:5000 (global rank 3, pid 1234 on hostB)");
  EXPECT_EQ(PeerFromWire("10.0.0.1:5000", Wire(1, 0, "")).Describe(), "10.0.0.1:5000 (global rank 0)");
  EXPECT_EQ(PeerFromWire("10.0.0.1:5000", Wire(0, 77, "h")).Describe(), "10.0.0.1:5000 (pid 77 on h)");
  EXPECT_EQ(PeerFromWire("10.0.0.1:5000", Wire(0, 0, "h")).Describe(), "10.0.0.1:5000 (on h)");
  EXPECT_EQ(PeerInfo{"10.0.0.1:5000"}.Describe(), "10.0.0.1:5000");
}

TEST(PeerIdentity, ZerosAndNonsenseReadAsUnknown) {
  const PeerInfo zero = PeerFromWire("a", WireIdentity{});  // an older build's all-zero bytes
  EXPECT_EQ(zero.global_rank, -1);
  EXPECT_EQ(zero.pid, -1);
  EXPECT_EQ(zero.host, "");
  const PeerInfo bad = PeerFromWire("a", Wire(-5, -9, ""));
  EXPECT_EQ(bad.global_rank, -1);
  EXPECT_EQ(bad.pid, -1);
}

TEST(PeerIdentity, HostIsBoundedAndCleaned) {
  WireIdentity w = Wire(1, 1, "");
  memset(w.host, 'x', sizeof(w.host));  // no terminator at all: read up to the field's end, no further
  EXPECT_EQ(PeerFromWire("a", w).host, std::string(kWireHostBytes, 'x'));
  const PeerInfo p = PeerFromWire("a", Wire(1, 1, "node-1.rack_2\n\x1b[31m"));
  EXPECT_EQ(p.host, "node-1.rack_2???31m");
}

TEST(PeerIdentity, LocalIdentityFromRankPidAndHost) {
  const char* old = getenv("RANK");
  const std::string saved = old != nullptr ? old : "";
  ASSERT_EQ(setenv("RANK", "17", 1), 0);
  WireIdentity w = LocalWireIdentity();
  PeerInfo me = PeerFromWire("here", w);
  EXPECT_EQ(me.global_rank, 17);
  EXPECT_EQ(me.pid, getpid());
  EXPECT_EQ(me.host, HostName().substr(0, kWireHostBytes - 1));
  EXPECT_EQ(w.host[kWireHostBytes - 1], '\0');
  ASSERT_EQ(setenv("RANK", "0", 1), 0);
  EXPECT_EQ(PeerFromWire("here", LocalWireIdentity()).global_rank, 0);  // rank 0 is not "unknown"
  ASSERT_EQ(setenv("RANK", "not-a-rank", 1), 0);
  ASSERT_EQ(unsetenv("SLURM_PROCID") + unsetenv("OMPI_COMM_WORLD_RANK") + unsetenv("PMI_RANK"), 0);
  EXPECT_EQ(PeerFromWire("here", LocalWireIdentity()).global_rank, -1);
  if (old != nullptr) setenv("RANK", saved.c_str(), 1); else unsetenv("RANK");
}

TEST(NetErrorLog, KeepsTheNewestInOrder) {
  ClearNetErrorsForTest();
  const size_t total = kMaxNetErrors + 5;
  for (size_t i = 0; i < total; ++i) {
    NetErrorRecord r;
    r.text = "failure " + std::to_string(i);
    RecordNetError(std::move(r));
  }
  const std::vector<NetErrorRecord> got = RecentNetErrors();
  ASSERT_EQ(got.size(), kMaxNetErrors);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].text, "failure " + std::to_string(i + 5));
    EXPECT_NE(got[i].monotonic_ns, 0u);
  }
  ClearNetErrorsForTest();
  EXPECT_TRUE(RecentNetErrors().empty());
}

TEST(CommAccountingLog, FirstFailureRecordedOnceWithPeerAndComm) {
  ClearNetErrorsForTest();
  NetContext ctx;
  ctx.comm_id = 0xABCDEF;
  {
    CommAccounting acct("testnic0", &ctx, "TEST", 0, NetDir::kSend);
    acct.SetPeer(PeerFromWire("10.9.8.7:4000", Wire(8, 4321, "hostC")));
    EXPECT_TRUE(acct.Fail(RemoteError("peer gone"), NetErrorKind::kRecv));
    EXPECT_FALSE(acct.Fail(RemoteError("a consequence"), NetErrorKind::kSend));
  }
  const std::vector<NetErrorRecord> got = RecentNetErrors();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].comm_id, 0xABCDEFu);
  EXPECT_EQ(got[0].nic, "testnic0");
  EXPECT_EQ(got[0].kind, NetErrorKind::kRecv);
  EXPECT_EQ(got[0].text, "peer gone");
  EXPECT_EQ(got[0].peer, "10.9.8.7:4000");
  EXPECT_EQ(got[0].peer_global_rank, 7);
  EXPECT_EQ(got[0].peer_pid, 4321);
  EXPECT_EQ(got[0].peer_host, "hostC");
  ClearNetErrorsForTest();
}

// Helper threads and the progress thread may fail one comm at once: one record per comm, whatever wins;
// a reader (the dump writer) copies the log meanwhile.
TEST(CommAccountingLog, ConcurrentFailuresOneRecordPerComm) {
  ClearNetErrorsForTest();
  constexpr int kComms = 8, kThreads = 4;
  NetContext ctx;
  ctx.comm_id = 42;
  std::vector<std::unique_ptr<CommAccounting>> accts;
  for (int c = 0; c < kComms; ++c) {
    accts.push_back(std::make_unique<CommAccounting>("testnic1", &ctx, "TEST", 0, NetDir::kRecv));
    accts.back()->SetPeer(PeerInfo{"peer" + std::to_string(c)});
  }
  std::atomic<bool> go{false};
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) {
      }
      for (int c = 0; c < kComms; ++c) {
        if (accts[c]->Fail(RemoteError("thread " + std::to_string(t)), NetErrorKind::kRecv)) won.fetch_add(1);
      }
    });
  }
  std::thread reader([&] {
    while (!go.load()) {
    }
    for (int i = 0; i < 200; ++i) EXPECT_LE(RecentNetErrors().size(), kMaxNetErrors);
  });
  go.store(true);
  for (std::thread& t : threads) t.join();
  reader.join();
  EXPECT_EQ(won.load(), kComms);
  const std::vector<NetErrorRecord> got = RecentNetErrors();
  ASSERT_EQ(got.size(), static_cast<size_t>(kComms));
  std::vector<std::string> peers;
  for (const NetErrorRecord& r : got) {
    peers.push_back(r.peer);
    EXPECT_EQ(r.text.rfind("thread ", 0), 0u);
    EXPECT_EQ(r.comm_id, 42u);
  }
  std::sort(peers.begin(), peers.end());
  EXPECT_EQ(std::unique(peers.begin(), peers.end()), peers.end());
  ClearNetErrorsForTest();
}

// Whom a stuck operation waits on is read by the stall watch and scrapes while the comms' threads post and
// complete requests: per (peer, direction, NIC), never a negative count, and nothing pending once all completed.
TEST(CommAccountingLinks, PendingPerPeerReadWhileRequestsFlow) {
  constexpr uint64_t kComm = 0x71a5;
  constexpr int kComms = 4, kRequests = 20000;
  NetContext ctx;
  ctx.comm_id = kComm;
  std::vector<std::unique_ptr<CommAccounting>> accts;
  for (int c = 0; c < kComms; ++c) {
    accts.push_back(std::make_unique<CommAccounting>("testnic2", &ctx, "TEST", 0, c % 2 ? NetDir::kRecv : NetDir::kSend));
    PeerInfo peer{"10.0.0." + std::to_string(c) + ":1"};
    peer.global_rank = c / 2;  // two comms (send, recv) per peer process
    peer.host = "host" + std::to_string(c / 2);
    accts.back()->SetPeer(peer);
  }
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < kComms; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < kRequests; ++i) {
        const uint64_t t = MonotonicNs();
        accts[c]->Posted(t);
        if (c % 2) accts[c]->Received(64, 1, t, t + 1); else accts[c]->Sent(64, t, t + 1);
      }
    });
  }
  std::thread reader([&] {
    while (!done.load()) {
      CommNetLinks links = NetLinksOf(kComm, MonotonicNs());
      EXPECT_TRUE(links.carried);
      EXPECT_LE(links.pending.size(), 4u);
      for (const PendingNetLink& p : links.pending) {
        EXPECT_GE(p.requests, 0);
        EXPECT_EQ(p.peer_host, "host" + std::to_string(p.peer_global_rank));
      }
    }
  });
  for (std::thread& t : threads) t.join();
  done.store(true);
  reader.join();
  EXPECT_TRUE(NetLinksOf(kComm, MonotonicNs()).pending.empty());
  accts[1]->Fail(RemoteError("peer gone"), NetErrorKind::kRecv);
  CommNetLinks links = NetLinksOf(kComm, MonotonicNs());
  ASSERT_EQ(links.pending.size(), 1u);
  EXPECT_TRUE(links.pending[0].failed);
  EXPECT_EQ(links.pending[0].peer_global_rank, 0);
  EXPECT_EQ(links.pending[0].dir, NetDir::kRecv);
  accts.clear();
  EXPECT_FALSE(NetLinksOf(kComm, MonotonicNs()).carried) << "closed comms leave the registry";
}

}  // namespace
}  // namespace ncclscope::net
