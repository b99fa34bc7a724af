#include "exporters/dump/comm_dump_json.h"

#include <algorithm>

#include "common/hex.h"
#include "core/net_stats.h"
#include "core/tag_names.h"

namespace ncclscope::dump {
namespace {

using nlohmann::json;

json NullIfEmpty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
json NullIfNegative(int v) { return v < 0 ? json(nullptr) : json(v); }

json OpsJson(const CommSnapshot& s) {
  json ops = json::array();
  for (const OpTotals& t : s.ops) {
    ops.push_back({{"kind", OpKindName(t.kind)},
                   {"func", FuncName(t.func)},
                   {"count", t.count},
                   {"bytes", t.bytes},
                   {"last_seq", t.last_seq}});
  }
  return ops;
}

// A p2p seq is numbered from 1 per (peer, direction), so "started" is the last one issued.
json P2pJson(const CommSnapshot& s) {
  json p2p = json::array();
  for (const PeerProgress& p : s.p2p_peers) {
    p2p.push_back({{"peer", p.peer}, {"func", p.send ? "Send" : "Recv"}, {"last_seq", p.started}});
  }
  return p2p;
}

// Columnar: the keys once, not once per record (a 64-record list of objects is three times larger).
json RecentJson(const CommSnapshot& s, size_t n) {
  const size_t count = std::min(n, s.completed.size());
  json arrival = json::array(), kind = json::array(), func = json::array(), seq = json::array(),
       peer = json::array(), bytes = json::array(), start = json::array(), kstart = json::array(),
       duration = json::array(), timing = json::array();
  for (size_t i = s.completed.size() - count; i < s.completed.size(); ++i) {
    const OpRecord& r = s.completed[i];
    arrival.push_back(r.arrival);
    kind.push_back(OpKindName(r.kind));
    func.push_back(FuncName(r.func));
    seq.push_back(r.seq);
    peer.push_back(r.peer_or_root);
    bytes.push_back(r.bytes);
    start.push_back(r.start_ns);
    kstart.push_back(r.kernel_start_host_ns);
    duration.push_back(r.duration_ns);
    timing.push_back(TimingSourceName(r.timing_source));
  }
  return {{"arrival", arrival}, {"kind", kind},   {"func", func},     {"seq", seq},
          {"peer", peer},       {"bytes", bytes}, {"start_ns", start}, {"kernel_start_host_ns", kstart},
          {"duration_ns", duration}, {"timing", timing}};
}

json ClockJson(const ClockSample& c) {
  return {{"mono_before_ns", c.mono_before_ns},
          {"realtime_ns", c.realtime_ns},
          {"mono_after_ns", c.mono_after_ns},
          {"esterror_ns", c.has_error ? json(c.esterror_ns) : json(nullptr)},
          {"maxerror_ns", c.has_error ? json(c.maxerror_ns) : json(nullptr)},
          {"synced", c.synced}};
}

json NetErrorsJson(const std::vector<NetErrorRecord>& errors) {
  json out = json::array();
  for (const NetErrorRecord& e : errors) {
    out.push_back({{"comm_hash", e.comm_id != 0 ? json("0x" + Hex16(e.comm_id)) : json(nullptr)},
                   {"nic", e.nic},
                   {"kind", NetErrorKindName(e.kind)},
                   {"text", e.text},
                   {"peer", NullIfEmpty(e.peer)},
                   {"peer_global_rank", NullIfNegative(e.peer_global_rank)},
                   {"peer_pid", NullIfNegative(e.peer_pid)},
                   {"peer_host", NullIfEmpty(e.peer_host)},
                   {"monotonic_ns", e.monotonic_ns}});
  }
  return out;
}

json AggregatesJson(const CommSnapshot& s) {
  json aggs = json::array();
  for (const AggregateCell& a : s.aggregates) {
    json buckets = json::object();
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
  return aggs;
}

}  // namespace

// Where the oldest operation waits, when it is past its stall threshold; null otherwise.
json WaitJson(const WaitSite& w) {
  if (!w.present) return nullptr;
  json peers = json::array();
  for (const WaitPeer& p : w.peers) {
    peers.push_back({{"peer_global_rank", p.peer_global_rank >= 0 ? json(p.peer_global_rank) : json(nullptr)},
                     {"peer_rank", p.peer_rank >= 0 ? json(p.peer_rank) : json(nullptr)},
                     {"peer_host", p.peer_host.empty() ? json(nullptr) : json(p.peer_host)},
                     {"nic", p.nic},
                     {"direction", p.send ? "send" : "recv"},
                     {"requests", p.requests},
                     {"waiting_ns", p.waiting_ns},
                     {"failed", p.failed}});
  }
  return {{"class", WaitClassName(w.cls)}, {"kind", OpKindName(w.kind)}, {"func", FuncName(w.func)},
          {"seq", w.seq}, {"arrival", w.arrival}, {"age_ns", w.age_ns}, {"threshold_ns", w.threshold_ns},
          {"network_only", w.network_only}, {"peers", peers}};
}

json RecordToJson(const OpRecord& r, bool in_flight, uint64_t now_ns) {
  json j = {
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
  j[r.kind == OpKind::kColl ? "root" : "peer"] = r.peer_or_root;
  if (r.gpu_start_ns != 0) {
    j["gpu_start_ns"] = r.gpu_start_ns;
    j["gpu_end_ns"] = r.gpu_end_ns;
  }
  if (r.kernel_start_host_ns != 0) j["kernel_start_host_ns"] = r.kernel_start_host_ns;
  if (r.user_tag != 0) {  // v7
    j["tag"] = "0x" + Hex16(r.user_tag);
    if (!TagName(r.user_tag).empty()) j["tag_name"] = TagName(r.user_tag);
  }
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

json SummaryJson(const CommSnapshot& s, const DumpContext& ctx) {
  json j;
  j["schema"] = kCommDumpSchema;
  j["part"] = "summary";
  j["comm_hash"] = "0x" + Hex16(s.comm_hash);
  j["comm_name"] = s.has_name ? json(s.comm_name) : json(nullptr);
  j["rank"] = s.rank;
  j["nranks"] = s.nranks;
  j["nnodes"] = s.nnodes;
  j["pid"] = s.pid;
  j["abi"] = s.abi;
  j["host"] = ctx.host;
  j["job_id"] = ctx.job_id;
  j["reason"] = ctx.reason;
  j["identity"] = ctx.identity;
  j["finalized"] = s.finalized;
  j["stalled"] = s.stalled;
  j["completion_seen"] = CompletionSeenName(s.completion);
  j["created_realtime_ns"] = s.created_realtime_ns;
  j["snapshot_monotonic_ns"] = s.snapshot_monotonic_ns;
  j["arrivals"] = s.arrivals;
  j["memory_bytes"] = s.memory_bytes;
  j["in_flight_count"] = s.in_flight_count;
  j["oldest_in_flight_age_ns"] = s.oldest_in_flight_age_ns;
  j["wait"] = WaitJson(s.wait);
  if (s.has_gpu_offset) j["gpu_to_host_offset_ns"] = s.gpu_to_host_offset_ns;
  j["clock"] = ClockJson(ctx.clock);
  j["ops"] = OpsJson(s);
  j["p2p"] = P2pJson(s);
  j["recent"] = RecentJson(s, ctx.recent);
  json in_flight = json::array();
  for (const OpRecord& r : s.in_flight) in_flight.push_back(RecordToJson(r, true, s.snapshot_monotonic_ns));
  j["in_flight"] = in_flight;
  j["net_errors"] = NetErrorsJson(ctx.net_errors);
  if (!ctx.host_nics.is_null()) j["host_nics"] = ctx.host_nics;
  j["aggregates"] = AggregatesJson(s);
  if (!s.tags.empty() || s.tags_other.ops != 0) {  // v7: per user tag (the first 16; the rest folded)
    json tags = json::array();
    for (const TagTotals& t : s.tags) {
      json tag = {{"tag", "0x" + Hex16(t.tag)}, {"ops", t.ops}, {"bytes", t.bytes}};
      if (!TagName(t.tag).empty()) tag["name"] = TagName(t.tag);
      tags.push_back(tag);
    }
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
  j["dropped"] = json::object();
  for (const auto& [k, v] : s.dropped) j["dropped"][k] = v;
  j["events"] = json::object();
  for (const auto& [k, v] : s.events) j["events"][k] = v;
  j["flight_recorder"] = {{"depth", s.fr_depth},
                          {"overwritten", s.fr_overwritten},
                          {"completed", std::min(ctx.fr_records, s.completed.size())}};
  return j;
}

json FlightRecorderJson(const CommSnapshot& s, size_t records) {
  const size_t count = std::min(records, s.completed.size());
  json completed = json::array();
  for (size_t i = s.completed.size() - count; i < s.completed.size(); ++i) {
    completed.push_back(RecordToJson(s.completed[i], false, s.snapshot_monotonic_ns));
  }
  return {{"schema", kCommDumpSchema}, {"part", "flight_recorder"}, {"completed", completed}};
}

}  // namespace ncclscope::dump
