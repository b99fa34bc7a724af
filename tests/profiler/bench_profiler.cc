// bench_profiler: cost of the profiler's event path through the ncclProfiler_v5 table, as NCCL
// calls it. Per-call medians and p99 come from batches of kBatch calls timed with one clock pair
// (a clock read per call would cost as much as the call); p50_ns/p99_ns are per call.
//   StartStop: startEvent+stopEvent of a Coll that completes at stop (flight recorder + aggregates)
//   Record:    recordEventState(KernelChStop) on a live KernelCh handle
//   Collective32: one 32-channel collective at the default mask (Coll + 32 × KernelCh start/record/stop)
//   CollectiveNoKernelCh: the same without KernelCh (Coll start/stop only), as under NCCL 2.31's default
//   Harness: StartStop and Collective32 through a table of empty functions, called the same way: what NCCL's
//     side of the calls costs (building descriptors, indirect calls). The profiler's own cost is the difference.
//   Snapshot: one process snapshot of 9 communicators with full flight recorders, as the stall watch and
//     dumps take it (full) and as a metrics scrape takes it (without_recorder)
// Variants: 1 thread; 8 threads with separate contexts; 8 threads sharing one context while a
// snapshot reader runs. Also prints the memory per communicator at defaults.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/registry.h"
#include "common/clock.h"
#include "ncclscope/abi/profiler.h"
#include "profiler/profiler.h"

extern "C" const ncclscope_profiler_v5_t ncclProfiler_v5;

namespace {

// The harness table: every slot does nothing but what NCCL needs of it (a non-null handle).
char g_noop_event;
const ncclscope_profiler_v5_t kNoopTable = {
    "noop",
    [](void** c, uint64_t, int*, const char*, int, int, int, ncclscope_logger_t) {
      *c = &g_noop_event;
      return NCCLSCOPE_SUCCESS;
    },
    [](void*, void** h, ncclscope_profiler_descr_v5_t*) {
      *h = &g_noop_event;
      return NCCLSCOPE_SUCCESS;
    },
    [](void*) { return NCCLSCOPE_SUCCESS; },
    [](void*, ncclscope_profiler_state_t, ncclscope_profiler_state_args_t*) { return NCCLSCOPE_SUCCESS; },
    [](void*) { return NCCLSCOPE_SUCCESS; },
};
// Read through a volatile pointer, as NCCL reads its plugin's table: no call is inlined or dropped.
const ncclscope_profiler_v5_t* volatile g_table_ours = &ncclProfiler_v5;
const ncclscope_profiler_v5_t* volatile g_table_noop = &kNoopTable;

constexpr int kBatch = 32;
constexpr int kMaxThreads = 8;
void* g_ctx[kMaxThreads];
void* g_shared = nullptr;
int g_mask = 0;
std::atomic<bool> g_reader_on{false};
std::atomic<bool> g_quit{false};
std::atomic<uint64_t> g_snapshots{0};

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

ncclscope_profiler_descr_v5_t CollDescr(uint64_t seq, int nch) {
  ncclscope_profiler_descr_v5_t d{};
  d.type = NCCLSCOPE_PROFILE_COLL;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 262144;
  d.coll.nChannels = static_cast<uint8_t>(nch);
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  return d;
}

void Report(benchmark::State& state, std::vector<double>& per_call) {
  if (per_call.empty()) return;
  std::sort(per_call.begin(), per_call.end());
  state.counters["p50_ns"] = benchmark::Counter(per_call[per_call.size() / 2], benchmark::Counter::kAvgThreads);
  state.counters["p99_ns"] = benchmark::Counter(per_call[per_call.size() * 99 / 100], benchmark::Counter::kAvgThreads);
}

void* ContextFor(const benchmark::State& state, bool shared) {
  return shared ? g_shared : g_ctx[state.thread_index()];
}

void BeginShared(benchmark::State& state, bool shared) {
  if (shared && state.thread_index() == 0) g_reader_on = true;
}
void EndShared(benchmark::State& state, bool shared) {
  if (shared && state.thread_index() == 0) g_reader_on = false;
}

void BM_StartStop(benchmark::State& state, bool shared, bool harness = false) {
  const ncclscope_profiler_v5_t& table = harness ? *g_table_noop : *g_table_ours;
  void* ctx = ContextFor(state, shared);
  std::vector<double> per_call;
  per_call.reserve(1 << 20);
  uint64_t seq = 0;
  BeginShared(state, shared);
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    for (int i = 0; i < kBatch; ++i) {
      auto d = CollDescr(++seq, 0);
      void* h = nullptr;
      table.startEvent(ctx, &h, &d);
      table.stopEvent(h);
    }
    if (per_call.size() < per_call.capacity()) per_call.push_back(static_cast<double>(NowNs() - t0) / kBatch);
  }
  EndShared(state, shared);
  state.SetItemsProcessed(state.iterations() * kBatch);
  Report(state, per_call);
}

