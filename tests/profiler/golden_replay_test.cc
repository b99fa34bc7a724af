// Replays golden traces of REAL NCCL (tests/data/golden: 2.28.9 at profiler v5 on an H100, 2.30.7 at v6 on an H200;
// recorded with NCCLSCOPE_RECORD_DIR)
// through the BUILT library's ncclProfiler_vN table, call by call in recorded order, and checks each
// communicator's finalize dump against figures computed here from the trace alone: operations, bytes and
// last sequence number per function, events per type, nothing dropped, GPU durations from the KernelCh
// timers, and what is left in flight (the abort scenario).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "ncclscope/abi/profiler.h"
#include "dump_reader.h"
#include "nlohmann/json.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const char* kTypeNames[] = {"Group",    "Coll",      "P2p",    "ProxyOp",      "ProxyStep", "ProxyCtrl",
                            "KernelCh", "NetPlugin", "GroupApi", "CollApi",    "P2pApi",    "KernelLaunch"};

std::string TypeName(uint64_t bit) { return bit && bit < (1u << 12) ? kTypeNames[__builtin_ctzll(bit)] : "?"; }

size_t TypeSize(const std::string& t) {
  if (t == "ncclInt8" || t == "ncclUint8" || t == "ncclFloat8e4m3" || t == "ncclFloat8e5m2") return 1;
  if (t == "ncclFloat16" || t == "ncclBfloat16") return 2;
  if (t == "ncclInt64" || t == "ncclUint64" || t == "ncclFloat64") return 8;
  return 4;
}

// What the trace says one communicator did, computed independently of the library.
struct Expected {
  uint64_t comm_id = 0;
  int rank = 0, nranks = 0;
  struct Func {
    uint64_t ops = 0, bytes = 0, last_seq = 0;
  };
  std::map<std::string, Func> coll;  // by function
  struct Coll {
    std::string func;
    uint64_t seq = 0, bytes = 0;
    int channels_started = 0, channels_ended = 0;
  };
  std::map<std::string, Coll> colls;  // by Coll handle
  std::map<std::string, uint64_t> p2p_ops;
  std::map<std::string, uint64_t> events;  // starts per type
  std::map<std::string, uint64_t> kernel_start, kernel_end;  // per Coll handle: min start / max end pTimer
  std::map<std::string, std::string> coll_key;  // Coll handle → "func#seq" (sequences count per function)
  std::set<std::string> in_flight;  // collectives with a channel that never ended (abort)
};

class GoldenReplay {
 public:
  explicit GoldenReplay(void* lib) : lib_(lib) {}

  // Replays every profiler call of `path`; returns the communicators' expectations by context id.
  std::map<std::string, Expected> Run(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    std::map<std::string, Expected> expected;
    std::map<std::string, std::string> ctx_of_handle, type_of_handle;
    std::string line;
    while (std::getline(in, line)) {
      json d = json::parse(line);
      const std::string call = d.value("call", "");
      if (call == "init") {
        Init(d, &expected);
      } else if (call == "startEvent") {
        const uint64_t type = std::stoull(d["type"].get<std::string>(), nullptr, 16);
        const std::string ctx = d["ctx"].is_string() ? d["ctx"].get<std::string>() : "";
        void* h = Start(d, type);
        const std::string id = d["handle"].is_string() ? d["handle"].get<std::string>() : "";
        if (id.empty()) continue;  // the recording library dropped it: nothing for NCCL to stop
        EXPECT_NE(h, nullptr) << "line " << d["i"] << ": the replay dropped an event the recording kept";
        handles_[id] = h;
        type_of_handle[id] = TypeName(type);
        if (!expected.count(ctx)) continue;
        Expected& e = expected[ctx];
        ++e.events[TypeName(type)];
        if (type == NCCLSCOPE_PROFILE_COLL) {
          const json& c = d["coll"];
          const std::string func = c["func"];
          const uint64_t per_rank = c["count"].get<uint64_t>() * TypeSize(c["datatype"]);
          const bool times_n = func == "AllGather" || func == "ReduceScatter" || func == "AlltoAll";
          e.colls[id] = {func, c["seqNumber"], times_n ? per_rank * e.nranks : per_rank};
          e.coll_key[id] = func + "#" + std::to_string(c["seqNumber"].get<uint64_t>());
        } else if (type == NCCLSCOPE_PROFILE_P2P) {
          e.p2p_ops[d["p2p"]["func"].get<std::string>()]++;
        } else if (type == NCCLSCOPE_PROFILE_KERNEL_CH) {
          const std::string parent = d["parent"];
          const uint64_t t = d["kernelCh"]["pTimer"];
          auto [it, added] = e.kernel_start.try_emplace(parent, t);
          if (!added) it->second = std::min(it->second, t);
          if (e.colls.count(parent)) e.colls[parent].channels_started++;
          kernel_parent_[id] = {ctx, parent};
        }
      } else if (call == "stopEvent") {
        Versioned<ncclscope_profiler_v5_t>()->stopEvent(Lookup(d["handle"]));
      } else if (call == "recordEventState") {
        const int state = d["state"];
        ncclscope_profiler_state_args_t a{};
        const bool has_args = d["args"].is_object();
        if (has_args) {
          for (const char* k : {"transSize", "pTimer", "appendedProxyOps"}) {
            if (d["args"].contains(k)) a.kernelCh.pTimer = d["args"][k].get<uint64_t>();
          }
        }
        Versioned<ncclscope_profiler_v5_t>()->recordEventState(
            Lookup(d["handle"]), static_cast<ncclscope_profiler_state_t>(state), has_args ? &a : nullptr);
        if (state == NCCLSCOPE_STATE_KERNEL_CH_STOP && has_args && kernel_parent_.count(d["handle"])) {
          auto [ctx, parent] = kernel_parent_[d["handle"]];
          uint64_t& end = expected[ctx].kernel_end[parent];
          end = std::max<uint64_t>(end, a.kernelCh.pTimer);
          if (expected[ctx].colls.count(parent)) expected[ctx].colls[parent].channels_ended++;
        }
      } else if (call == "finalize") {
        Versioned<ncclscope_profiler_v5_t>()->finalize(contexts_[d["ctx"]]);
      }
    }
    for (auto& [ctx, e] : expected) {
      for (const auto& [id, c] : e.colls) {
        auto& f = e.coll[c.func];
        f.last_seq = std::max(f.last_seq, c.seq);  // the last one issued, in flight or not
        if (c.channels_started == 0 || c.channels_ended < c.channels_started) {
          e.in_flight.insert(id);
          continue;
        }
        f.ops++;  // counts and bytes are of completed operations
        f.bytes += c.bytes;
      }
    }
    return expected;
  }

