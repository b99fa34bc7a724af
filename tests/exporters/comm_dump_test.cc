// The v2 communicator dump (docs/dump-format.md) written from a constructed snapshot: two gzip members, the
// summary alone readable and complete, the flight recorder in member 2, where each reason puts its file,
// the stall cap, the net errors, and the size against an uncompressed v1-style document.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/clock.h"
#include "common/host.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "core/net_errors.h"
#include "dump_reader.h"
#include "exporters/dump/comm_dump.h"
#include "exporters/dump/comm_dump_json.h"
#include "host_nics/nic_deltas.h"
#include "temp_dir.h"

namespace ncclscope {
namespace {

using nlohmann::json;
using testing::InflateFirstMember;
using testing::InflateMembers;
using testing::ReadBinaryFile;
using testing::ReadDump;
using testing::ScopedEnv;
using testing::ScopedTempDir;

// Identity() is computed at its first call, after this (nothing in the test binary asks earlier).
const bool g_rank_env = (setenv("RANK", "5", 1), setenv("LOCAL_RANK", "1", 1), true);

constexpr uint64_t kHash = 0xd00dfeed12345678ull;

// `completed` records with arrivals 1..completed (every third a Send to peer 2), two in flight.
CommSnapshot MakeSnapshot(int completed) {
  CommSnapshot s;
  s.comm_hash = kHash;
  s.comm_name = "tp";
  s.has_name = true;
  s.rank = 1;
  s.nranks = 4;
  s.nnodes = 1;
  s.pid = getpid();
  s.abi = "v6";
  s.snapshot_monotonic_ns = MonotonicNs();
  s.fr_depth = 2048;
  s.fr_overwritten = 17;
  s.arrivals = completed + 2;
  s.ops.push_back({OpKind::kColl, Func::kAllReduce, 60, 6000, 60});
  s.p2p_peers.push_back({2, true, 7});
  s.p2p_peers.push_back({0, false, 5});
  const uint64_t base = s.snapshot_monotonic_ns - 10'000'000'000ull;
  for (int i = 0; i < completed; ++i) {
    OpRecord r;
    r.arrival = i + 1;
    r.seq = i;
    const bool p2p = i % 3 == 2;
    r.kind = p2p ? OpKind::kP2p : OpKind::kColl;
    r.func = p2p ? Func::kSend : Func::kAllReduce;
    r.is_send = p2p;
    r.peer_or_root = p2p ? 2 : -1;
    r.count = 1024 * (i + 1);
    r.bytes = 4096 * (i + 1);
    r.type_size = 4;
    r.algo = Algo::kRing;
    r.proto = Proto::kSimple;
    r.channels = 4;
    r.state = OpState::kCompleted;
    r.start_ns = base + i * 1'000'000ull;
    r.enqueued_ns = r.start_ns + 2'000;
    r.kernel_start_host_ns = r.start_ns + 5'000;
    r.gpu_start_ns = 900'000'000'000ull + i * 1'000'000ull;
    r.gpu_end_ns = r.gpu_start_ns + 40'000 + i;
    r.duration_ns = 40'000 + i;
    r.end_ns = r.start_ns + 60'000;
    r.timing_source = TimingSource::kGpu;
    r.kernel_channels_done = 4;
    s.completed.push_back(r);
  }
  for (int i = 0; i < 2; ++i) {
    OpRecord r;
    r.arrival = completed + 1 + i;
    r.seq = completed + i;
    r.func = Func::kAllGather;
    r.state = OpState::kKernelStarted;
    r.start_ns = s.snapshot_monotonic_ns - (3 - i) * 1'000'000'000ull;  // 3 s and 2 s old
    s.in_flight.push_back(r);
  }
  s.in_flight_count = 2;
  s.oldest_in_flight_age_ns = 3'000'000'000ull;
  s.events["Coll"] = completed;
  s.dropped["pool_full"] = 0;
  return s;
}

std::string WriteOrDie(const CommSnapshot& s, const std::string& dir, DumpReason reason) {
  std::string path;
  Status st = dump::WriteCommDump(s, dir, reason, &path);
  EXPECT_TRUE(st.ok()) << st.message();
  return path;
}

class CommDumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReloadParams();
    ClearNetErrorsForTest();
  }
  void TearDown() override {
    ClearNetErrorsForTest();
    ReloadParams();
  }
  ScopedTempDir dir_{"ncclscope-dumpv2"};
};