void BM_Record(benchmark::State& state, bool shared) {
  void* ctx = ContextFor(state, shared);
  auto d = CollDescr(1, 1);
  void* coll = nullptr;
  ncclProfiler_v5.startEvent(ctx, &coll, &d);
  ncclProfiler_v5.stopEvent(coll);
  ncclscope_profiler_descr_v5_t k{};
  k.type = NCCLSCOPE_PROFILE_KERNEL_CH;
  k.parentObj = coll;
  k.kernelCh.pTimer = 1000;
  void* kh = nullptr;
  ncclProfiler_v5.startEvent(ctx, &kh, &k);
  ncclscope_profiler_state_args_t args{};
  std::vector<double> per_call;
  per_call.reserve(1 << 20);
  uint64_t t = 2000;
  BeginShared(state, shared);
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    for (int i = 0; i < kBatch; ++i) {
      args.kernelCh.pTimer = ++t;
      ncclProfiler_v5.recordEventState(kh, NCCLSCOPE_STATE_KERNEL_CH_STOP, &args);
    }
    if (per_call.size() < per_call.capacity()) per_call.push_back(static_cast<double>(NowNs() - t0) / kBatch);
  }
  EndShared(state, shared);
  ncclProfiler_v5.stopEvent(kh);
  state.SetItemsProcessed(state.iterations() * kBatch);
  Report(state, per_call);
}

// One collective as NCCL 2.28 emits it at the default mask: Coll start/stop, then per channel KernelCh start,
// KernelChStop state, stop (2 + 32 x 3 = 98 calls). Timed over batches of kOpsPerSample collectives, so that
// the benchmark's own two clock reads per sample (25-130 ns each in a VM) do not count as the profiler's.
void BM_Collective32(benchmark::State& state, bool shared, bool harness = false) {
  constexpr int kOpsPerSample = 8;
  const ncclscope_profiler_v5_t& table = harness ? *g_table_noop : *g_table_ours;
  void* ctx = ContextFor(state, shared);
  std::vector<double> per_op;
  per_op.reserve(1 << 20);
  uint64_t seq = 0;
  ncclscope_profiler_state_args_t args{};
  BeginShared(state, shared);
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    for (int i = 0; i < kOpsPerSample; ++i) {
      auto d = CollDescr(++seq, 32);
      void* coll = nullptr;
      table.startEvent(ctx, &coll, &d);
      table.stopEvent(coll);
      for (int ch = 0; ch < 32; ++ch) {
        ncclscope_profiler_descr_v5_t k{};
        k.type = NCCLSCOPE_PROFILE_KERNEL_CH;
        k.parentObj = coll;
        k.kernelCh.channelId = static_cast<uint8_t>(ch);
        k.kernelCh.pTimer = seq * 100000 + ch;
        void* kh = nullptr;
        table.startEvent(ctx, &kh, &k);
        args.kernelCh.pTimer = seq * 100000 + 50000 + ch;
        table.recordEventState(kh, NCCLSCOPE_STATE_KERNEL_CH_STOP, &args);
        table.stopEvent(kh);
      }
    }
    if (per_op.size() < per_op.capacity()) per_op.push_back(static_cast<double>(NowNs() - t0) / kOpsPerSample);
  }
  EndShared(state, shared);
  state.SetItemsProcessed(state.iterations() * kOpsPerSample);
  Report(state, per_op);
}

// The same collective without KernelCh events (NCCL 2.31's default mask in ncclscope, 0x6): Coll start/stop only,
// the operation done at its stop. What a collective costs the host there, against BM_Collective32's 98 calls.
void BM_CollectiveNoKernelCh(benchmark::State& state) {
  constexpr int kOpsPerSample = 8;
  void* ctx = ContextFor(state, false);
  std::vector<double> per_op;
  per_op.reserve(1 << 20);
  uint64_t seq = 0;
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    for (int i = 0; i < kOpsPerSample; ++i) {
      auto d = CollDescr(++seq, 0);  // no channel announced: no KernelCh vote, as under a mask without it
      void* coll = nullptr;
      ncclProfiler_v5.startEvent(ctx, &coll, &d);
      ncclProfiler_v5.stopEvent(coll);
    }
    if (per_op.size() < per_op.capacity()) per_op.push_back(static_cast<double>(NowNs() - t0) / kOpsPerSample);
  }
  state.SetItemsProcessed(state.iterations() * kOpsPerSample);
  Report(state, per_op);
}

