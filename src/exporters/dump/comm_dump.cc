#include "exporters/dump/comm_dump.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/hex.h"
#include "common/host.h"
#include "common/log.h"
#include "common/output_dir.h"
#include "common/params.h"

namespace ncclscope::dump {
namespace {

nlohmann::json RecordToJson(const OpRecord& r, bool in_flight, uint64_t now_ns) {
  nlohmann::json j = {
      {"kind", OpKindName(r.kind)},
      {"func", FuncName(r.func)},
      {"seq", r.seq},
      {"arrival", r.arrival},
      {"count", r.count},
      {"bytes", r.bytes},
      {"type_size", r.type_size},
      {"algo", AlgoName(r.algo)},
      {"proto", ProtoName(r.proto)},
      {"channels", r.channels},
      {"state", OpStateName(r.state)},
      {"start_ns", r.start_ns},
      {"enqueued_ns", r.enqueued_ns},
      {"kernel_channels_done", r.kernel_channels_done},
      {"proxy_ops_started", r.proxy_ops_started},
      {"proxy_ops_done", r.proxy_ops_done},
      {"net_steps_total", r.steps_total},
      {"net_steps_done", r.steps_done},
  };
  if (r.kind == OpKind::kColl) {
    j["root"] = r.peer_or_root;
  } else {
    j["peer"] = r.peer_or_root;
  }
  if (r.gpu_start_ns != 0) {
    j["gpu_start_ns"] = r.gpu_start_ns;
    j["gpu_end_ns"] = r.gpu_end_ns;
  }
  if (r.kernel_start_host_ns != 0) j["kernel_start_host_ns"] = r.kernel_start_host_ns;
  if (r.user_tag != 0) j["tag"] = "0x" + Hex16(r.user_tag);  // v7
  if (r.symmetric) j["symmetric"] = true;
  if (r.phase_ns[0] != 0 || r.phase_ns[1] != 0 || r.phase_ns[2] != 0) {  // v7 KernelPhase, longest channel
    j["phases_ns"] = {{"initial_sync", r.phase_ns[0]}, {"compute", r.phase_ns[1]}, {"final_sync", r.phase_ns[2]}};
  }
  if (in_flight) {
    j["age_ns"] = (r.start_ns != 0 && now_ns > r.start_ns) ? now_ns - r.start_ns : 0;
  } else {
    j["end_ns"] = r.end_ns;
    j["timing_source"] = TimingSourceName(r.timing_source);
    j["duration_ns"] = r.duration_ns;
    if (r.timing_source != TimingSource::kCpu && r.duration_ns != 0) {
      j["algbw_gbps"] = AlgBwGBps(r.bytes, r.duration_ns);
    }
  }
  return j;
}

}  // namespace

nlohmann::json CommSnapshotToJson(const CommSnapshot& s) {
  nlohmann::json j;
  j["schema"] = "ncclscope.comm.v1";
  j["comm_hash"] = "0x" + Hex16(s.comm_hash);
  j["comm_name"] = s.has_name ? nlohmann::json(s.comm_name) : nlohmann::json(nullptr);
  j["rank"] = s.rank;
  j["nranks"] = s.nranks;
  j["nnodes"] = s.nnodes;
  j["pid"] = s.pid;
  j["abi"] = s.abi;
  j["finalized"] = s.finalized;
  j["stalled"] = s.stalled;
  j["created_realtime_ns"] = s.created_realtime_ns;
  j["snapshot_monotonic_ns"] = s.snapshot_monotonic_ns;
  j["arrivals"] = s.arrivals;
  j["memory_bytes"] = s.memory_bytes;
  j["in_flight_count"] = s.in_flight_count;
  j["oldest_in_flight_age_ns"] = s.oldest_in_flight_age_ns;
  if (s.has_gpu_offset) j["gpu_to_host_offset_ns"] = s.gpu_to_host_offset_ns;
  nlohmann::json ops = nlohmann::json::array();
  for (const OpTotals& t : s.ops) {
    ops.push_back({{"kind", OpKindName(t.kind)},
                   {"func", FuncName(t.func)},
                   {"count", t.count},
                   {"bytes", t.bytes},
                   {"last_seq", t.last_seq}});
  }
  j["ops"] = ops;
  nlohmann::json aggs = nlohmann::json::array();
  for (const AggregateCell& a : s.aggregates) {
    nlohmann::json buckets = nlohmann::json::object();
    for (int b = 0; b < kLatencyBuckets; ++b) {
      if (a.latency_buckets[b] != 0) buckets[std::to_string(b)] = a.latency_buckets[b];
    }
    aggs.push_back({{"kind", OpKindName(a.kind)},
                    {"func", FuncName(a.func)},
                    {"algo", AlgoName(a.algo)},
                    {"proto", ProtoName(a.proto)},
                    {"size_class", a.size_class},
                    {"count", a.count},
                    {"bytes", a.bytes},
                    {"bus_bytes", a.bus_bytes},
                    {"latency_count", a.latency_count},
                    {"latency_sum_ns", a.latency_sum_ns},
                    {"latency_log2_buckets", buckets},
                    {"cpu_count", a.cpu_count},
                    {"cpu_sum_ns", a.cpu_sum_ns}});
  }
  j["aggregates"] = aggs;
  if (!s.tags.empty() || s.tags_other.ops != 0) {  // v7: per user tag (the first 16; the rest folded)
    nlohmann::json tags = nlohmann::json::array();
    for (const TagTotals& t : s.tags) tags.push_back({{"tag", "0x" + Hex16(t.tag)}, {"ops", t.ops}, {"bytes", t.bytes}});
    j["tags"] = tags;
    j["tags_other"] = {{"ops", s.tags_other.ops}, {"bytes", s.tags_other.bytes}};
  }
  if (s.phase_ops != 0) {  // v7 KernelPhase totals
    j["kernel_phases"] = {{"ops", s.phase_ops},
                          {"initial_sync_ns", s.phase_sum_ns[0]},
                          {"compute_ns", s.phase_sum_ns[1]},
                          {"final_sync_ns", s.phase_sum_ns[2]},
                          {"symmetric_ops", s.symmetric_ops},
                          {"symmetric_barrier_ns", s.symmetric_barrier_ns}};
  }
  nlohmann::json completed = nlohmann::json::array(), in_flight = nlohmann::json::array();
  for (const OpRecord& r : s.completed) completed.push_back(RecordToJson(r, false, s.snapshot_monotonic_ns));
  for (const OpRecord& r : s.in_flight) in_flight.push_back(RecordToJson(r, true, s.snapshot_monotonic_ns));
  j["flight_recorder"] = {{"depth", s.fr_depth},
                          {"overwritten", s.fr_overwritten},
                          {"completed", completed},
                          {"in_flight", in_flight}};
  j["dropped"] = nlohmann::json::object();
  for (const auto& [k, v] : s.dropped) j["dropped"][k] = v;
  j["events"] = nlohmann::json::object();
  for (const auto& [k, v] : s.events) j["events"][k] = v;
  return j;
}

std::string CommDumpName(uint64_t comm_hash, int rank) {
  return "ncclscope-comm-" + Hex16(comm_hash) + "-rank" + std::to_string(rank) + ".json";
}

const char* DumpReasonName(DumpReason reason) {
  switch (reason) {
    case DumpReason::kStall: return "stall";
    case DumpReason::kFinalize: return "finalize";
    default: return "request";
  }
}

Status WriteCommDump(const CommSnapshot& snap, const std::string& dir, DumpReason reason, std::string* path) {
  nlohmann::json j = CommSnapshotToJson(snap);
  // Where and why, for reading many ranks' dumps later (ncclscope-analyze prints them).
  j["host"] = HostName();
  j["job_id"] = Params().Str(ParamId::kJobId);
  j["reason"] = DumpReasonName(reason);
  const std::string name = CommDumpName(snap.comm_hash, snap.rank);
  NCCLSCOPE_RETURN_IF_ERROR(
      WriteFileAtomically(dir, name, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  if (path != nullptr) *path = dir + "/" + name;
  return Status::Ok();
}

void CommDumpHook(const CommSnapshot& snap, DumpReason reason) {
  try {
    const std::string& dir = Params().Str(ParamId::kDumpDir);
    if (dir.empty()) return;
    if (reason == DumpReason::kFinalize && !Params().Bool(ParamId::kDumpOnFinalize)) return;
    std::string path;
    Status s = WriteCommDump(snap, dir, reason, &path);
    if (s.ok()) {  // a failure has been reported once, naming the file
      NCCLSCOPE_INFO(subsys::kProfile, "ncclscope: wrote %s (%s)", path.c_str(), DumpReasonName(reason));
    }
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kProfile, "ncclscope: communicator dump failed: %s", e.what());
  }
}

namespace {
// Installed when the library loads; the hook list lives for the process (-z nodelete).
const bool g_installed = (CommRegistry::Instance().AddDumpHook(&CommDumpHook), true);
}  // namespace

}  // namespace ncclscope::dump