 private:
  void Init(const json& d, std::map<std::string, Expected>* expected) {
    v_ = std::stoi(d["abi"].get<std::string>().substr(1));
    ASSERT_TRUE(v_ == 5 || v_ == 6) << "the golden traces are of profiler v5 and v6, not v" << v_;
    auto* t = Versioned<ncclscope_profiler_v5_t>();  // init is the same slot in v5 and v6
    void* ctx = nullptr;
    int mask = std::stoi(d["maskIn"].get<std::string>(), nullptr, 16);
    const uint64_t comm_id = std::stoull(d["commId"].get<std::string>(), nullptr, 16);
    names_.push_back(d["commName"].is_string() ? d["commName"].get<std::string>() : "");
    ASSERT_EQ(t->init(&ctx, comm_id, &mask, d["commName"].is_string() ? names_.back().c_str() : nullptr,
                      d["nNodes"], d["nranks"], d["rank"], nullptr),
              NCCLSCOPE_SUCCESS);
    contexts_[d["ctx"]] = ctx;
    Expected& e = (*expected)[d["ctx"]];
    e.comm_id = comm_id;
    e.rank = d["rank"];
    e.nranks = d["nranks"];
  }

  void* Lookup(const json& id) {
    if (!id.is_string()) return nullptr;
    const std::string s = id;
    if (s[0] == '?') return reinterpret_cast<void*>(0xdead0000);  // another process's pointer (PXN)
    auto it = handles_.find(s);
    return it != handles_.end() ? it->second : nullptr;
  }

  const char* Keep(const json& s) {
    if (!s.is_string()) return nullptr;
    strings_.push_back(s);
    return strings_.back().c_str();
  }

  // Every slot but startEvent has the same type in v5 and v6, so those are called through the v5 table's type.
  template <typename T>
  const T* Versioned() {
    return static_cast<const T*>(dlsym(lib_, ("ncclProfiler_v" + std::to_string(v_)).c_str()));
  }

  void* Start(const json& d, uint64_t type) {
    void* h = nullptr;
    if (v_ == 5) {
      auto e = Describe<ncclscope_profiler_descr_v5_t>(d, type);
      EXPECT_EQ(Versioned<ncclscope_profiler_v5_t>()->startEvent(contexts_[d["ctx"]], &h, &e), NCCLSCOPE_SUCCESS);
    } else {
      auto e = Describe<ncclscope_profiler_descr_v6_t>(d, type);
      EXPECT_EQ(Versioned<ncclscope_profiler_v6_t>()->startEvent(contexts_[d["ctx"]], &h, &e), NCCLSCOPE_SUCCESS);
    }
    return h;
  }

