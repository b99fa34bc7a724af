// Replays NCCL-shaped event sequences through the BUILT library's exported ncclProfiler_v4/v5/v6/v7
// tables (dlopen + dlsym, as NCCL does) and checks the communicator dump that finalize writes:
// counts, bytes, last sequence numbers, GPU durations and bus bandwidth against hand-computed
// nccl-tests figures, flight-recorder contents and drop counters, with every quirk of docs/nccl-abi.md#pitfalls.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "ncclscope/abi/profiler.h"
#include "nlohmann/json.hpp"
#include "dump_reader.h"

namespace {

constexpr int kStateKernelChStop = 22;
constexpr int kStateGroupStartApiStop = 23;

struct Library {
  void* handle = nullptr;
  Library() { handle = dlopen(NCCLSCOPE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL); }
  ~Library() {
    if (handle != nullptr) dlclose(handle);
  }
};

std::string MakeDumpDir(const char* tag) {
  std::string dir = std::filesystem::temp_directory_path() / ("ncclscope-replay-" + std::string(tag) + "-" +
                                                               std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  setenv("NCCLSCOPE_DUMP_DIR", dir.c_str(), 1);
  unsetenv("NCCLSCOPE_EVENT_MASK");
  return dir;
}

nlohmann::json ReadJson(const std::string& path) {
  nlohmann::json j = ncclscope::testing::ReadDump(path);
  EXPECT_TRUE(j.is_object()) << "no readable v2 dump at " << path;
  return j.is_object() ? j : nlohmann::json::object();
}

const nlohmann::json* FindOp(const nlohmann::json& j, const std::string& kind, const std::string& func) {
  for (const auto& op : j["ops"]) {
    if (op["kind"] == kind && op["func"] == func) return &op;
  }
  return nullptr;
}

template <class Table, class Descr>
struct Driver {
  const Table* t;
  void* ctx = nullptr;
  int mask = 0;
  static constexpr bool kHasApi = !std::is_same_v<Descr, ncclscope_profiler_descr_v4_t>;

  ncclscope_result_t Init(uint64_t hash, const char* name, int nranks, int rank) {
    if constexpr (kHasApi) {
      return t->init(&ctx, hash, &mask, name, 1, nranks, rank, nullptr);
    } else {
      return t->init(&ctx, &mask, name, hash, 1, nranks, rank, nullptr);
    }
  }
  void* Start(void* context, Descr& d) {
    void* h = reinterpret_cast<void*>(0x1);  // must be overwritten (NULL when dropped)
    EXPECT_EQ(t->startEvent(context, &h, &d), NCCLSCOPE_SUCCESS);
    return h;
  }
  void* Start(Descr& d) { return Start(ctx, d); }
  void Stop(void* h) { EXPECT_EQ(t->stopEvent(h), NCCLSCOPE_SUCCESS); }
  void Record(void* h, int state, ncclscope_profiler_state_args_t* args) {
    EXPECT_EQ(t->recordEventState(h, static_cast<ncclscope_profiler_state_t>(state), args), NCCLSCOPE_SUCCESS);
  }

  // One collective the way NCCL emits it: (CollApi started and stopped,) Coll started with it as parent
  // and stopped at enqueue, then per channel KernelCh start(pTimer) → KernelChStop(pTimer) → stop.
  void Coll(void* api_parent, uint64_t seq, const char* func, const char* dtype, size_t count, int nch,
            uint64_t gpu_start, uint64_t gpu_dur, void** coll_out = nullptr) {
    Descr c{};
    c.type = NCCLSCOPE_PROFILE_COLL;
    c.parentObj = api_parent;
    c.coll.seqNumber = seq;
    c.coll.func = func;
    c.coll.datatype = dtype;
    c.coll.count = count;
    c.coll.root = 0;
    c.coll.nChannels = static_cast<uint8_t>(nch);
    c.coll.algo = "RING";
    c.coll.proto = "SIMPLE";
    void* coll = Start(c);
    ASSERT_NE(coll, nullptr);
    Stop(coll);  // parent stopped before its children start
    if (coll_out != nullptr) *coll_out = coll;
    for (int ch = 0; ch < nch; ++ch) {
      Descr k{};
      k.type = NCCLSCOPE_PROFILE_KERNEL_CH;
      k.parentObj = coll;
      k.kernelCh.channelId = static_cast<uint8_t>(ch);
      k.kernelCh.pTimer = gpu_start + ch;  // channels start a few ns apart; the earliest counts
      void* kh = Start(k);
      ASSERT_NE(kh, nullptr);
      ncclscope_profiler_state_args_t a{};
      a.kernelCh.pTimer = gpu_start + gpu_dur - ch;  // the latest end counts
      Record(kh, 22, &a);
      Stop(kh);
    }
  }

  void P2p(const char* func, int peer, size_t count, int nch, uint64_t gpu_start, uint64_t gpu_dur) {
    Descr c{};
    c.type = NCCLSCOPE_PROFILE_P2P;
    c.p2p.func = func;
    c.p2p.datatype = "ncclFloat32";
    c.p2p.count = count;
    c.p2p.peer = peer;
    c.p2p.nChannels = static_cast<uint8_t>(nch);
    void* p = Start(c);
    ASSERT_NE(p, nullptr);
    Stop(p);
    for (int ch = 0; ch < nch; ++ch) {
      Descr k{};
      k.type = NCCLSCOPE_PROFILE_KERNEL_CH;
      k.parentObj = p;
      k.kernelCh.pTimer = gpu_start;
      void* kh = Start(k);
      ncclscope_profiler_state_args_t a{};
      a.kernelCh.pTimer = gpu_start + gpu_dur;
      Record(kh, 22, &a);
      Stop(kh);
    }
  }
};

template <class Table, class Descr>
void RunScenario(const char* symbol, const char* abi) {
  const std::string dir = MakeDumpDir(abi);
  Library lib;
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto* table = static_cast<const Table*>(dlsym(lib.handle, symbol));
  ASSERT_NE(table, nullptr) << symbol;
  Driver<Table, Descr> drv{table};
  constexpr uint64_t kHash = 0x0123456789abcdefull;
  ASSERT_EQ(drv.Init(kHash, "replay", 4, 1), NCCLSCOPE_SUCCESS);
  ASSERT_NE(drv.ctx, nullptr);
  EXPECT_EQ(drv.mask, NCCLSCOPE_PROFILE_COLL | NCCLSCOPE_PROFILE_P2P | NCCLSCOPE_PROFILE_KERNEL_CH);

  void* group_api = nullptr;
  void* coll_api = nullptr;
  if constexpr (Driver<Table, Descr>::kHasApi) {
    Descr g{};
    g.type = NCCLSCOPE_PROFILE_GROUP_API;
    g.groupApi.groupDepth = 1;
    group_api = drv.Start(g);
    ASSERT_NE(group_api, nullptr);
    drv.Record(group_api, kStateGroupStartApiStop, nullptr);  // NULL state args on the native path
    Descr ca{};
    ca.type = NCCLSCOPE_PROFILE_COLL_API;
    ca.parentObj = group_api;
    ca.collApi.func = "AllReduce";
    ca.collApi.count = 1 << 20;
    ca.collApi.datatype = "ncclFloat32";
    coll_api = drv.Start(ca);
    drv.Stop(coll_api);  // stopped before the API call returns, long before Coll starts
  } else {
    Descr g{};
    g.type = NCCLSCOPE_PROFILE_GROUP;
    group_api = drv.Start(g);
    coll_api = group_api;  // v4: Coll's parent is the Group event
  }

  // AllReduce, 1 Mi floats = 4 MiB, 4 ranks, 2 channels, 400 µs on the GPU:
  //   algbw = 4194304 B / 400000 ns = 10.48576 GB/s; busbw = algbw × 2·3/4 = 15.72864 GB/s.
  void* coll = nullptr;
  drv.Coll(coll_api, 7, "AllReduce", "ncclFloat32", 1 << 20, 2, 1'000'000'000'000ull, 400'000, &coll);
  // A second AllReduce (seq 8) and an AllGather with its own numbering (seq 3): per-function sequences.
  drv.Coll(coll_api, 8, "AllReduce", "ncclFloat32", 1 << 20, 2, 1'000'001'000'000ull, 400'000);
  // AllGather: Coll reports ncclInt8 and a per-rank byte count; 1 MiB per rank × 4 = 4 MiB.
  //   algbw = 4194304 / 200000 = 20.97152 GB/s; busbw = × 3/4 = 15.72864 GB/s.
  drv.Coll(coll_api, 3, "AllGather", "ncclInt8", 1 << 20, 2, 1'000'002'000'000ull, 200'000);
  // Point-to-point: no NCCL sequence number; our own counter per (peer, direction).
  drv.P2p("Send", 2, 1000, 1, 1'000'003'000'000ull, 10'000);
  drv.P2p("Send", 2, 1000, 1, 1'000'003'100'000ull, 10'000);
  drv.P2p("Recv", 2, 1000, 1, 1'000'003'200'000ull, 10'000);

  // An operation still in flight at finalize: Coll started, stopped (enqueued), kernel started only.
  void* stuck = nullptr;
  {
    Descr c{};
    c.type = NCCLSCOPE_PROFILE_COLL;
    c.parentObj = coll_api;
    c.coll.seqNumber = 9;
    c.coll.func = "AllReduce";
    c.coll.datatype = "ncclFloat32";
    c.coll.count = 256;
    c.coll.nChannels = 2;
    c.coll.algo = "TREE";
    c.coll.proto = "LL";
    stuck = drv.Start(c);
    drv.Stop(stuck);
    Descr k{};
    k.type = NCCLSCOPE_PROFILE_KERNEL_CH;
    k.parentObj = stuck;
    k.kernelCh.pTimer = 1'000'004'000'000ull;
    ASSERT_NE(drv.Start(k), nullptr);  // never stopped: the kernel is "hung"
  }

  // A local ProxyOp under the stuck op, progressing, with two steps; and one that is never stopped.
  {
    Descr p{};
    p.type = NCCLSCOPE_PROFILE_PROXY_OP;
    p.parentObj = stuck;
    p.proxyOp.pid = getpid();
    p.proxyOp.nSteps = 2;
    p.proxyOp.isSend = 1;
    void* po = drv.Start(p);
    ASSERT_NE(po, nullptr);
    drv.Record(po, 19, nullptr);
    for (int s = 0; s < 2; ++s) {
      Descr st{};
      st.type = NCCLSCOPE_PROFILE_PROXY_STEP;
      st.parentObj = po;
      st.proxyStep.step = s;
      void* sh = drv.Start(reinterpret_cast<void*>(0x10), st);  // context may be foreign: only the parent counts
      ncclscope_profiler_state_args_t a{};
      a.proxyStep.transSize = 4096;
      drv.Record(sh, 9, &a);
      drv.Stop(sh);
    }
    drv.Stop(po);
    void* never = drv.Start(p);  // a ProxyOp that is never stopped
    EXPECT_NE(never, nullptr);
  }

  // PXN: a ProxyOp of another process, with foreign context and parent pointers: never dereferenced.
  {
    Descr p{};
    p.type = NCCLSCOPE_PROFILE_PROXY_OP;
    p.parentObj = reinterpret_cast<void*>(0xdead0000beef0000ull);
    p.proxyOp.pid = getpid() + 100000;
    p.proxyOp.nSteps = 4;
    void* po = drv.Start(reinterpret_cast<void*>(0xbad0000000ull), p);
    EXPECT_NE(po, nullptr);  // tracked in the process-wide pool
    Descr st{};
    st.type = NCCLSCOPE_PROFILE_PROXY_STEP;
    st.parentObj = po;
    void* sh = drv.Start(reinterpret_cast<void*>(0xbad0000000ull), st);
    drv.Stop(sh);
    drv.Stop(po);
    // A KernelCh relayed by a PXN proxy: its parent is foreign too, so it is dropped and counted.
    Descr k{};
    k.type = NCCLSCOPE_PROFILE_KERNEL_CH;
    k.parentObj = reinterpret_cast<void*>(0xdead0000beef0000ull);
    EXPECT_EQ(drv.Start(k), nullptr);
  }

  // Quirks: NULL context, unknown type, unknown state, NULL handles.
  {
    Descr g{};
    g.type = NCCLSCOPE_PROFILE_PROXY_CTRL;
    void* pc = drv.Start(nullptr, g);  // NULL context: the process pool takes it
    ncclscope_profiler_state_args_t a{};
    a.proxyCtrl.appendedProxyOps = 3;
    drv.Record(pc, 18, &a);
    drv.Stop(pc);
    Descr u{};
    u.type = static_cast<decltype(u.type)>(0x80);  // NetPlugin without parent is fine; now a bogus bit:
    u.type = static_cast<decltype(u.type)>(sizeof(u.type) == 1 ? 0x0 : (1ull << 40));
    EXPECT_EQ(drv.Start(u), nullptr);
    Descr g2{};
    g2.type = NCCLSCOPE_PROFILE_PROXY_CTRL;
    void* pc2 = drv.Start(g2);
    drv.Record(pc2, 99, nullptr);  // unknown state
    drv.Stop(pc2);
    drv.Stop(nullptr);
    drv.Record(nullptr, 22, nullptr);
  }
  if constexpr (Driver<Table, Descr>::kHasApi) drv.Stop(group_api);

  ASSERT_EQ(table->finalize(drv.ctx), NCCLSCOPE_SUCCESS);
  // Events after finalize must be harmless.
  {
    Descr c{};
    c.type = NCCLSCOPE_PROFILE_COLL;
    c.coll.func = "AllReduce";
    EXPECT_EQ(drv.Start(c), nullptr);
  }

  char name[64];
  std::snprintf(name, sizeof(name), "/ncclscope-comm-%016llx-rank1.json.gz", static_cast<unsigned long long>(kHash));
  nlohmann::json j = ReadJson(dir + name);
  EXPECT_EQ(j["schema"], "ncclscope.comm.v2");
  EXPECT_EQ(j["reason"], "finalize");
  EXPECT_EQ(j["comm_hash"], "0x0123456789abcdef");
  EXPECT_EQ(j["comm_name"], "replay");
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["nranks"], 4);
  EXPECT_EQ(j["nnodes"], 1);
  EXPECT_EQ(j["pid"], getpid());
  EXPECT_EQ(j["abi"], abi);
  EXPECT_EQ(j["finalized"], true);
  EXPECT_EQ(j["stalled"], false);

  const nlohmann::json* ar = FindOp(j, "coll", "AllReduce");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ((*ar)["count"], 2);
  EXPECT_EQ((*ar)["bytes"], 2 * 4194304);
  EXPECT_EQ((*ar)["last_seq"], 9);  // the stuck one was seen (seq 9), though not completed
  const nlohmann::json* ag = FindOp(j, "coll", "AllGather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ((*ag)["count"], 1);
  EXPECT_EQ((*ag)["bytes"], 4194304);
  EXPECT_EQ((*ag)["last_seq"], 3);
  const nlohmann::json* send = FindOp(j, "p2p", "Send");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ((*send)["count"], 2);
  EXPECT_EQ((*send)["bytes"], 8000);
  EXPECT_EQ((*send)["last_seq"], 2);
  const nlohmann::json* recv = FindOp(j, "p2p", "Recv");
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ((*recv)["last_seq"], 1);
  // Per (peer, direction), receives first: one Recv from 2, two Sends to 2, numbered from 1.
  EXPECT_EQ(j["p2p"], (nlohmann::json{{{"peer", 2}, {"func", "Recv"}, {"last_seq", 1}},
                                      {{"peer", 2}, {"func", "Send"}, {"last_seq", 2}}}))
      << j["p2p"].dump();
  ASSERT_EQ(j["recent"]["func"].size(), 6u);  // every completed one: fewer than NCCLSCOPE_DUMP_RECENT
  EXPECT_EQ(j["recent"]["func"][3], "Send");
  EXPECT_EQ(j["recent"]["peer"][3], 2);

  const auto& fr = j["flight_recorder"];
  EXPECT_EQ(fr["depth"], 2048);
  EXPECT_EQ(fr["overwritten"], 0);
  ASSERT_EQ(fr["completed"].size(), 6u);
  const auto& first = fr["completed"][0];
  EXPECT_EQ(first["func"], "AllReduce");
  EXPECT_EQ(first["seq"], 7);
  EXPECT_EQ(first["bytes"], 4194304);
  EXPECT_EQ(first["state"], "completed");
  EXPECT_EQ(first["timing_source"], "gpu");
  EXPECT_EQ(first["duration_ns"], 400000);  // earliest channel start to latest channel end
  EXPECT_EQ(first["algo"], "RING");
  EXPECT_EQ(first["proto"], "SIMPLE");
  EXPECT_NEAR(first["algbw_gbps"].get<double>(), 10.48576, 1e-9);
  EXPECT_EQ(fr["completed"][2]["func"], "AllGather");
  EXPECT_NEAR(fr["completed"][2]["algbw_gbps"].get<double>(), 20.97152, 1e-9);
  EXPECT_EQ(fr["completed"][3]["func"], "Send");
  EXPECT_EQ(fr["completed"][3]["peer"], 2);
  ASSERT_EQ(fr["in_flight"].size(), 1u);
  const auto& inflight = fr["in_flight"][0];
  EXPECT_EQ(inflight["func"], "AllReduce");
  EXPECT_EQ(inflight["seq"], 9);
  EXPECT_EQ(inflight["state"], "net_progress");
  EXPECT_GE(inflight["age_ns"].get<uint64_t>(), 0u);
  EXPECT_EQ(inflight["net_steps_total"], 4);  // 2 + 2 (the never-stopped ProxyOp)
  EXPECT_EQ(inflight["net_steps_done"], 2);
  EXPECT_EQ(inflight["proxy_ops_started"], 2);
  EXPECT_EQ(inflight["proxy_ops_done"], 1);

  // Bus bandwidth from the aggregates: rate(bus_bytes) / latency = nccl-tests busbw.
  bool saw_ar = false, saw_ag = false;
  for (const auto& a : j["aggregates"]) {
    if (a["func"] == "AllReduce" && a["algo"] == "RING") {
      saw_ar = true;
      EXPECT_EQ(a["count"], 2);
      EXPECT_EQ(a["latency_count"], 2);
      EXPECT_EQ(a["cpu_count"], 0);
      EXPECT_EQ(a["size_class"], 23);  // 4 MiB = 2^22 → class 23
      EXPECT_NEAR(a["bus_bytes"].get<double>() / a["latency_sum_ns"].get<double>(), 15.72864, 1e-6);
      EXPECT_EQ(a["latency_log2_buckets"]["18"], 2);  // 400 µs in [2^18, 2^19) ns
    }
    if (a["func"] == "AllGather") {
      saw_ag = true;
      EXPECT_NEAR(a["bus_bytes"].get<double>() / a["latency_sum_ns"].get<double>(), 15.72864, 1e-6);
    }
  }
  EXPECT_TRUE(saw_ar);
  EXPECT_TRUE(saw_ag);

  const auto& dropped = j["dropped"];
  EXPECT_EQ(dropped.value("unknown_state", 0), 1);
  EXPECT_EQ(dropped.value("foreign_parent", 0), 1);  // the PXN KernelCh
  if (sizeof(Descr::type) > 1) {
    EXPECT_EQ(dropped.value("unknown_type", 0), 1);
  }
  EXPECT_EQ(j["events"].value("KernelCh", 0), 2 * 2 + 2 + 3 + 1 + 1);  // per op channels + stuck + PXN
  std::filesystem::remove_all(dir);
}

TEST(ProfilerReplay, V5) { RunScenario<ncclscope_profiler_v5_t, ncclscope_profiler_descr_v5_t>("ncclProfiler_v5", "v5"); }
TEST(ProfilerReplay, V6) { RunScenario<ncclscope_profiler_v6_t, ncclscope_profiler_descr_v6_t>("ncclProfiler_v6", "v6"); }
TEST(ProfilerReplay, V7) { RunScenario<ncclscope_profiler_v7_t, ncclscope_profiler_descr_v7_t>("ncclProfiler_v7", "v7"); }
TEST(ProfilerReplay, V4) { RunScenario<ncclscope_profiler_v4_t, ncclscope_profiler_descr_v4_t>("ncclProfiler_v4", "v4"); }

// No NCCLSCOPE_DUMP_DIR: no file at all.
TEST(ProfilerReplay, NoDumpDirWritesNothing) {
  std::string dir = MakeDumpDir("none");
  unsetenv("NCCLSCOPE_DUMP_DIR");
  Library lib;
  auto* t = static_cast<const ncclscope_profiler_v5_t*>(dlsym(lib.handle, "ncclProfiler_v5"));
  ASSERT_NE(t, nullptr);
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(t->init(&ctx, 42, &mask, nullptr, 1, 1, 0, nullptr), NCCLSCOPE_SUCCESS);
  ASSERT_EQ(t->finalize(ctx), NCCLSCOPE_SUCCESS);
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// recordEventState(KernelChStop) takes a short path: without arguments it is harmless, and on a KernelCh handle
// already stopped (its operation complete) it is counted as a stale handle and leaves the GPU time alone.
TEST(ProfilerReplay, KernelChStopWithoutArgsOrAfterStop) {
  std::string dir = MakeDumpDir("kch-stop");
  Library lib;
  auto* t = static_cast<const ncclscope_profiler_v5_t*>(dlsym(lib.handle, "ncclProfiler_v5"));
  ASSERT_NE(t, nullptr);
  Driver<ncclscope_profiler_v5_t, ncclscope_profiler_descr_v5_t> drv{t};
  ASSERT_EQ(drv.Init(0x44, "kch", 1, 0), NCCLSCOPE_SUCCESS);
  ncclscope_profiler_descr_v5_t c{};
  c.type = NCCLSCOPE_PROFILE_COLL;
  c.coll.func = "AllReduce";
  c.coll.datatype = "ncclFloat32";
  c.coll.count = 1024;
  c.coll.nChannels = 1;
  void* coll = drv.Start(c);
  ASSERT_NE(coll, nullptr);
  drv.Stop(coll);
  ncclscope_profiler_descr_v5_t k{};
  k.type = NCCLSCOPE_PROFILE_KERNEL_CH;
  k.parentObj = coll;
  k.kernelCh.pTimer = 1000000;
  void* kh = drv.Start(k);
  ASSERT_NE(kh, nullptr);
  drv.Record(kh, kStateKernelChStop, nullptr);
  ncclscope_profiler_state_args_t a{};
  a.kernelCh.pTimer = 1250000;
  drv.Record(kh, kStateKernelChStop, &a);
  drv.Stop(kh);  // the last vote: the operation completes
  a.kernelCh.pTimer = 9000000;
  drv.Record(kh, kStateKernelChStop, &a);
  ASSERT_EQ(t->finalize(drv.ctx), NCCLSCOPE_SUCCESS);
  nlohmann::json j = ReadJson(dir + "/ncclscope-comm-0000000000000044-rank0.json.gz");
  EXPECT_EQ(j["dropped"].value("stale_handle", 0), 1) << j["dropped"].dump();
  ASSERT_EQ(j["flight_recorder"]["completed"].size(), 1u);
  EXPECT_EQ(j["flight_recorder"]["completed"][0]["timing_source"], "gpu");
  EXPECT_EQ(j["flight_recorder"]["completed"][0]["duration_ns"], 250000);
  std::filesystem::remove_all(dir);
}

// The activation mask override is honoured.
TEST(ProfilerReplay, MaskOverride) {
  MakeDumpDir("mask");
  unsetenv("NCCLSCOPE_DUMP_DIR");
  setenv("NCCLSCOPE_EVENT_MASK", "0x7e", 1);
  Library lib;
  auto* t = static_cast<const ncclscope_profiler_v6_t*>(dlsym(lib.handle, "ncclProfiler_v6"));
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(t->init(&ctx, 43, &mask, "m", 1, 2, 0, nullptr), NCCLSCOPE_SUCCESS);
  EXPECT_EQ(mask, 0x7e);
  ASSERT_EQ(t->finalize(ctx), NCCLSCOPE_SUCCESS);
  unsetenv("NCCLSCOPE_EVENT_MASK");
}

}  // namespace