TEST_F(CommDumpTest, FinalizeDumpIsTwoMembersAtTheTop) {
  ScopedEnv recent("NCCLSCOPE_DUMP_RECENT", "10");
  ReloadParams();
  const std::string path = WriteOrDie(MakeSnapshot(100), dir_.path(), DumpReason::kFinalize);
  EXPECT_EQ(path, dir_.path() + "/ncclscope-comm-d00dfeed12345678-rank1.json.gz");
  const std::string bytes = ReadBinaryFile(path);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  std::string error;
  std::vector<std::string> members = InflateMembers(bytes, &error);
  ASSERT_EQ(members.size(), 2u) << error;
  for (const std::string& m : members) {
    EXPECT_EQ(m.find('\n'), m.size() - 1) << "each member is one line of JSON";
  }
  // Member 2 holds every completed record, oldest first, as v1 wrote them.
  json fr = json::parse(members[1]);
  EXPECT_EQ(fr["schema"], "ncclscope.comm.v2");
  EXPECT_EQ(fr["part"], "flight_recorder");
  ASSERT_EQ(fr["completed"].size(), 100u);
  EXPECT_EQ(fr["completed"][0]["arrival"], 1);
  EXPECT_EQ(fr["completed"][99]["arrival"], 100);
  EXPECT_EQ(fr["completed"][2]["peer"], 2);
  EXPECT_EQ(fr["completed"][2]["func"], "Send");
  EXPECT_EQ(fr["completed"][0]["timing_source"], "gpu");
  EXPECT_EQ(fr["completed"][0]["duration_ns"], 40'000);
}

TEST_F(CommDumpTest, FirstMemberAloneHoldsTheWholeSummary) {
  ScopedEnv recent("NCCLSCOPE_DUMP_RECENT", "10");
  ReloadParams();
  NetErrorRecord known;
  known.comm_id = kHash;
  known.nic = "eth0";
  known.kind = NetErrorKind::kRecv;
  known.text = "peer 10.0.0.2:40000 closed the connection";
  known.peer = "10.0.0.2:40000";
  known.peer_global_rank = 3;
  known.peer_pid = 4242;
  known.peer_host = "node7";
  known.monotonic_ns = 123456789;
  RecordNetError(known);
  NetErrorRecord unknown;  // no comm id, no peer facts: nulls
  unknown.nic = "eth1";
  unknown.kind = NetErrorKind::kTimeout;
  unknown.text = "timed out";
  RecordNetError(unknown);

  const CommSnapshot snap = MakeSnapshot(100);
  const std::string bytes = ReadBinaryFile(WriteOrDie(snap, dir_.path(), DumpReason::kFinalize));
  // Only the first member inflated: what an analyzer does for every rank of a large job.
  const std::string first = InflateFirstMember(bytes);
  ASSERT_FALSE(first.empty());
  json j = json::parse(first);
  for (const char* key : {"schema", "part", "comm_hash", "comm_name", "rank", "nranks", "nnodes", "pid", "abi",
                          "host", "job_id", "reason", "identity", "finalized", "stalled", "created_realtime_ns",
                          "snapshot_monotonic_ns", "arrivals", "memory_bytes", "in_flight_count",
                          "oldest_in_flight_age_ns", "clock", "ops", "p2p", "recent", "in_flight", "net_errors",
                          "aggregates", "dropped", "events", "flight_recorder"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["schema"], "ncclscope.comm.v2");
  EXPECT_EQ(j["part"], "summary");
  EXPECT_EQ(j["comm_hash"], "0xd00dfeed12345678");
  EXPECT_EQ(j["comm_name"], "tp");
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["nranks"], 4);
  EXPECT_EQ(j["host"], HostName());
  EXPECT_EQ(j["reason"], "finalize");
  EXPECT_FALSE(j.contains("completed")) << "records belong to member 2";

  // Identity: ints from the launcher's variables; no NCCL in this process, no GPU context.
  EXPECT_EQ(j["identity"]["global_rank"], 5);
  EXPECT_EQ(j["identity"]["local_rank"], 1);
  EXPECT_TRUE(j["identity"].contains("gpu_uuid"));
  if (Identity().gpu_uuid.empty()) {
    EXPECT_TRUE(j["identity"]["gpu_uuid"].is_null());
  }
  EXPECT_TRUE(j["identity"]["nccl_version"].is_null());
  // Off MIG (no GPU here): present as null, so a reader never guesses.
  EXPECT_TRUE(j["identity"].contains("gpu_instance_id") && j["identity"]["gpu_instance_id"].is_null());
  EXPECT_TRUE(j["identity"].contains("mig_uuid") && j["identity"]["mig_uuid"].is_null());

  const json& c = j["clock"];
  EXPECT_LE(c["mono_before_ns"].get<uint64_t>(), c["mono_after_ns"].get<uint64_t>());
  EXPECT_GE(c["mono_before_ns"].get<uint64_t>(), snap.snapshot_monotonic_ns) << "sampled when the dump is written";
  EXPECT_GT(c["realtime_ns"].get<uint64_t>(), 1'600'000'000ull * 1'000'000'000ull);
  ASSERT_TRUE(c["esterror_ns"].is_number()) << "adjtimex answers unprivileged reads";
  EXPECT_GE(c["esterror_ns"].get<int64_t>(), 0);
  EXPECT_GE(c["maxerror_ns"].get<int64_t>(), 0);
  EXPECT_TRUE(c["synced"].is_boolean());

  ASSERT_EQ(j["p2p"].size(), 2u);
  EXPECT_EQ(j["p2p"][0], (json{{"peer", 2}, {"func", "Send"}, {"last_seq", 7}}));
  EXPECT_EQ(j["p2p"][1], (json{{"peer", 0}, {"func", "Recv"}, {"last_seq", 5}}));
  EXPECT_EQ(j["ops"][0]["last_seq"], 60);

  // recent: the newest 10 of 100, oldest first, one array per field.
  const json& r = j["recent"];
  for (const char* col : {"arrival", "kind", "func", "seq", "peer", "bytes", "start_ns", "kernel_start_host_ns",
                          "duration_ns", "timing"}) {
    ASSERT_TRUE(r[col].is_array()) << col;
    EXPECT_EQ(r[col].size(), 10u) << col;
  }
  for (int i = 0; i < 10; ++i) {
    const OpRecord& want = snap.completed[90 + i];
    EXPECT_EQ(r["arrival"][i], want.arrival);
    EXPECT_EQ(r["seq"][i], want.seq);
    EXPECT_EQ(r["peer"][i], want.peer_or_root);
    EXPECT_EQ(r["bytes"][i], want.bytes);
    EXPECT_EQ(r["start_ns"][i], want.start_ns);
    EXPECT_EQ(r["kernel_start_host_ns"][i], want.kernel_start_host_ns);
    EXPECT_EQ(r["duration_ns"][i], want.duration_ns);
    EXPECT_EQ(r["func"][i], want.kind == OpKind::kP2p ? "Send" : "AllReduce");
    EXPECT_EQ(r["kind"][i], want.kind == OpKind::kP2p ? "p2p" : "coll");
    EXPECT_EQ(r["timing"][i], "gpu");
  }

  ASSERT_EQ(j["in_flight"].size(), 2u);
  EXPECT_EQ(j["in_flight"][0]["arrival"], 101);
  EXPECT_EQ(j["in_flight"][0]["age_ns"], 3'000'000'000ull);
  EXPECT_EQ(j["in_flight"][1]["age_ns"], 2'000'000'000ull);
  EXPECT_EQ(j["in_flight"][0]["func"], "AllGather");
  EXPECT_EQ(j["in_flight"][0]["state"], OpStateName(OpState::kKernelStarted));

  ASSERT_EQ(j["net_errors"].size(), 2u);
  const json& e = j["net_errors"][0];
  EXPECT_EQ(e["comm_hash"], "0xd00dfeed12345678");
  EXPECT_EQ(e["nic"], "eth0");
  EXPECT_EQ(e["kind"], "recv");
  EXPECT_EQ(e["text"], known.text);
  EXPECT_EQ(e["peer"], "10.0.0.2:40000");
  EXPECT_EQ(e["peer_global_rank"], 3);
  EXPECT_EQ(e["peer_pid"], 4242);
  EXPECT_EQ(e["peer_host"], "node7");
  EXPECT_EQ(e["monotonic_ns"], 123456789);
  const json& u = j["net_errors"][1];
  EXPECT_TRUE(u["comm_hash"].is_null());
  EXPECT_EQ(u["kind"], "timeout");
  for (const char* k : {"peer", "peer_global_rank", "peer_pid", "peer_host"}) EXPECT_TRUE(u[k].is_null()) << k;
  EXPECT_GT(u["monotonic_ns"].get<uint64_t>(), 0u) << "stamped when recorded";

  EXPECT_EQ(j["flight_recorder"], (json{{"depth", 2048}, {"overwritten", 17}, {"completed", 100}}));
  EXPECT_EQ(j["events"]["Coll"], 100);
}

// Without a baseline a dump has no host_nics; once the process took one, every dump carries what the host's
// NICs counted since (this host has no RDMA port: an empty list; the TCP list has what the process's connections
// retransmitted, none here).
TEST_F(CommDumpTest, HostNicsSinceTheBaseline) {
  std::string error;
  auto summary = [&] {
    const std::string path = WriteOrDie(MakeSnapshot(3), dir_.path(), DumpReason::kFinalize);
    return json::parse(InflateMembers(ReadBinaryFile(path), &error)[0]);
  };
  EXPECT_FALSE(summary().contains("host_nics"));
  RecordHostNicBaseline();
  const json nics = summary()["host_nics"];
  ASSERT_TRUE(nics.is_object()) << nics.dump();
  EXPECT_GE(nics["seconds"].get<double>(), 0);
  EXPECT_TRUE(nics["rdma"].is_array());
  EXPECT_TRUE(nics["tcp"].is_array());
  EXPECT_TRUE(nics["netdevs"].is_array());
}

TEST_F(CommDumpTest, RecentIsCappedByTheParameterAndItsDefault) {
  {
    ScopedEnv recent("NCCLSCOPE_DUMP_RECENT", "0");
    ReloadParams();
    json j = json::parse(InflateFirstMember(ReadBinaryFile(WriteOrDie(MakeSnapshot(100), dir_.path(), DumpReason::kFinalize))));
    EXPECT_TRUE(j["recent"]["arrival"].empty());
  }
  {
    ScopedEnv recent("NCCLSCOPE_DUMP_RECENT", "5000");  // above 4096: warned, the default kept
    ReloadParams();
    EXPECT_EQ(Params().Int(ParamId::kDumpRecent), 64);
    json j = json::parse(InflateFirstMember(ReadBinaryFile(WriteOrDie(MakeSnapshot(100), dir_.path(), DumpReason::kFinalize))));
    ASSERT_EQ(j["recent"]["arrival"].size(), 64u);
    EXPECT_EQ(j["recent"]["arrival"][0], 37);
    EXPECT_EQ(j["recent"]["arrival"][63], 100);
  }
  {  // fewer completed than asked: all of them
    json j = json::parse(InflateFirstMember(ReadBinaryFile(WriteOrDie(MakeSnapshot(3), dir_.path(), DumpReason::kFinalize))));
    EXPECT_EQ(j["recent"]["arrival"], (json{1, 2, 3}));
  }
}

TEST_F(CommDumpTest, StallDumpGoesToTheHostFolderWithTheNewestRecords) {
  ScopedEnv cap("NCCLSCOPE_DUMP_STALL_RECORDS", "5");
  ReloadParams();
  CommSnapshot snap = MakeSnapshot(100);
  snap.stalled = true;
  const std::string path = WriteOrDie(snap, dir_.path(), DumpReason::kStall);
  const std::string name = dump::CommDumpName(kHash, 1, DumpReason::kStall);
  EXPECT_EQ(name, "ncclscope-comm-d00dfeed12345678-rank1-stall.json.gz");
  EXPECT_EQ(path, dir_.path() + "/" + HostName() + "/" + name);
  struct stat st;
  EXPECT_NE(stat((dir_.path() + "/" + name).c_str(), &st), 0) << "a stall dump never lands at the top";
  ASSERT_EQ(stat((dir_.path() + "/" + HostName()).c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  const mode_t umask_now = umask(0);
  umask(umask_now);
  EXPECT_EQ(st.st_mode & 0777, 0777 & ~umask_now) << "the host folder's permissions come from the umask";

  json j = ReadDump(path);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["reason"], "stall");
  EXPECT_EQ(j["stalled"], true);
  EXPECT_EQ(j["flight_recorder"]["completed"].size(), 5u);
  EXPECT_EQ(j["flight_recorder"]["completed"][0]["arrival"], 96);
  EXPECT_EQ(j["flight_recorder"]["completed"][4]["arrival"], 100);
  EXPECT_EQ(j["flight_recorder"]["in_flight"].size(), 2u);
  // The summary counts what member 2 holds.
  json summary = json::parse(InflateFirstMember(ReadBinaryFile(path)));
  EXPECT_EQ(summary["flight_recorder"]["completed"], 5);

  // A request dump keeps the whole recorder, in the same host folder.
  const std::string req = WriteOrDie(snap, dir_.path(), DumpReason::kRequest);
  EXPECT_EQ(req, dir_.path() + "/" + HostName() + "/ncclscope-comm-d00dfeed12345678-rank1-request.json.gz");
  json r = ReadDump(req);
  EXPECT_EQ(r["reason"], "request");
  EXPECT_EQ(r["flight_recorder"]["completed"].size(), 100u);
}

// A request dump (SIGUSR2) after a stall dump of the same communicator and rank replaced it, and
// the stall's snapshot (its `wait`) was lost. Each reason has its own file; a later dump replaces only the
// last one of its reason, so a communicator and rank never leave more than three files.
TEST_F(CommDumpTest, ARequestDumpAfterAStallKeepsBothWithTheirReasons) {
  CommSnapshot stalled = MakeSnapshot(20);
  stalled.stalled = true;
  stalled.wait.present = true;
  stalled.wait.cls = WaitClass::kHost;
  const std::string stall = WriteOrDie(stalled, dir_.path(), DumpReason::kStall);
  const std::string request = WriteOrDie(MakeSnapshot(30), dir_.path(), DumpReason::kRequest);
  ASSERT_NE(stall, request);
  json s = ReadDump(stall), r = ReadDump(request);
  ASSERT_TRUE(s.is_object() && r.is_object());
  EXPECT_EQ(s["reason"], "stall");
  EXPECT_EQ(s["stalled"], true);
  EXPECT_EQ(s["wait"]["class"], "host") << "the stall's wait is still on disk";
  EXPECT_EQ(r["reason"], "request");
  EXPECT_EQ(r["arrivals"], 32);

  // Again, with a finalize: still one file per reason, each its latest.
  WriteOrDie(MakeSnapshot(40), dir_.path(), DumpReason::kRequest);
  WriteOrDie(stalled, dir_.path(), DumpReason::kStall);
  const std::string fin = WriteOrDie(MakeSnapshot(50), dir_.path(), DumpReason::kFinalize);
  EXPECT_EQ(ReadDump(request)["arrivals"], 42) << "the latest request dump replaced the first";
  EXPECT_EQ(ReadDump(stall)["reason"], "stall");
  EXPECT_EQ(ReadDump(fin)["reason"], "finalize");
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path())) {
    files += e.path().filename().string().rfind("ncclscope-comm-", 0) == 0;
  }
  EXPECT_EQ(files, 3u) << "finalize, stall and request: no more per communicator and rank";
}

TEST_F(CommDumpTest, StallCapZeroLeavesAnEmptyRecorder) {
  ScopedEnv cap("NCCLSCOPE_DUMP_STALL_RECORDS", "0");
  ReloadParams();
  json j = ReadDump(WriteOrDie(MakeSnapshot(50), dir_.path(), DumpReason::kStall));
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["flight_recorder"]["completed"].empty());
  EXPECT_EQ(j["recent"]["arrival"].size(), 50u) << "the summary's recent list is not capped by the stall cap";
}

TEST_F(CommDumpTest, HookWritesStallDumpsAfterARandomDelayIntoTheHostFolder) {
  ScopedEnv dir("NCCLSCOPE_DUMP_DIR", dir_.path());
  ReloadParams();
  CommSnapshot snap = MakeSnapshot(10);
  const uint64_t t0 = MonotonicNs();
  dump::CommDumpHook(snap, DumpReason::kStall);
  const uint64_t took = MonotonicNs() - t0;
  EXPECT_LT(took, 2'000'000'000ull);
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/" + HostName() + "/" +
                                      dump::CommDumpName(kHash, 1, DumpReason::kStall)));
  dump::CommDumpHook(snap, DumpReason::kFinalize);
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/" + dump::CommDumpName(kHash, 1, DumpReason::kFinalize)));
}