  // The arms the recording keeps have the same names in v5 and v6 (v6 only adds the copy-engine ones).
  template <typename Descr>
  Descr Describe(const json& d, uint64_t type) {
    Descr e{};
    e.type = type;
    e.parentObj = Lookup(d["parent"]);
    e.rank = d["rank"];
    if (d.contains("coll")) {
      const json& c = d["coll"];
      e.coll.seqNumber = c["seqNumber"];
      e.coll.func = Keep(c["func"]);
      e.coll.count = c["count"];
      e.coll.root = c["root"];
      e.coll.datatype = Keep(c["datatype"]);
      e.coll.nChannels = c["nChannels"];
      e.coll.nWarps = c["nWarps"];
      e.coll.algo = Keep(c["algo"]);
      e.coll.proto = Keep(c["proto"]);
      e.coll.parentGroup = Lookup(c["parentGroup"]);
    } else if (d.contains("p2p")) {
      const json& p = d["p2p"];
      e.p2p.func = Keep(p["func"]);
      e.p2p.datatype = Keep(p["datatype"]);
      e.p2p.count = p["count"];
      e.p2p.peer = p["peer"];
      e.p2p.nChannels = p["nChannels"];
      e.p2p.parentGroup = Lookup(p["parentGroup"]);
    } else if (d.contains("proxyOp")) {
      const json& p = d["proxyOp"];
      e.proxyOp = {p["pid"], static_cast<uint8_t>(p["channelId"].get<int>()), p["peer"], p["nSteps"],
                   p["chunkSize"], p["isSend"]};
      // The recording process's pid: ours now, so the event is local as it was there.
      if (e.proxyOp.pid == recorded_pid_ || recorded_pid_ == 0) e.proxyOp.pid = getpid();
    } else if (d.contains("proxyStep")) {
      e.proxyStep.step = d["proxyStep"]["step"];
    } else if (d.contains("kernelCh")) {
      e.kernelCh.channelId = static_cast<uint8_t>(d["kernelCh"]["channelId"].get<int>());
      e.kernelCh.pTimer = d["kernelCh"]["pTimer"];
    } else if (d.contains("netPlugin")) {
      e.netPlugin.id = d["netPlugin"]["id"];
    } else if (d.contains("groupApi")) {
      e.groupApi.graphCaptured = d["groupApi"]["graphCaptured"];
      e.groupApi.groupDepth = d["groupApi"]["groupDepth"];
    } else if (d.contains("collApi")) {
      const json& c = d["collApi"];
      e.collApi.func = Keep(c["func"]);
      e.collApi.count = c["count"];
      e.collApi.datatype = Keep(c["datatype"]);
      e.collApi.root = c["root"];
      e.collApi.graphCaptured = c["graphCaptured"];
    } else if (d.contains("p2pApi")) {
      const json& c = d["p2pApi"];
      e.p2pApi.func = Keep(c["func"]);
      e.p2pApi.count = c["count"];
      e.p2pApi.datatype = Keep(c["datatype"]);
      e.p2pApi.graphCaptured = c["graphCaptured"];
    }
    return e;
  }

 public:
  int recorded_pid_ = 0;

 private:
  void* lib_;
  int v_ = 5;
  std::map<std::string, void*> contexts_, handles_;
  std::map<std::string, std::pair<std::string, std::string>> kernel_parent_;
  std::deque<std::string> strings_, names_;
};

