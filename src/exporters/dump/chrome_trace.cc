#include "exporters/dump/chrome_trace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

#include "common/hex.h"
#include "common/log.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "core/tag_names.h"
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
  if (r.user_tag != 0) {  // v7: the caller's tag, and the name NCCLSCOPE_TAG_NAMES gives it
    a["tag"] = "0x" + Hex16(r.user_tag);
    const std::string& name = TagName(r.user_tag);
    if (!name.empty()) a["tag_name"] = name;
  }
  return a;
}


// One operation's slice: [start, start + dur) in host monotonic ns.
struct Slice {
  uint64_t start_ns;
  uint64_t dur_ns;
  const OpRecord* rec;
  bool in_flight;
};

// A track: the collectives (peer -1), or the Send or Recv operations with one peer; lane splits a track where
// its slices overlap. Ordered so that collectives come first, then peers, Send before Recv, lanes in order.
struct TrackKey {
  int p2p = 0;
  int peer = -1;
  int recv = 0;
  int lane = 0;
  bool operator<(const TrackKey& o) const {
    return std::tie(p2p, peer, recv, lane) < std::tie(o.p2p, o.peer, o.recv, o.lane);
  }
};

std::string TrackLabel(const TrackKey& k) {
  if (!k.p2p) return "collectives";
  return std::string(k.recv ? "Recv from " : "Send to ") + std::to_string(k.peer);
}

// Trace viewers draw one track as a stack: its slices must nest or be disjoint. A rank's Send and Recv with
// a peer, or an in-flight operation and completed ones started after it but still running at the snapshot,
// overlap without nesting, so each track gets lanes: every slice goes, by start (longest first), into the
// first lane where it follows what has ended or nests in the innermost slice still open.
std::map<TrackKey, std::vector<size_t>> AssignTracks(const std::vector<Slice>& slices) {
  std::vector<size_t> order(slices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (slices[a].start_ns != slices[b].start_ns) return slices[a].start_ns < slices[b].start_ns;
    return slices[a].dur_ns > slices[b].dur_ns;
  });
  // Per track (lane 0 in the key): per lane, the ends of its open slices, innermost last.
  std::map<TrackKey, std::vector<std::vector<uint64_t>>> open_ends;
  std::map<TrackKey, std::vector<size_t>> tracks;
  for (size_t i : order) {
    const OpRecord& r = *slices[i].rec;
    TrackKey key;
    if (r.kind != OpKind::kColl) key = {1, r.peer_or_root, r.func == Func::kSend ? 0 : 1, 0};
    std::vector<std::vector<uint64_t>>& lanes = open_ends[key];
    const uint64_t start = slices[i].start_ns, end = start + slices[i].dur_ns;
    size_t lane = 0;
    for (; lane < lanes.size(); ++lane) {
      std::vector<uint64_t>& stack = lanes[lane];
      while (!stack.empty() && stack.back() <= start) stack.pop_back();  // ended: no later slice overlaps it
      if (stack.empty() || end <= stack.back()) break;
    }
    if (lane == lanes.size()) lanes.emplace_back();
    lanes[lane].push_back(end);
    key.lane = static_cast<int>(lane);
    tracks[key].push_back(i);
  }
  return tracks;
}

}  // namespace

std::string ChromeTraceName(uint64_t comm_hash, int rank, DumpReason reason) {
  return "ncclscope-trace-" + Hex16(comm_hash) + "-rank" + std::to_string(rank) + DumpReasonSuffix(reason) + ".json";
}

nlohmann::json CommSnapshotToChromeTrace(const CommSnapshot& s) {
  const std::string comm = Hex0x16(s.comm_hash);
  const std::string prefix = std::string("comm ") + comm + (s.has_name ? " (" + s.comm_name + ")" : "") + ": ";
  std::vector<Slice> slices;
  slices.reserve(s.completed.size() + s.in_flight.size());
  for (const OpRecord& r : s.completed) {
    const bool gpu = r.timing_source == TimingSource::kGpu && r.kernel_start_host_ns != 0;
    const uint64_t start = gpu ? r.kernel_start_host_ns : r.start_ns;
    slices.push_back({start, gpu ? r.duration_ns : (r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0), &r, false});
  }
  for (const OpRecord& r : s.in_flight) {
    const uint64_t age = s.snapshot_monotonic_ns > r.start_ns ? s.snapshot_monotonic_ns - r.start_ns : 0;
    slices.push_back({r.start_ns, age, &r, true});
  }
  const std::map<TrackKey, std::vector<size_t>> tracks = AssignTracks(slices);
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", s.rank},
                    {"args", {{"name", "rank " + std::to_string(s.rank)}}}});
  int tid = 0;
  for (const auto& [key, members] : tracks) {
    std::string name = prefix + TrackLabel(key);
    if (key.lane > 0) name += " (lane " + std::to_string(key.lane + 1) + ")";
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", s.rank}, {"tid", tid},
                      {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", s.rank}, {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
    for (size_t i : members) {
      const Slice& sl = slices[i];
      const OpRecord& r = *sl.rec;
      nlohmann::json args = OpArgs(r);
      if (sl.in_flight) {
        args["net_steps"] = std::to_string(r.steps_done) + "/" + std::to_string(r.steps_total);
      } else {
        args["timing"] = TimingSourceName(r.timing_source);
        args["duration_ns"] = r.duration_ns;
      }
      events.push_back({{"ph", "X"}, {"name", OpName(r) + (sl.in_flight ? " (in flight)" : "")},
                        {"cat", OpKindName(r.kind)}, {"pid", s.rank}, {"tid", tid},
                        {"ts", sl.start_ns / 1e3}, {"dur", sl.dur_ns / 1e3}, {"args", args}});
    }
    ++tid;
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
    // Next to its dump: stall and request traces in the host's subfolder, as their dumps. A failure is
    // reported once by the writer, naming the file.
    const std::string name = ChromeTraceName(snap.comm_hash, snap.rank, reason);
    const std::string sub = CommDumpSubdir(reason);
    const std::string bytes = CommSnapshotToChromeTrace(snap).dump() + "\n";
    (void)(sub.empty() ? WriteFileAtomically(dir, name, bytes) : WriteFileAtomicallyIn(dir, sub, name, bytes));
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kProfile, "trace not written: %s", e.what());
  }
}

}  // namespace ncclscope::dump
