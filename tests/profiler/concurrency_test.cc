// 8 threads create and destroy 64+ communicators each round while events flow on others and a
// snapshot reader runs; another 8 threads share one communicator. Runs under ThreadSanitizer too.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "common/runtime.h"
#include "core/registry.h"
#include "event_desc_builders.h"
#include "gtest/gtest.h"
#include "plugin/services/plugin_services.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler {
namespace {

void OneCollective(void* ctx, uint64_t seq, int nch) {
  EventDesc c = Coll(seq, (seq & 1) ? "AllReduce" : "AllGather", 1024 * (seq % 7 + 1), nch);
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
  // Coll starts are counted on the start lane by its owner and on the shared lane by the 7 other threads.
  EXPECT_EQ(a.events.at("Coll"), static_cast<uint64_t>(kThreads * kCommsPerThread * kOpsPerComm));
  EXPECT_EQ(a.in_flight_count, 0);
  EXPECT_EQ(a.dropped.count("event_pool_full"), 0u);
  EXPECT_GT(snapshots.load(), 0u);
  Finalize(anchor);
  EXPECT_EQ(Runtime::Instance().users(), 0);
  EXPECT_EQ(CommRegistry::Instance().size(), 0u);
}

// One operation's channels started, recorded and stopped on different threads (NCCL uses one thread per
// operation, but nothing may break if it does not) while a reader snapshots: every operation completes with
// the exact latest channel end, and the KernelCh count never goes backwards and ends exact.
TEST(ProfilerConcurrency, OneOperationsChannelsOnSeveralThreads) {
  constexpr int kOps = 150, kChannels = 4;
  InitArgs a;
  a.comm_hash = 0xc4a7;
  a.nranks = 2;
  void* ctx = nullptr;
  ASSERT_TRUE(Init(a, &ctx).ok());
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      ProcessSnapshot s = CommRegistry::Instance().Snapshot();
      for (const auto& c : s.comms) {
        if (c.comm_hash != 0xc4a7) continue;
        auto it = c.events.find("KernelCh");
        const uint64_t n = it == c.events.end() ? 0 : it->second;
        EXPECT_GE(n, last);
        last = n;
      }
    }
  });
  for (int i = 1; i <= kOps; ++i) {
    const EventDesc c = Coll(i, "AllReduce", 1024, kChannels);
    void* h = StartEvent(ctx, c);
    ASSERT_NE(h, nullptr);
    const uint64_t base = 1'000'000ull * i;
    std::vector<std::thread> channels;
    for (int ch = 0; ch < kChannels; ++ch) {
      channels.emplace_back([&, ch] {
        EventDesc k;
        k.type = EventType::kKernelCh;
        k.parent = h;
        k.has_ptimer = true;
        k.ptimer = base + ch;
        void* kh = StartEvent(ctx, k);
        ASSERT_NE(kh, nullptr);
        RecordEventState(kh, StateUpdate{kStateKernelChStop, true, base + 1000 + 100 * ((ch + i) % kChannels)});
        StopEvent(kh);
      });
    }
    StopEvent(h);
    for (auto& t : channels) t.join();
  }
  stop = true;
  reader.join();
  ProcessSnapshot s = CommRegistry::Instance().Snapshot();
  const CommSnapshot* comm = nullptr;
  for (const auto& c : s.comms) {
    if (c.comm_hash == 0xc4a7) comm = &c;
  }
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->in_flight_count, 0);
  ASSERT_EQ(comm->completed.size(), static_cast<size_t>(kOps));
  for (const OpRecord& r : comm->completed) {
    EXPECT_EQ(r.timing_source, TimingSource::kGpu);
    EXPECT_EQ(r.duration_ns, 1000u + 100 * (kChannels - 1));  // earliest start to latest end
  }
  EXPECT_EQ(comm->events.at("KernelCh"), static_cast<uint64_t>(kOps * kChannels));
  Finalize(ctx);
}

