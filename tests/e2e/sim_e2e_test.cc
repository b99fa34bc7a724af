// End-to-end tests: ncclscope-sim runs rank processes that load the built plugin the way NCCL does, move real
// bytes through its TCP transport (checked byte for byte by the sim) and emit NCCL's profiler events. The
// profiler's own view (its per-communicator dump) must agree with what the sim did; a recording fixture
// profiler checks the sim's event tree; fault runs must end as described.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "dump_reader.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct SimRun {
  int rc = -1;
  std::string out, err;
  json j;  // parsed stdout when --json
};

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string PluginDir() { return fs::path(NCCLSCOPE_PLUGIN_PATH).parent_path().string(); }

using ncclscope::testing::ScopedTempDir;

// Runs the sim with `args` and extra environment; the plugin dir is on LD_LIBRARY_PATH as for NCCL.
SimRun RunSim(const std::string& args, const std::string& env, const std::string& dir) {
  SimRun r;
  std::string out = dir + "/sim.out", err = dir + "/sim.err";
  std::string cmd = "cd '" + dir + "' && env LD_LIBRARY_PATH='" + PluginDir() + "' " + env + " '" SIM_BINARY "' " +
                    args + " > '" + out + "' 2> '" + err + "'";
  int st = std::system(cmd.c_str());
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  if (args.find("--json") != std::string::npos && !r.out.empty()) r.j = json::parse(r.out, nullptr, false);
  return r;
}