TEST_F(CommDumpTest, LinkPlantedAtTheHostFolderIsNeverFollowed) {
  ScopedTempDir victim("ncclscope-victim");
  ASSERT_EQ(symlink(victim.path().c_str(), (dir_.path() + "/" + HostName()).c_str()), 0);
  std::string path;
  Status s = dump::WriteCommDump(MakeSnapshot(10), dir_.path(), DumpReason::kRequest, &path);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(std::filesystem::is_empty(victim.path())) << "a dump was written through the planted link";
  // Finalize dumps still go to the top.
  EXPECT_TRUE(dump::WriteCommDump(MakeSnapshot(10), dir_.path(), DumpReason::kFinalize, &path).ok());
}

// The dump directory is resolved once. Swapped for a link after the first dump (`mv dumps x;
// ln -s elsewhere dumps`), the next dumps still land in the directory first opened, none in the link's target.
TEST_F(CommDumpTest, ADumpDirSwappedForALinkAfterTheFirstDumpIsNotFollowed) {
  ScopedTempDir victim("ncclscope-victim");
  const std::string dumps = dir_.path() + "/dumps", moved = dir_.path() + "/dumps.first";
  ScopedEnv env("NCCLSCOPE_DUMP_DIR", dumps);
  ReloadParams();
  dump::CommDumpHook(MakeSnapshot(10), DumpReason::kFinalize);
  ASSERT_TRUE(std::filesystem::exists(dumps + "/" + dump::CommDumpName(kHash, 1, DumpReason::kFinalize)));
  ASSERT_EQ(rename(dumps.c_str(), moved.c_str()), 0);
  ASSERT_EQ(symlink(victim.path().c_str(), dumps.c_str()), 0);
  dump::CommDumpHook(MakeSnapshot(10), DumpReason::kStall);
  dump::CommDumpHook(MakeSnapshot(12), DumpReason::kFinalize);
  EXPECT_TRUE(std::filesystem::is_empty(victim.path())) << "a dump followed the link";
  EXPECT_EQ(ReadDump(moved + "/" + HostName() + "/" + dump::CommDumpName(kHash, 1, DumpReason::kStall))["reason"],
            "stall");
  EXPECT_EQ(ReadDump(moved + "/" + dump::CommDumpName(kHash, 1, DumpReason::kFinalize))["arrivals"], 14);
}

