#include "exporters/dump/chrome_trace.h"

#include <cinttypes>
#include <cstdio>

#include "common/hex.h"
#include "common/log.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "exporters/dump/comm_dump.h"

namespace ncclscope::dump {
namespace {

std::string OpName(const OpRecord& r) {
  return std::string(FuncName(r.func)) + " #" + std::to_string(r.seq);
}

nlohmann::json OpArgs(const OpRecord& r) {
  nlohmann::json a = {{"bytes", r.bytes},       {"count", r.count},         {"channels", r.channels},
                      {"algo", AlgoName(r.algo)}, {"proto", ProtoName(r.proto)}, {"arrival", r.arrival},
                      {"state", OpStateName(r.state)}};
  if (r.kind == OpKind::kColl) {
    a["root"] = r.peer_or_root;
  } else {
    a["peer"] = r.peer_or_root;
  }
  return a;
}

}  // namespace

std::string ChromeTraceName(uint64_t comm_hash, int rank) {
  return "ncclscope-trace-" + Hex16(comm_hash) + "-rank" + std::to_string(rank) + ".json";
}

nlohmann::json CommSnapshotToChromeTrace(const CommSnapshot& s) {
  const std::string comm = Hex0x16(s.comm_hash);
  const std::string track = std::string("comm ") + comm + (s.has_name ? " (" + s.comm_name + ")" : "");
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", s.rank}, {"args", {{"name", "rank " + std::to_string(s.rank)}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", s.rank}, {"tid", 0}, {"args", {{"name", track}}}});
  for (const OpRecord& r : s.completed) {
    const bool gpu = r.timing_source == TimingSource::kGpu && r.kernel_start_host_ns != 0;
    const uint64_t start = gpu ? r.kernel_start_host_ns : r.start_ns;
    const uint64_t dur = gpu ? r.duration_ns : (r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0);
    nlohmann::json args = OpArgs(r);
    args["timing"] = TimingSourceName(r.timing_source);
    args["duration_ns"] = r.duration_ns;
    events.push_back({{"ph", "X"}, {"name", OpName(r)}, {"cat", OpKindName(r.kind)}, {"pid", s.rank}, {"tid", 0},
                      {"ts", start / 1e3}, {"dur", dur / 1e3}, {"args", args}});
  }
  for (const OpRecord& r : s.in_flight) {
    const uint64_t age = s.snapshot_monotonic_ns > r.start_ns ? s.snapshot_monotonic_ns - r.start_ns : 0;
    nlohmann::json args = OpArgs(r);
    args["net_steps"] = std::to_string(r.steps_done) + "/" + std::to_string(r.steps_total);
    events.push_back({{"ph", "X"}, {"name", OpName(r) + " (in flight)"}, {"cat", OpKindName(r.kind)},
                      {"pid", s.rank}, {"tid", 0}, {"ts", r.start_ns / 1e3}, {"dur", age / 1e3}, {"args", args}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"},
          {"otherData", {{"schema", "ncclscope.trace.v1"}, {"comm_hash", comm}, {"rank", s.rank},
                         {"nranks", s.nranks}, {"clock", "host CLOCK_MONOTONIC, microseconds"}}}};
}

void ChromeTraceHook(const CommSnapshot& snap, DumpReason reason) {
  try {
    const std::string& dir = Params().Str(ParamId::kDumpDir);
    if (dir.empty() || !Params().Bool(ParamId::kTrace)) return;
    if (reason == DumpReason::kFinalize && !Params().Bool(ParamId::kDumpOnFinalize)) return;
    // A failure is reported once by the writer, naming the file.
    (void)WriteFileAtomically(dir, ChromeTraceName(snap.comm_hash, snap.rank),
                              CommSnapshotToChromeTrace(snap).dump() + "\n");
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kProfile, "ncclscope: trace not written: %s", e.what());
  }
}

namespace {
const bool g_installed = (CommRegistry::Instance().AddDumpHook(&ChromeTraceHook), true);
}  // namespace

}  // namespace ncclscope::dump
