// 8 threads create and destroy 64+ communicators each round while events flow on others and a
// snapshot reader runs; another 8 threads share one communicator. Runs under ThreadSanitizer too.
#include <atomic>
#include <thread>
#include <vector>

#include "common/runtime.h"
#include "core/registry.h"
#include "gtest/gtest.h"
#include "plugin/plugin_services.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler {
namespace {

void OneCollective(void* ctx, uint64_t seq, int nch) {
  EventDesc c;
  c.type = EventType::kColl;
  c.has_seq = true;
  c.seq = seq;
  c.func = (seq & 1) ? "AllReduce" : "AllGather";
  c.datatype = "ncclFloat32";
  c.count = 1024 * (seq % 7 + 1);
  c.nchannels = nch;
  c.algo = "RING";
  c.proto = "SIMPLE";
  void* h = StartEvent(ctx, c);
  if (h == nullptr) return;
  StopEvent(h);
  EventDesc p;
  p.type = EventType::kProxyOp;
  p.parent = h;
  p.pid = 0;
  p.nsteps = 2;
  for (int ch = 0; ch < nch; ++ch) {
    EventDesc k;
    k.type = EventType::kKernelCh;
    k.parent = h;
    k.has_ptimer = true;
    k.ptimer = 1000 + seq * 100;
    void* kh = StartEvent(ctx, k);
    void* ph = ch == 0 ? StartEvent(ctx, p) : nullptr;
    if (ph != nullptr) {
      EventDesc s;
      s.type = EventType::kProxyStep;
      s.parent = ph;
      void* sh = StartEvent(ctx, s);
      RecordEventState(sh, StateUpdate{9, true, 4096});
      StopEvent(sh);
      StopEvent(ph);
    }
    RecordEventState(kh, StateUpdate{kStateKernelChStop, true, 1000 + seq * 100 + 50});
    StopEvent(kh);
  }
}

TEST(ProfilerConcurrency, ManyCommsCreatedAndDestroyedWhileEventsFlow) {
  constexpr int kThreads = 8, kCommsPerThread = 10, kOpsPerComm = 40;  // 80 communicators in all
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> snapshots{0};
  // The services and dump hooks run as in a job: finalize dumps race the snapshot reader and the stall watch.
  InstallPluginServices();
  // A long-lived communicator keeps the runtime up while others come and go.
  InitArgs base;
  base.comm_hash = 0xba5e;
  base.nranks = 8;
  void* anchor = nullptr;
  ASSERT_TRUE(Init(base, &anchor).ok());
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      ProcessSnapshot s = CommRegistry::Instance().Snapshot();
      for (const auto& c : s.comms) {
        for (const auto& r : c.completed) ASSERT_LE(r.kernel_channels_done, r.channels);
      }
      snapshots.fetch_add(1);
    }
  });
  std::vector<std::thread> threads;
  std::atomic<uint64_t> completed{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCommsPerThread; ++c) {
        InitArgs a;
        a.comm_hash = 0x1000 + t * 100 + c;
        a.nranks = 8;
        a.rank = t;
        void* ctx = nullptr;
        ASSERT_TRUE(Init(a, &ctx).ok());
        for (int i = 1; i <= kOpsPerComm; ++i) {
          OneCollective(ctx, i, 1 + i % 4);
          OneCollective(anchor, i, 2);  // all threads share this one
        }
        completed.fetch_add(kOpsPerComm);
        Finalize(ctx);
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  reader.join();
  ProcessSnapshot s = CommRegistry::Instance().Snapshot();
  ASSERT_EQ(s.comms.size(), 1u);
  const CommSnapshot& a = s.comms[0];
  uint64_t total = 0;
  for (const auto& op : a.ops) total += op.count;
  EXPECT_EQ(total, static_cast<uint64_t>(kThreads * kCommsPerThread * kOpsPerComm));
  EXPECT_EQ(a.in_flight_count, 0);
  EXPECT_EQ(a.dropped.count("event_pool_full"), 0u);
  EXPECT_GT(snapshots.load(), 0u);
  Finalize(anchor);
  EXPECT_EQ(Runtime::Instance().users(), 0);
  EXPECT_EQ(CommRegistry::Instance().size(), 0u);
}

}  // namespace
}  // namespace ncclscope::profiler