// NCCL 2.31's profiler thread: KernelCh and KernelPhase events of two communicators (split with shared
// resources) come from one thread while each communicator's own thread starts and stops its collectives
// and a reader snapshots. The second communicator is destroyed halfway with a channel of its last operation
// started and never stopped, and its queued work dropped, as NCCL drops pending KernelCh work. Every
// operation of the first communicator completes with its phases and exact counts.
TEST(ProfilerConcurrency, SharedProfilerThreadAcrossCommunicators) {
  constexpr int kOps = 120, kChannels = 4;
  void* ctx[2] = {nullptr, nullptr};
  for (int c = 0; c < 2; ++c) {
    InitArgs a;
    a.comm_hash = 0x5a7e0 + c;
    a.nranks = 2;
    ASSERT_TRUE(Init(a, &ctx[c]).ok());
  }
  struct Work {
    int comm;
    void* coll;
    uint64_t base;
  };
  std::mutex mu;  // the queue, and the second communicator's life (its events and its Finalize)
  std::vector<Work> queue;
  bool second_alive = true;
  void* second_pending = nullptr;  // a started KernelCh of the second communicator, stopped next round
  std::atomic<bool> done{false}, stop_reader{false};
  // One operation's channels: each started, its three phases run, then stopped, except that `keep` gets
  // the last channel's handle unstopped.
  auto run_kernel = [&](void* c, const Work& w, void** keep) {
    for (int ch = 0; ch < kChannels; ++ch) {
      EventDesc k;
      k.type = EventType::kKernelCh;
      k.parent = w.coll;
      k.has_ptimer = true;
      k.ptimer = w.base + ch;
      void* kh = StartEvent(c, k);
      ASSERT_NE(kh, nullptr);
      for (int phase = 0; phase < 3; ++phase) {
        EventDesc ph;
        ph.type = EventType::kKernelPhase;
        ph.parent = kh;
        ph.phase = phase;
        ph.has_ptimer = true;
        ph.ptimer = w.base + 100 * phase;
        void* phh = StartEvent(c, ph);
        ASSERT_NE(phh, nullptr);
        RecordEventState(phh, StateUpdate{kStateKernelPhaseStop, true, w.base + 100 * phase + 50 + phase});
        StopEvent(phh);
      }
      RecordEventState(kh, StateUpdate{kStateKernelChStop, true, w.base + 1000});
      if (keep != nullptr && ch == kChannels - 1) {
        *keep = kh;
      } else {
        StopEvent(kh);
      }
    }
  };
  std::thread profiler_thread([&] {
    for (;;) {
      std::vector<Work> batch;
      {
        std::lock_guard<std::mutex> lock(mu);
        batch.swap(queue);
      }
      if (batch.empty()) {
        if (done.load()) return;
        std::this_thread::yield();
        continue;
      }
      for (const Work& w : batch) {
        if (w.comm == 0) {
          run_kernel(ctx[0], w, nullptr);
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        if (!second_alive) continue;  // destroyed: its pending work is dropped, never stopped
        if (second_pending != nullptr) StopEvent(second_pending);
        run_kernel(ctx[1], w, &second_pending);
      }
    }
  });
  std::thread reader([&] {
    while (!stop_reader.load(std::memory_order_relaxed)) CommRegistry::Instance().Snapshot();
  });
  std::vector<std::thread> comm_threads;
  for (int c = 0; c < 2; ++c) {
    comm_threads.emplace_back([&, c] {
      for (int i = 1; i <= kOps; ++i) {
        EventDesc d = Coll(i, "AllReduce", 1024, kChannels);
        d.symmetric = true;
        d.user_tag = 7;
        std::unique_lock<std::mutex> life(mu, std::defer_lock);
        if (c == 1) life.lock();  // the second communicator's calls never race its Finalize
        void* h = StartEvent(ctx[c], d);
        ASSERT_NE(h, nullptr);
        StopEvent(h);
        if (c == 1) life.unlock();
        {
          std::lock_guard<std::mutex> lock(mu);
          queue.push_back(Work{c, h, 1'000'000ull * i});
        }
        if (c == 1 && i == kOps / 2) {
          for (;; std::this_thread::yield()) {  // once a channel of it has started and not stopped
            std::lock_guard<std::mutex> lock(mu);
            if (second_pending == nullptr) continue;
            second_alive = false;
            Finalize(ctx[1]);
            return;
          }
        }
      }
    });
  }
  for (auto& t : comm_threads) t.join();
  done = true;
  profiler_thread.join();
  stop_reader = true;
  reader.join();
  ProcessSnapshot s = CommRegistry::Instance().Snapshot();
  const CommSnapshot* comm = nullptr;
  for (const auto& c : s.comms) {
    EXPECT_NE(c.comm_hash, 0x5a7e1u) << "the destroyed communicator is still registered";
    if (c.comm_hash == 0x5a7e0) comm = &c;
  }
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->in_flight_count, 0);
  ASSERT_EQ(comm->completed.size(), static_cast<size_t>(kOps));
  for (const OpRecord& r : comm->completed) {
    EXPECT_EQ(r.timing_source, TimingSource::kGpu);
    EXPECT_EQ(r.phase_ns[0], 50u);
    EXPECT_EQ(r.phase_ns[1], 51u);
    EXPECT_EQ(r.phase_ns[2], 52u);
  }
  EXPECT_EQ(comm->events.at("KernelCh"), static_cast<uint64_t>(kOps * kChannels));
  EXPECT_EQ(comm->symmetric_ops, static_cast<uint64_t>(kOps));
  EXPECT_EQ(comm->symmetric_barrier_ns, 50u * kOps);
  Finalize(ctx[0]);
}

}  // namespace
}  // namespace ncclscope::profiler