// NCCL loaded RTLD_LOCAL (as a framework's extension module pulls it in): found by name, without loading it.
TEST_F(CommDumpTest, NcclVersionOfTheLoadedLibrary) {
  auto first = [&] {
    return json::parse(InflateFirstMember(ReadBinaryFile(WriteOrDie(MakeSnapshot(1), dir_.path(), DumpReason::kFinalize))));
  };
  EXPECT_TRUE(first()["identity"]["nccl_version"].is_null()) << "no NCCL in the process yet";
  void* nccl = dlopen(FAKE_NCCL_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr) << dlerror();
  EXPECT_EQ(first()["identity"]["nccl_version"], "2.28.9");
  dlclose(nccl);
}

TEST(NcclVersionString, BothEncodings) {
  EXPECT_EQ(dump::NcclVersionString(22809), "2.28.9");
  EXPECT_EQ(dump::NcclVersionString(23000), "2.30.0");
  EXPECT_EQ(dump::NcclVersionString(2804), "2.8.4");
  EXPECT_EQ(dump::NcclVersionString(0), "");
}

// Informational: a full recorder (2048 records) gzipped against the uncompressed v1-style document of the
// same content (indent 1, the recorder inline, as v1 wrote it).
TEST_F(CommDumpTest, FullRecorderSizeAgainstV1) {
  const std::string path = WriteOrDie(MakeSnapshot(2048), dir_.path(), DumpReason::kFinalize);
  const std::string bytes = ReadBinaryFile(path);
  json v1_like = ReadDump(path);
  ASSERT_TRUE(v1_like.is_object());
  v1_like.erase("in_flight");
  v1_like.erase("recent");
  const std::string v1 = v1_like.dump(1) + "\n";
  const std::string summary_gz_end = InflateFirstMember(bytes);
  std::printf("2048-record dump: v2 %zu bytes gzipped (summary %zu bytes inflated), v1-style JSON %zu bytes (%.1fx)\n",
              bytes.size(), summary_gz_end.size(), v1.size(), static_cast<double>(v1.size()) / bytes.size());
  EXPECT_LT(bytes.size(), v1.size());
  ASSERT_EQ(v1_like["flight_recorder"]["completed"].size(), 2048u);
}

}  // namespace
}  // namespace ncclscope