struct Library {
  void* handle = dlopen(NCCLSCOPE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ~Library() {
    if (handle != nullptr) dlclose(handle);
  }
};

int RecordedPid(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  return json::parse(first).value("pid", 0);
}

class GoldenTrace : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTrace, ReplayMatchesTheTrace) {
  const std::string dir = std::string(NCCLSCOPE_SOURCE_DIR) + "/tests/data/golden/" + GetParam();
  for (const char* rank : {"rank0.jsonl", "rank1.jsonl"}) {
    SCOPED_TRACE(GetParam() + "/" + rank);
    const std::string dump_dir = fs::temp_directory_path() / ("ncclscope-golden-" + std::to_string(getpid()));
    fs::remove_all(dump_dir);
    setenv("NCCLSCOPE_DUMP_DIR", dump_dir.c_str(), 1);
    setenv("NCCLSCOPE_EVENT_MASK", "0xFFF", 1);  // the recording's mask: every event type is tracked
    setenv("NCCLSCOPE_TRACE", "1", 1);
    std::map<std::string, Expected> expected;
    {
      Library lib;
      ASSERT_NE(lib.handle, nullptr) << dlerror();
      GoldenReplay replay(lib.handle);
      replay.recorded_pid_ = RecordedPid(dir + "/" + rank);
      expected = replay.Run(dir + "/" + rank);
    }
    unsetenv("NCCLSCOPE_EVENT_MASK");
    unsetenv("NCCLSCOPE_TRACE");
    ASSERT_FALSE(expected.empty());
    for (const auto& [ctx, e] : expected) {
      char name[96];
      std::snprintf(name, sizeof(name), "/ncclscope-comm-%016llx-rank%d.json.gz",
                    static_cast<unsigned long long>(e.comm_id), e.rank);
      const json j = ncclscope::testing::ReadDump(dump_dir + name);
      ASSERT_TRUE(j.is_object()) << "no readable dump " << dump_dir + name;
      SCOPED_TRACE(std::string("communicator ") + name + ": ops " + j["ops"].dump() + " events " + j["events"].dump() + " in flight " + j["flight_recorder"]["in_flight"].dump());
      EXPECT_TRUE(j["dropped"].empty()) << j["dropped"];
      for (const auto& [type, n] : e.events) EXPECT_EQ(j["events"].value(type, 0), n) << type;
      for (const auto& [func, f] : e.coll) {
        const json* op = nullptr;
        for (const auto& o : j["ops"]) {
          if (o["kind"] == "coll" && o["func"] == func) op = &o;
        }
        ASSERT_NE(op, nullptr) << func;
        EXPECT_EQ((*op)["count"], f.ops) << func;
        EXPECT_EQ((*op)["bytes"], f.bytes) << func;
        EXPECT_EQ((*op)["last_seq"], f.last_seq) << func;
      }
      uint64_t p2p = 0;
      for (const auto& [func, n] : e.p2p_ops) p2p += n;
      uint64_t p2p_in_dump = 0;
      for (const auto& o : j["ops"]) {
        if (o["kind"] == "p2p") p2p_in_dump += o["count"].get<uint64_t>();
      }
      EXPECT_EQ(p2p_in_dump, p2p);
      // Every collective whose kernel ended is in the flight recorder with the GPU duration of its channels.
      size_t timed = 0;
      for (const auto& r : j["flight_recorder"]["completed"]) {
        if (r["kind"] != "coll") continue;
        const std::string key = r["func"].get<std::string>() + "#" + std::to_string(r["seq"].get<uint64_t>());
        for (const auto& [handle, coll] : e.coll_key) {
          if (coll != key || e.in_flight.count(handle)) continue;
          EXPECT_EQ(r["timing_source"], "gpu");
          EXPECT_EQ(r["duration_ns"].get<uint64_t>(), e.kernel_end.at(handle) - e.kernel_start.at(handle)) << key;
          ++timed;
          break;
        }
      }
      EXPECT_EQ(timed, e.coll_key.size() - e.in_flight.size());
      // Abort: a collective whose kernel never ended is still in flight in the final dump.
      EXPECT_EQ(j["in_flight_count"].get<uint64_t>(), e.in_flight.size());
      // NCCLSCOPE_TRACE: the same operations as a Chrome trace, GPU-timed ones spanning their kernel.
      std::snprintf(name, sizeof(name), "/ncclscope-trace-%016llx-rank%d.json",
                    static_cast<unsigned long long>(e.comm_id), e.rank);
      std::ifstream trace_in(dump_dir + name);
      ASSERT_TRUE(trace_in.good()) << "no trace " << dump_dir + name;
      const json trace = json::parse(trace_in);
      size_t spans = 0, gpu_spans = 0;
      for (const auto& ev : trace["traceEvents"]) {
        if (ev["ph"] != "X") continue;
        ++spans;
        if (ev["args"].value("timing", "") == "gpu") {
          ++gpu_spans;
          EXPECT_DOUBLE_EQ(ev["dur"].get<double>(), ev["args"]["duration_ns"].get<double>() / 1e3);
        }
      }
      EXPECT_EQ(spans, j["flight_recorder"]["completed"].size() + j["flight_recorder"]["in_flight"].size());
      size_t gpu_timed = 0;
      for (const auto& r : j["flight_recorder"]["completed"]) gpu_timed += r["timing_source"] == "gpu";
      EXPECT_EQ(gpu_spans, gpu_timed);
    }
    fs::remove_all(dump_dir);
  }
}

INSTANTIATE_TEST_SUITE_P(Nccl2289, GoldenTrace,
                         ::testing::Values("nccl-2.28.9/allreduce", "nccl-2.28.9/p2p_group", "nccl-2.28.9/graph",
                                           "nccl-2.28.9/split", "nccl-2.28.9/abort"));
INSTANTIATE_TEST_SUITE_P(Nccl2307, GoldenTrace,
                         ::testing::Values("nccl-2.30.7/allreduce", "nccl-2.30.7/p2p_group", "nccl-2.30.7/graph",
                                           "nccl-2.30.7/split", "nccl-2.30.7/abort"));

}  // namespace