void BM_Snapshot(benchmark::State& state, ncclscope::SnapshotScope scope) {
  static bool filled = false;
  if (!filled) {  // every recorder full: the 9 contexts' depth in completed collectives each
    for (void* ctx : g_ctx) {
      for (uint64_t seq = 1; seq <= 4096; ++seq) {
        auto d = CollDescr(seq, 0);
        void* h = nullptr;
        ncclProfiler_v5.startEvent(ctx, &h, &d);
        ncclProfiler_v5.stopEvent(h);
      }
    }
    filled = true;
  }
  std::vector<double> per_snapshot;
  per_snapshot.reserve(1 << 16);
  size_t records = 0;
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    ncclscope::ProcessSnapshot snap = ncclscope::CommRegistry::Instance().Snapshot(scope);
    if (per_snapshot.size() < per_snapshot.capacity()) per_snapshot.push_back(static_cast<double>(NowNs() - t0));
    records = 0;
    for (const auto& c : snap.comms) records += c.completed.size();
    benchmark::DoNotOptimize(snap);
  }
  state.counters["records"] = static_cast<double>(records);
  Report(state, per_snapshot);
}

BENCHMARK_CAPTURE(BM_StartStop, separate, false)->Threads(1)->Threads(8)->UseRealTime();
BENCHMARK_CAPTURE(BM_StartStop, shared_with_reader, true)->Threads(8)->UseRealTime();
BENCHMARK_CAPTURE(BM_StartStop, harness, false, true)->Threads(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Record, separate, false)->Threads(1)->Threads(8)->UseRealTime();
BENCHMARK_CAPTURE(BM_Record, shared_with_reader, true)->Threads(8)->UseRealTime();
BENCHMARK_CAPTURE(BM_Collective32, separate, false)->Threads(1)->Threads(8)->UseRealTime();
BENCHMARK_CAPTURE(BM_Collective32, shared_with_reader, true)->Threads(8)->UseRealTime();
BENCHMARK_CAPTURE(BM_Collective32, harness, false, true)->Threads(1)->UseRealTime();
BENCHMARK(BM_CollectiveNoKernelCh)->Threads(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Snapshot, full, ncclscope::SnapshotScope::kFull)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Snapshot, without_recorder, ncclscope::SnapshotScope::kWithoutRecorder)
    ->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int i = 0; i < kMaxThreads; ++i) {
    ncclProfiler_v5.init(&g_ctx[i], 0xbe00 + i, &g_mask, "bench", 1, 8, i, nullptr);
  }
  ncclProfiler_v5.init(&g_shared, 0xbeef, &g_mask, "bench-shared", 1, 8, 0, nullptr);
  std::printf("activation mask at defaults: 0x%x\n", g_mask);
  {  // what one host clock read costs here: the event path reads it once or twice per operation
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the TSC line's first calibration
    constexpr int kReads = 1 << 20;
    uint64_t sink = 0, t0 = NowNs();
    for (int i = 0; i < kReads; ++i) sink += ncclscope::SystemMonotonicNs();
    const double system_ns = static_cast<double>(NowNs() - t0) / kReads;
    t0 = NowNs();
    for (int i = 0; i < kReads; ++i) sink += ncclscope::MonotonicNs();
    benchmark::DoNotOptimize(sink);
    std::printf("host clock read: clock_gettime(CLOCK_MONOTONIC) %.1f ns, the event path's clock %.1f ns\n", system_ns,
                static_cast<double>(NowNs() - t0) / kReads);
  }
  std::printf("memory per communicator at defaults (8 ranks): %zu bytes (%.1f KiB)\n",
              ncclscope::profiler::ContextMemoryBytes(g_shared),
              ncclscope::profiler::ContextMemoryBytes(g_shared) / 1024.0);
  std::thread reader([] {
    while (!g_quit.load()) {
      if (g_reader_on.load()) {
        benchmark::DoNotOptimize(ncclscope::CommRegistry::Instance().Snapshot());
        g_snapshots.fetch_add(1);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  });
  benchmark::RunSpecifiedBenchmarks();
  g_quit = true;
  reader.join();
  std::printf("snapshots taken by the reader during the shared runs: %llu\n",
              static_cast<unsigned long long>(g_snapshots.load()));
  for (int i = 0; i < kMaxThreads; ++i) ncclProfiler_v5.finalize(g_ctx[i]);
  ncclProfiler_v5.finalize(g_shared);
  benchmark::Shutdown();
  return 0;
}