bool PluginHasProfiler() {
  void* h = dlopen(NCCLSCOPE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  bool has = dlsym(h, "ncclProfiler_v5") != nullptr && dlsym(h, "ncclProfiler_v6") != nullptr;
  dlclose(h);
  return has;
}

// What the sim did, per communicator and NCCL function: ops and nccl-tests bytes.
struct Expect {
  long count = 0;
  unsigned long long bytes = 0;
};
std::map<int, std::map<std::string, Expect>> Expected(const json& j, int per_row_ops) {
  std::map<int, std::map<std::string, Expect>> e;
  for (const auto& row : j["results"]) {
    int comm = row["comm"];
    std::string func = row["func"];
    unsigned long long bytes = row["bytes"];
    if (func == "SendRecv") {
      for (const char* f : {"Send", "Recv"}) {
        e[comm][f].count += per_row_ops;
        e[comm][f].bytes += bytes * per_row_ops;
      }
    } else {
      e[comm][func].count += per_row_ops;
      e[comm][func].bytes += bytes * per_row_ops;
    }
  }
  return e;
}

constexpr const char* kAllOps = "--ops allreduce,allgather,reducescatter,broadcast,sendrecv";

TEST(SimE2E, MissingNetPluginIsReportedClearly) {
  ScopedTempDir d;
  SimRun r = RunSim("--ranks 2 --net-plugin doesnotexist --sizes 8:8 --iters 1", "", d.path());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("could not load a net plugin"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libnccl-net-doesnotexist.so"), std::string::npos) << r.err;
}

TEST(SimE2E, ProfilerNameRulesAndNetLibFallback) {
  ScopedTempDir d;
  SimRun r = RunSim("--ranks 2 --profiler-plugin doesnotexist --sizes 8:8 --iters 1 --json",
                    "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  // NCCL's order: NAME, then libnccl-profiler-NAME.so, then the net library.
  EXPECT_NE(r.err.find("Could not find: doesnotexist"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Could not find: libnccl-profiler-doesnotexist.so"), std::string::npos) << r.err;
  if (PluginHasProfiler()) {
    EXPECT_NE(r.err.find("(net plugin fallback)"), std::string::npos) << r.err;
    EXPECT_NE(r.j["profiler"].get<std::string>().find("ncclProfiler_v6"), std::string::npos);
  } else {
    EXPECT_EQ(r.j["profiler"], "none");
  }
}

// The recording fixture checks the sim's event tree: parents, threads, states, sequence numbers.
struct RecorderCase {
  const char* abi;
  const char* profiler;  // fixture path
  int version;
  int ranks, comms;
  int graph_replay;
  const char* mask;
};

class SimRecorder : public ::testing::TestWithParam<RecorderCase> {};

TEST_P(SimRecorder, EventTreeMatchesNccl) {
  const RecorderCase& c = GetParam();
  ScopedTempDir d;
  const int iters = 2, warmup = 1;
  std::string args = std::string("--json --ranks ") + std::to_string(c.ranks) + " --comms " + std::to_string(c.comms) +
                     " " + kAllOps + " --sizes 8:64K --factor 16 --iters 2 --warmup 1 --abi " + c.abi +
                     " --net-plugin " NCCLSCOPE_PLUGIN_PATH " --profiler-plugin " + c.profiler +
                     " --graph-replay " + std::to_string(c.graph_replay);
  SimRun r = RunSim(args, std::string("SIM_RECORD_DIR=") + d.path() + " SIM_RECORD_MASK=" + c.mask, d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(r.j.is_object()) << r.out;
  EXPECT_EQ(r.j["wrong"], 0);
  const int launches = 1 + c.graph_replay;
  auto expect = Expected(r.j, (iters + warmup) * launches);
  int files = 0;
  for (int comm = 0; comm < c.comms; ++comm) {
    std::string hash = r.j["comm_hashes"][comm];
    for (int rank = 0; rank < c.ranks; ++rank) {
      fs::path p = fs::path(d.path()) / ("rec-" + hash.substr(2) + "-rank" + std::to_string(rank) + ".json");
      ASSERT_TRUE(fs::exists(p)) << p;
      ++files;
      json rec = json::parse(ReadFile(p));
      EXPECT_EQ(rec["version"], c.version);
      EXPECT_EQ(rec["nranks"], c.ranks);
      EXPECT_TRUE(rec["errors"].empty()) << p << ": " << rec["errors"].dump(1);
      for (const auto& [func, e] : expect[comm]) {
        ASSERT_TRUE(rec["ops"].contains(func)) << func << " in " << p;
        EXPECT_EQ(rec["ops"][func]["count"], e.count) << func;
        if (func != "Send" && func != "Recv") {
          // Replays repeat the captured seqNumber unless KernelCh is on.
          bool kernel_ch = strtol(c.mask, nullptr, 0) & 0x40;
          long distinct = (c.graph_replay && !kernel_ch) ? e.count / launches : e.count;
          EXPECT_EQ(rec["ops"][func]["last_seq"], distinct - 1) << func;
        }
      }
      const json& counts = rec["counts"];
      EXPECT_EQ(counts.contains("GroupApi"), c.version >= 5);
      if (strtol(c.mask, nullptr, 0) & 0x10) {
        EXPECT_GT(counts.value("ProxyStep", 0), 0);
        EXPECT_GT(counts.value("ProxyOp", 0), 0);
      }
    }
  }
  EXPECT_EQ(files, c.ranks * c.comms);
}

INSTANTIATE_TEST_SUITE_P(
    Abis, SimRecorder,
    ::testing::Values(RecorderCase{"2.30", SIM_RECORDER_PATH, 6, 2, 1, 0, "0xFFF"},
                      RecorderCase{"2.28", SIM_RECORDER_PATH, 5, 2, 2, 0, "0xFFF"},
                      RecorderCase{"2.30", SIM_RECORDER_V4_PATH, 4, 2, 1, 0, "0xFF"},
                      RecorderCase{"2.30", SIM_RECORDER_PATH, 6, 8, 2, 0, "0xFFF"},
                      RecorderCase{"2.30", SIM_RECORDER_PATH, 6, 2, 1, 2, "0x6"},
                      RecorderCase{"2.28", SIM_RECORDER_PATH, 5, 2, 1, 2, "0xFFF"}),
    [](const ::testing::TestParamInfo<RecorderCase>& i) {
      const RecorderCase& c = i.param;
      return std::string("v") + std::to_string(c.version) + "_" + std::to_string(c.ranks) + "ranks_" +
             std::to_string(c.comms) + "comms_replay" + std::to_string(c.graph_replay) + "_mask" + (c.mask + 2);
    });

// ncclscope as both plugins: the profiler's dump of every rank agrees with what the sim did.
struct ScopeCase {
  const char* abi;
  const char* abi_name;
  int ranks, comms;
  const char* sizes;
};

class SimNcclscope : public ::testing::TestWithParam<ScopeCase> {};

TEST_P(SimNcclscope, ProfilerSnapshotAgreesWithSim) {
  const ScopeCase& c = GetParam();
  ScopedTempDir d;
  const int iters = 2, warmup = 1;
  std::string args = std::string("--json --ranks ") + std::to_string(c.ranks) + " --comms " + std::to_string(c.comms) +
                     " " + kAllOps + " --sizes " + c.sizes + " --factor 8 --iters 2 --warmup 1 --abi " + c.abi;
  SimRun r = RunSim(args, std::string("NCCLSCOPE_DUMP_DIR=") + d.path(), d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(r.j.is_object()) << r.out;
  EXPECT_EQ(r.j["wrong"], 0) << "the sim found wrong bytes";
  EXPECT_NE(r.j["net"].get<std::string>().find(std::string("ncclNetPlugin_v") + (c.abi[2] == '3' ? "12" : "11")),
            std::string::npos);
  if (!PluginHasProfiler()) GTEST_SKIP() << "the built plugin exports no ncclProfiler_v5/v6 yet; data path checked only";
  auto expect = Expected(r.j, iters + warmup);
  for (int comm = 0; comm < c.comms; ++comm) {
    std::string hash = r.j["comm_hashes"][comm];
    for (int rank = 0; rank < c.ranks; ++rank) {
      fs::path p = fs::path(d.path()) / ("ncclscope-comm-" + hash.substr(2) + "-rank" + std::to_string(rank) + ".json.gz");
      ASSERT_TRUE(fs::exists(p)) << p;
      json dump = ncclscope::testing::ReadDump(p.string());
      ASSERT_TRUE(dump.is_object()) << p;
      EXPECT_EQ(dump["schema"], "ncclscope.comm.v2");
      EXPECT_EQ(dump["reason"], "finalize");
      EXPECT_EQ(dump["rank"], rank);
      EXPECT_EQ(dump["nranks"], c.ranks);
      EXPECT_EQ(dump["abi"], c.abi_name);
      EXPECT_EQ(dump["finalized"], true);
      EXPECT_EQ(dump["stalled"], false);
      std::string dh = dump["comm_hash"];
      EXPECT_EQ(strtoull(dh.c_str(), nullptr, 16), strtoull(hash.c_str(), nullptr, 16));
      std::map<std::string, json> ops;
      for (const auto& op : dump["ops"]) ops[op["func"]] = op;
      for (const auto& [func, e] : expect[comm]) {
        ASSERT_TRUE(ops.count(func)) << func << " missing in " << p;
        EXPECT_EQ(ops[func]["kind"], (func == "Send" || func == "Recv") ? "p2p" : "coll") << func;
        EXPECT_EQ(ops[func]["count"], e.count) << func << " in " << p;
        EXPECT_EQ(ops[func]["bytes"], e.bytes) << func << " in " << p;
        if (func != "Send" && func != "Recv") {
          EXPECT_EQ(ops[func]["last_seq"], e.count - 1) << func;
        } else {
          // p2p seqs count from 1 per (peer, direction): their last ones add up to the function's count.
          long sum = 0;
          for (const auto& pp : dump["p2p"]) {
            if (pp["func"] == func) sum += pp["last_seq"].get<long>();
          }
          EXPECT_EQ(sum, e.count) << func << " in " << p << ": " << dump["p2p"].dump();
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Abis, SimNcclscope,
                         ::testing::Values(ScopeCase{"2.30", "v6", 2, 2, "8:4M"}, ScopeCase{"2.28", "v5", 2, 1, "8:4M"},
                                           ScopeCase{"2.30", "v6", 8, 2, "8:2M"}, ScopeCase{"2.28", "v5", 8, 1, "8:1M"}),
                         [](const ::testing::TestParamInfo<ScopeCase>& i) {
                           const ScopeCase& c = i.param;
                           return std::string(c.abi_name) + "_" + std::to_string(c.ranks) + "ranks_" +
                                  std::to_string(c.comms) + "comms";
                         });

TEST(SimFaults, StragglerSlowsEveryCollective) {
  ScopedTempDir d;
  SimRun r = RunSim("--json --ranks 2 --ops allreduce --sizes 64K:64K --iters 3 --straggle 1:40", "", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.j["wrong"], 0);
  // Rank 0 waits in each ring step for the late rank: the job's time per collective includes the delay.
  EXPECT_GE(r.j["results"][0]["time_us"].get<double>(), 35000.0) << r.out;
}

TEST(SimFaults, HangEndsByTimeoutAndStallWatchFires) {
  ScopedTempDir d;
  SimRun r = RunSim("--ranks 4 --ops allreduce --sizes 64K:64K --iters 10 --hang 2@3 --timeout 6 --expect-hang",
                    std::string("NCCLSCOPE_STALL_TIMEOUT_S=1 NCCLSCOPE_DUMP_DIR=") + d.path(), d.path());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("rank 2: --hang: stops issuing at seq 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("TIMEOUT (job hung)"), std::string::npos) << r.err;
  // Without --expect-hang the same run fails.
  ScopedTempDir d2;
  SimRun r2 = RunSim("--ranks 2 --ops allreduce --sizes 8:8 --iters 5 --hang 1@2 --timeout 2", "", d2.path());
  EXPECT_EQ(r2.rc, 4) << r2.err;
  if (!PluginHasProfiler()) GTEST_SKIP() << "no ncclProfiler_v* in the plugin yet: stall watch not checked";
  int stalled = 0;
  // Stall dumps are in the host's folder, finalize dumps at the top.
  for (const auto& e : fs::recursive_directory_iterator(d.path())) {
    if (e.path().filename().string().rfind("ncclscope-comm-", 0) != 0) continue;
    json dump = ncclscope::testing::ReadDump(e.path().string());
    if (dump.is_object() && dump.value("stalled", false)) ++stalled;
  }
  EXPECT_GE(stalled, 1) << "no dump with \"stalled\":true in " << d.path();
}

// A pause the job comes through (one, before op 40 of 77): the ranks waiting on the paused one dump on their stall
// and, once they go on, again with reason "recovered", the stalled operation no longer in flight (the stall dump
// stays, and read alone it looks like a hang). Rank 0 straggles 60 ms per op so that the job outlasts the stall
// watch's next tick after the pause (a job that finalizes first leaves its finalize dumps instead).
TEST(SimFaults, StallThatEndsWritesARecoveredDump) {
  if (!PluginHasProfiler()) GTEST_SKIP() << "no ncclProfiler_v* in the plugin: no stall watch";
  ScopedTempDir d;
  SimRun r = RunSim("--ranks 3 --ops allreduce --sizes 64K:64K --iters 75 --pause 1:4/40 --straggle 0:60",
                    std::string("NCCLSCOPE_STALL_TIMEOUT_S=1 NCCLSCOPE_DUMP_DIR=") + d.path(), d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("went on: the stall reported in AllReduce seq"), std::string::npos) << r.err;
  int pairs = 0;
  for (int rank : {0, 2}) {
    std::string stall_path, recovered_path;
    for (const auto& e : fs::recursive_directory_iterator(d.path())) {
      const std::string name = e.path().filename().string();
      const std::string tag = "-rank" + std::to_string(rank);
      if (name.find(tag + "-stall.json") != std::string::npos) stall_path = e.path().string();
      if (name.find(tag + "-recovered.json") != std::string::npos) recovered_path = e.path().string();
    }
    ASSERT_FALSE(stall_path.empty()) << "rank " << rank << " wrote no stall dump in " << d.path();
    ASSERT_FALSE(recovered_path.empty()) << "rank " << rank << " wrote no recovered dump in " << d.path();
    json stall = ncclscope::testing::ReadDump(stall_path), recovered = ncclscope::testing::ReadDump(recovered_path);
    ASSERT_TRUE(stall.is_object() && recovered.is_object());
    EXPECT_EQ(recovered["reason"], "recovered");
    EXPECT_EQ(recovered["stalled"], false);
    EXPECT_GT(recovered["snapshot_monotonic_ns"].get<uint64_t>(), stall["snapshot_monotonic_ns"].get<uint64_t>());
    ASSERT_FALSE(stall["in_flight"].empty()) << stall.dump();
    const json& op = stall["in_flight"][0];
    for (const json& o : recovered["in_flight"]) {
      EXPECT_FALSE(o["func"] == op["func"] && o["seq"] == op["seq"]) << "still in flight: " << o.dump();
    }
    ++pairs;
  }
  EXPECT_EQ(pairs, 2);
}

TEST(SimFaults, KillIsReportedWithTheDeadPeer) {
  ScopedTempDir d;
  SimRun r = RunSim("--ranks 4 --ops allreduce --sizes 64K:64K --iters 10 --kill 1@3 --timeout 60", "", d.path());
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_NE(r.err.find("rank 1: killed by signal 9"), std::string::npos) << r.err;
  // The survivors' net plugin reports the dead peer through NCCL's logger, and the sim ends them.
  EXPECT_NE(r.err.find("NCCL WARN"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("peer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 0: AllReduce failed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("TIMEOUT"), std::string::npos) << r.err;
  // Survivors end through the error path, never by a crash of their own (nothing may crash the host job).
  size_t pos = 0;
  int by_signal = 0;
  while ((pos = r.err.find(": killed by signal", pos)) != std::string::npos) ++by_signal, ++pos;
  EXPECT_EQ(by_signal, 1) << r.err;
}

TEST(SimOverhead, ProfilerOnOffAtOneMiB) {
  ScopedTempDir d;
  SimRun r = RunSim("--json --ranks 2 --ops allreduce --sizes 1M:1M --iters 20 --warmup 5 --compare-profiler 5",
                    std::string("NCCLSCOPE_DUMP_DIR=") + d.path(), d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  const json& row = r.j["results"][0];
  ASSERT_TRUE(row.contains("profiler_overhead_pct")) << r.out;
  double pct = row["profiler_overhead_pct"];
  printf("profiler %s, mask 0x%x: 1 MiB AllReduce median on %.1f us, off %.1f us, diff %+.2f %%\n",
         r.j["profiler"].get<std::string>().c_str(), r.j["activation_mask"].get<int>(),
         row["time_on_median_us"].get<double>(), row["time_off_median_us"].get<double>(), pct);
  // A figure, not a timed assertion (2 shared cores make single runs noisy): the comparison must have run.
  EXPECT_GT(row["time_on_median_us"].get<double>(), 0.0);
  EXPECT_GT(row["time_off_median_us"].get<double>(), 0.0);
}

}  // namespace

namespace {

// Older NCCL releases bind older net tables (2.19: v8, 2.24: v9, 2.26: v10, 2.28: v11): the same job through each.
class SimNetVersions : public ::testing::TestWithParam<int> {};

TEST_P(SimNetVersions, DataPathThroughOlderNetTables) {
  ScopedTempDir d;
  int v = GetParam();
  SimRun r = RunSim(std::string("--json --ranks 2 --comms 2 ") + kAllOps + " --sizes 8:2M --factor 32 --iters 2 --warmup 0" +
                        " --net-max-version " + std::to_string(v),
                    std::string("NCCLSCOPE_DUMP_DIR=") + d.path(), d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.j["wrong"], 0);
  EXPECT_EQ(r.j["net"], "ncclscope (ncclNetPlugin_v" + std::to_string(v) + ")");
  if (!PluginHasProfiler()) GTEST_SKIP() << "no ncclProfiler_v* in the plugin yet";
  int dumps = 0;
  for (const auto& e : fs::directory_iterator(d.path())) dumps += e.path().filename().string().rfind("ncclscope-comm-", 0) == 0;
  EXPECT_EQ(dumps, 4);
}

INSTANTIATE_TEST_SUITE_P(Versions, SimNetVersions, ::testing::Values(8, 9, 10, 11),
                         [](const ::testing::TestParamInfo<int>& i) { return "v" + std::to_string(i.param); });

// A third-party net plugin may leave NULL what NCCL treats as optional (aws-ofi-nccl's v11 and v12 tables
// do): the emulated job runs through such a table as NCCL would, instead of dying on a NULL call.
class SimOptionalNetEntries : public ::testing::TestWithParam<int> {};

TEST_P(SimOptionalNetEntries, NullOptionalEntriesAreSkippedAsNcclSkipsThem) {
  ScopedTempDir d;
  const int v = GetParam();
  SimRun r = RunSim(std::string("--json --ranks 2 --comms 1 --sizes 8:1M --factor 32 --iters 2 --warmup 0") +
                        " --net-plugin " + SIM_OPTIONAL_NULL_NET_PATH + " --net-max-version " + std::to_string(v),
                    std::string("NCCLSCOPE_DUMP_DIR=") + d.path(), d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.j["wrong"], 0);
  EXPECT_EQ(r.j["net"], "optional-null (ncclNetPlugin_v" + std::to_string(v) + ")");
}

INSTANTIATE_TEST_SUITE_P(Versions, SimOptionalNetEntries, ::testing::Values(11, 12),
                         [](const ::testing::TestParamInfo<int>& i) { return "v" + std::to_string(i.param); });

}  // namespace
