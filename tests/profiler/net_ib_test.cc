// NCCL IB QP NetPlugin events (NCCL built with NET_PROFILER=1) → per-NIC / per-communicator counters: NCCL's
// v5 descriptor through the ABI translation, then the neutral profiler. Checks the bytes, messages, latency
// samples and in-flight figures per device; that NCCL's reused descriptor is copied at start; and what is not
// counted (bad device index, unknown plugin type, NULL or malformed extData, socket events, no ProxyStep parent,
// NetPlugin bit off). Its own binary: it sets the activation mask through NCCLSCOPE_EVENT_MASK.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/params.h"
#include "core/net_stats.h"
#include "core/registry.h"
#include "gtest/gtest.h"
#include "ncclscope/abi/common.h"
#include "ncclscope/abi/profiler.h"
#include "plugin/profiler/translate.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler {
namespace {

constexpr int64_t kIbId = NCCLSCOPE_NET_PLUGIN_TYPE_IB | 1;
constexpr int64_t kSockId = NCCLSCOPE_NET_PLUGIN_TYPE_SOCK | 1;

void* InitComm(uint64_t hash, const char* mask) {
  setenv("NCCLSCOPE_EVENT_MASK", mask, 1);
  ReloadParams();
  InitArgs a;
  a.comm_hash = hash;
  a.nranks = 2;
  void* ctx = nullptr;
  EXPECT_TRUE(Init(a, &ctx).ok());
  return ctx;
}

// startEvent as NCCL's v5 table delivers it: the NCCL descriptor translated by the ABI layer.
void* Start(void* ctx, const ncclscope_profiler_descr_v5_t& e) {
  EventDesc d;
  abi::TranslateV5(&e, &d);
  return StartEvent(ctx, d);
}

ncclscope_profiler_descr_v5_t Descr(uint64_t type, void* parent) {
  ncclscope_profiler_descr_v5_t e{};
  e.type = type;
  e.parentObj = parent;
  return e;
}

// Coll → ProxyOp (send or receive) → ProxyStep; returns the step handle (the others in *coll / *op).
void* Step(void* ctx, bool send, void** coll, void** op) {
  auto c = Descr(NCCLSCOPE_PROFILE_COLL, nullptr);
  c.coll.func = "AllReduce";
  c.coll.datatype = "ncclFloat32";
  c.coll.count = 1024;
  c.coll.algo = "RING";
  c.coll.proto = "SIMPLE";
  *coll = Start(ctx, c);
  EXPECT_NE(*coll, nullptr);
  auto p = Descr(NCCLSCOPE_PROFILE_PROXY_OP, *coll);
  p.proxyOp.pid = getpid();
  p.proxyOp.isSend = send ? 1 : 0;
  p.proxyOp.nSteps = 1;
  *op = Start(ctx, p);
  EXPECT_NE(*op, nullptr);
  StopEvent(*coll);  // NCCL stops Coll at enqueue, before its proxy events
  void* s = Start(ctx, Descr(NCCLSCOPE_PROFILE_PROXY_STEP, *op));
  EXPECT_NE(s, nullptr);
  return s;
}

void* StartQp(void* ctx, void* step, int64_t id, void* data) {
  auto n = Descr(NCCLSCOPE_PROFILE_NET_PLUGIN, step);
  n.netPlugin.id = id;
  n.netPlugin.data = data;
  void* h = Start(ctx, n);
  EXPECT_NE(h, nullptr);  // tracked whatever is counted, so NCCL's stop is always safe
  return h;
}

uint64_t LatencySamples(const NetCounters* c) {
  uint64_t n = 0;
  for (const auto& b : c->latency_log2_ns) n += b.load();
  return n;
}

std::map<std::string, uint64_t> Drops(uint64_t hash) {
  for (const auto& c : CommRegistry::Instance().Snapshot().comms) {
    if (c.comm_hash == hash) return c.dropped;
  }
  ADD_FAILURE() << "no communicator 0x" << std::hex << hash;
  return {};
}

TEST(NetIb, SendAndReceiveQpsCountPerDeviceAndCommunicator) {
  constexpr uint64_t kComm = 0x1b0001;
  void* ctx = InitComm(kComm, "0xff");
  ASSERT_NE(ctx, nullptr);
  void *coll, *op;
  // Send: 3 QPs on devices 0, 1, 0. NCCL rewrites ONE descriptor per QP and keeps it by pointer.
  void* step = Step(ctx, /*send=*/true, &coll, &op);
  ncclscope_net_ib_descr_v1_t q{};
  q.type = NCCLSCOPE_NET_IB_DESCR_TYPE_QP;
  const int devs[3] = {0, 1, 0};
  const size_t lens[3] = {87424, 87424, 87296};
  void* qp[3];
  for (int i = 0; i < 3; ++i) {
    q.qp.device = devs[i];
    q.qp.length = lens[i];
    q.qp.opcode = 1;
    q.qp.qpNum = 0x100 + i;
    qp[i] = StartQp(ctx, step, kIbId, &q);
  }
  q.qp.device = 7;  // after start, NCCL reuses the struct: nothing may read it any more
  q.qp.length = 1ull << 40;
  NetCounters* ib0 = NetCountersFor("nccl-ib0", kComm, false);
  NetCounters* ib1 = NetCountersFor("nccl-ib1", kComm, false);
  EXPECT_EQ(ib0->in_flight.load(), 1);  // one request, counted on its first QP's device
  EXPECT_EQ(ib1->in_flight.load(), 0);
  // Its wait starts at the post (ncclscope_nic_waiting_seconds is then the request's age, not the uptime).
  EXPECT_GT(ib0->progress_ns.load(), 0u);
  EXPECT_LE(ib0->progress_ns.load(), ncclscope::MonotonicNs());
  for (void* h : qp) StopEvent(h);
  StopEvent(qp[0]);  // NCCL stops send QPs twice (completion, then request done): counted once
  EXPECT_EQ(ib0->bytes_sent.load(), lens[0] + lens[2]);
  EXPECT_EQ(ib1->bytes_sent.load(), lens[1]);
  EXPECT_EQ(ib0->messages_sent.load(), 1u);
  EXPECT_EQ(ib1->messages_sent.load(), 0u);
  EXPECT_EQ(ib0->in_flight.load(), 0);
  EXPECT_EQ(LatencySamples(ib0), 2u);  // one per QP
  EXPECT_EQ(LatencySamples(ib1), 1u);
  EXPECT_EQ(ib0->bytes_received.load(), 0u);
  StopEvent(step);
  StopEvent(op);

  // Receive: 2 QPs on devices 1 and 2; receive descriptors carry no length (whatever is there is stale).
  step = Step(ctx, /*send=*/false, &coll, &op);
  q.qp.length = 0xdeadbeef;
  q.qp.device = 1;
  void* r0 = StartQp(ctx, step, kIbId, &q);
  q.qp.device = 2;
  void* r1 = StartQp(ctx, step, kIbId, &q);
  StopEvent(r0);
  StopEvent(r1);
  NetCounters* ib2 = NetCountersFor("nccl-ib2", kComm, false);
  EXPECT_EQ(ib1->bytes_received.load(), 0u);  // known only at RecvFlushWait
  // 520 bytes over 2 QPs as the sender splits them: ceil(260 / 128) * 128 = 384, then the remaining 136.
  RecordEventState(step, StateUpdate{kStateProxyStepRecvFlushWait, true, 520});
  RecordEventState(step, StateUpdate{kStateProxyStepRecvFlushWait, true, 520});  // once per step
  EXPECT_EQ(ib1->bytes_received.load(), 384u);
  EXPECT_EQ(ib2->bytes_received.load(), 136u);
  EXPECT_EQ(ib1->messages_received.load(), 1u);
  EXPECT_EQ(ib2->messages_received.load(), 0u);
  EXPECT_EQ(ib1->bytes_sent.load(), lens[1]);  // a receive never counts as sent
  EXPECT_EQ(ib2->bytes_sent.load(), 0u);
  StopEvent(step);
  StopEvent(op);

  // The NIC totals carry the same figures (no other communicator of this binary uses ib0-ib2 for sends).
  const NetStatsSnapshot snap = SnapshotNetStats();
  uint64_t nic_sent = 0;
  for (const auto& r : snap.rows) {
    if (r.nic_total && (r.nic == "nccl-ib0" || r.nic == "nccl-ib1")) nic_sent += r.bytes_sent;
  }
  EXPECT_GE(nic_sent, lens[0] + lens[1] + lens[2]);
  const std::map<std::string, uint64_t> drops = Drops(kComm);
  EXPECT_EQ(drops, (std::map<std::string, uint64_t>{{"stale_handle", 1}})) << "only the second stop of qp[0]";
  Finalize(ctx);
}

TEST(NetIb, WhatIsNotCountedIsDroppedOrIgnored) {
  constexpr uint64_t kComm = 0x1b0002;
  void* ctx = InitComm(kComm, "0xff");
  void *coll, *op;
  void* step = Step(ctx, /*send=*/true, &coll, &op);
  ncclscope_net_ib_descr_v1_t q{};
  q.type = NCCLSCOPE_NET_IB_DESCR_TYPE_QP;
  q.qp.length = 4096;
  std::vector<void*> hs;
  q.qp.device = -1;
  hs.push_back(StartQp(ctx, step, kIbId, &q));
  q.qp.device = kMaxIbDevices;
  hs.push_back(StartQp(ctx, step, kIbId, &q));
  q.qp.device = 3;
  hs.push_back(StartQp(ctx, step, NCCLSCOPE_NET_PLUGIN_TYPE_IB | 2, &q));  // a descriptor version we do not know
  hs.push_back(StartQp(ctx, step, kIbId, nullptr));                       // NULL extData
  ncclscope_net_ib_descr_v1_t not_qp = q;
  not_qp.type = 2;
  hs.push_back(StartQp(ctx, step, kIbId, &not_qp));
  hs.push_back(StartQp(ctx, step, 0x70001, &q));  // another plugin's own type
  // ncclscope's own verbs transport (counted by the net half): not counted here, not a drop.
  hs.push_back(StartQp(ctx, step, NCCLSCOPE_NET_PLUGIN_TYPE_NCCLSCOPE_VERBS | 1, &q));
  hs.push_back(StartQp(ctx, step, kSockId, &q));  // socket (NCCL's or our TCP's): not counted here, not a drop
  hs.push_back(StartQp(ctx, nullptr, kIbId, &q));  // no ProxyStep parent: direction unknown
  for (void* h : hs) StopEvent(h);
  StopEvent(step);
  StopEvent(op);
  std::map<std::string, uint64_t> d = Drops(kComm);
  EXPECT_EQ(d["net_bad_device"], 2u);
  EXPECT_EQ(d["net_bad_descriptor"], 3u);
  EXPECT_EQ(d["net_unknown_plugin"], 1u);
  EXPECT_EQ(d["net_unattributed"], 1u);
  for (const auto& r : SnapshotNetStats().rows) {
    EXPECT_NE(r.nic, "nccl-ib-1");
    EXPECT_NE(r.nic, "nccl-ib64");
    EXPECT_FALSE(r.comm_id == kComm && r.nic == "nccl-ib3") << "nothing valid was counted for device 3";
  }
  Finalize(ctx);
}

TEST(NetIb, NetPluginBitOffCountsNothing) {
  constexpr uint64_t kComm = 0x1b0003;
  void* ctx = InitComm(kComm, "0x5e");  // Coll, P2p, ProxyOp, ProxyStep, KernelCh: no NetPlugin (0x80)
  void *coll, *op;
  void* step = Step(ctx, /*send=*/true, &coll, &op);
  ncclscope_net_ib_descr_v1_t q{};
  q.type = NCCLSCOPE_NET_IB_DESCR_TYPE_QP;
  q.qp.device = 0;
  q.qp.length = 4096;
  StopEvent(StartQp(ctx, step, kIbId, &q));
  RecordEventState(step, StateUpdate{kStateProxyStepRecvFlushWait, true, 4096});
  StopEvent(step);
  StopEvent(op);
  for (const auto& r : SnapshotNetStats().rows) EXPECT_NE(r.comm_id, kComm) << r.nic;
  EXPECT_TRUE(Drops(kComm).empty());
  Finalize(ctx);
}


// Progress threads of several proxies raising QP events of one communicator at once, every one of them seeing
// the devices for the first time together: the lazily resolved counter blocks are the same for all, nothing is
// lost (run under TSan by the concurrency tier).
TEST(NetIb, ConcurrentFirstSightAndCounting) {
  constexpr uint64_t kComm = 0x1b0004;
  constexpr int kThreads = 8, kRounds = 500, kDevs = 4;
  void* ctx = InitComm(kComm, "0xff");
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([ctx, t] {
      for (int i = 0; i < kRounds; ++i) {
        void *coll, *op;
        void* step = Step(ctx, /*send=*/(t % 2) == 0, &coll, &op);
        ncclscope_net_ib_descr_v1_t q{};
        q.type = NCCLSCOPE_NET_IB_DESCR_TYPE_QP;
        void* h[kDevs];
        for (int d = 0; d < kDevs; ++d) {
          q.qp.device = d;
          q.qp.length = 1000;
          h[d] = StartQp(ctx, step, kIbId, &q);
        }
        for (void* e : h) StopEvent(e);
        RecordEventState(step, StateUpdate{kStateProxyStepRecvFlushWait, true, 4 * 1024});
        StopEvent(step);
        StopEvent(op);
      }
    });
  }
  for (auto& t : ts) t.join();
  uint64_t sent = 0, received = 0, msent = 0, mrecv = 0;
  for (int d = 0; d < kDevs; ++d) {
    NetCounters* c = NetCountersFor("nccl-ib" + std::to_string(d), kComm, false);
    sent += c->bytes_sent.load();
    received += c->bytes_received.load();
    msent += c->messages_sent.load();
    mrecv += c->messages_received.load();
    EXPECT_EQ(c->in_flight.load(), 0);
    // 4 KiB over 4 QPs: 1024 bytes each.
    EXPECT_EQ(c->bytes_received.load(), uint64_t{kThreads / 2} * kRounds * 1024) << d;
  }
  EXPECT_EQ(sent, uint64_t{kThreads / 2} * kRounds * kDevs * 1000);
  EXPECT_EQ(received, uint64_t{kThreads / 2} * kRounds * 4 * 1024);
  EXPECT_EQ(msent, uint64_t{kThreads / 2} * kRounds);
  EXPECT_EQ(mrecv, uint64_t{kThreads / 2} * kRounds);
  EXPECT_TRUE(Drops(kComm).empty());
  Finalize(ctx);
}

}  // namespace
}  // namespace ncclscope::profiler
