// Profiler-half metric families from the live-communicator registry's snapshot, at the detail level of
// NCCLSCOPE_METRICS_LEVEL (docs/metrics.md). The basic level keeps a handful of series per communicator, so a
// 10,000-GPU job stays within what a Prometheus tenant holds; richer levels split the same families by
// function, algorithm and protocol (never under another name, so sum() never counts twice) and add families.
#include <map>
#include <set>
#include <tuple>

#include "common/hex.h"
#include "common/params.h"
#include "core/registry.h"
#include "core/snapshot.h"
#include "core/tag_names.h"
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"
#include "exporters/prometheus/p2p_peer_fold.h"
#include "exporters/prometheus/retired_comms.h"

namespace ncclscope {
namespace {

using prometheus::MetricType;

const char* KindName(OpKind kind) { return kind == OpKind::kColl ? "coll" : "p2p"; }

// Power-of-four size classes from 1 KiB to 1 GiB for `size_le`; AggregateCell::size_class k holds sizes in
// [2^(k-1), 2^k).
std::string SizeLabel(int size_class) {
  static const char* kNames[] = {"1KiB", "4KiB", "16KiB", "64KiB", "256KiB", "1MiB", "4MiB", "16MiB",
                                 "64MiB", "256MiB", "1GiB"};
  if (size_class <= 10) return kNames[0];
  const int index = (size_class - 10 + 1) / 2;  // 2^size_class rounded up to a power of four
  return index < static_cast<int>(std::size(kNames)) ? kNames[index] : "+Inf";
}

void Accumulate(AggregateCell* to, const AggregateCell& from) {
  to->count += from.count;
  to->bytes += from.bytes;
  to->bus_bytes += from.bus_bytes;
  to->latency_sum_ns += from.latency_sum_ns;
  to->latency_count += from.latency_count;
  to->cpu_sum_ns += from.cpu_sum_ns;
  for (int b = 0; b < kLatencyBuckets; ++b) to->latency_buckets[b] += from.latency_buckets[b];
}

uint64_t Sum(const std::map<std::string, uint64_t>& by_reason) {
  uint64_t n = 0;
  for (const auto& [reason, v] : by_reason) n += v;
  return n;
}

using Label = prometheus::ClientMetric::Label;
using prometheus::MetricFamily;

// One communicator with the sums its families read, computed once per scrape.
struct CommView {
  const CommSnapshot* c;
  bool detailed;
  bool rank_idle;  // this rank has left every live communicator alone for the stall floor or more
  prom::Labels base;
  std::map<std::tuple<OpKind, Func, Algo, Proto>, AggregateCell> counters;  // per kind (x func x algo x proto)
  std::map<OpKind, AggregateCell> by_kind;
  std::map<Func, AggregateCell> by_func;
  std::map<std::pair<Func, std::string>, uint64_t> sized;

  prom::Labels With(std::initializer_list<Label> extra) const {
    prom::Labels l = base;
    l.insert(l.end(), extra);
    return l;
  }
};

// The process-wide families' inputs: latency per operation type summed over communicators.
struct ProcessView {
  const ProcessSnapshot* snap;
  bool detailed;
  std::map<std::pair<OpKind, Func>, AggregateCell> latency;
};

// A family of one series per communicator whose value `read` gives (counter or gauge as the row's type), or
// whose series `emit` adds (labelled breakdowns, conditional series).
struct CommRow {
  const char* name;
  const char* help;
  MetricType type;
  prom::Level level;
  double (*read)(const CommSnapshot&);
  void (*emit)(const CommView&, MetricFamily*);
};
struct ProcessRow {
  const char* name;
  const char* help;
  MetricType type;
  prom::Level level;
  void (*emit)(const ProcessView&, MetricFamily*);
};

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

void EmitInfo(const CommView& v, MetricFamily* f) {
  const CommSnapshot& c = *v.c;
  prom::AddGauge(f, 1, v.With({{"comm_name", c.has_name ? c.comm_name : ""}, {"nranks", std::to_string(c.nranks)},
                               {"nnodes", std::to_string(c.nnodes)}, {"abi", c.abi}}));
}

// Operation counters: per kind (basic) or per kind x function x algorithm x protocol (detailed).
prom::Labels CounterLabels(const CommView& v, OpKind kind, Func func, Algo algo, Proto proto) {
  prom::Labels l = v.With({{"kind", KindName(kind)}});
  if (v.detailed) l.insert(l.end(), {{"func", FuncName(func)}, {"algo", AlgoName(algo)}, {"proto", ProtoName(proto)}});
  return l;
}
template <uint64_t AggregateCell::*Field>
void EmitOpCounter(const CommView& v, MetricFamily* f) {
  for (const auto& [key, a] : v.counters) {
    const auto& [kind, func, algo, proto] = key;
    prom::AddCounter(f, static_cast<double>(a.*Field), CounterLabels(v, kind, func, algo, proto));
  }
}
void EmitBusBytes(const CommView& v, MetricFamily* f) {
  for (const auto& [key, a] : v.counters) {
    const auto& [kind, func, algo, proto] = key;
    if (kind != OpKind::kColl) continue;
    prom::Labels l = CounterLabels(v, kind, func, algo, proto);
    l.erase(l.begin() + 2);  // bus bytes exist for collectives only: no kind label
    prom::AddCounter(f, static_cast<double>(a.bus_bytes), l);
  }
}
void EmitSeconds(const CommView& v, MetricFamily* f) {
  for (const auto& [kind, a] : v.by_kind) {
    prom::AddCounter(f, Seconds(a.latency_sum_ns), v.With({{"kind", KindName(kind)}}));
  }
}
// Collectives issued: the sum over functions of the largest sequence number.
uint64_t CollsIssued(const CommSnapshot& c) {
  uint64_t n = 0;
  for (const OpTotals& t : c.ops) n += t.kind == OpKind::kColl ? t.last_seq : 0;
  return n;
}
// Progress, visible for both kinds at every level (a point-to-point hang shows as a p2p lag).
void EmitLastSeq(const CommView& v, MetricFamily* f) {
  uint64_t p2p_started = 0;
  if (v.detailed) {
    for (const OpTotals& t : v.c->ops) {
      if (t.kind != OpKind::kColl) continue;
      prom::AddGauge(f, static_cast<double>(t.last_seq), v.With({{"kind", "coll"}, {"func", FuncName(t.func)}}));
    }
  }
  for (const PeerProgress& p : v.c->p2p_peers) p2p_started += p.started;
  if (!v.detailed) prom::AddGauge(f, static_cast<double>(CollsIssued(*v.c)), v.With({{"kind", "coll"}}));
  prom::AddGauge(f, static_cast<double>(p2p_started), v.With({{"kind", "p2p"}}));
}
// Where a stalled communicator's oldest operation waits: nothing while it is healthy; when stalled, one series
// per peer its network requests wait on (class "peer"), or one saying it is not launched ("host"), its kernel
// does not finish ("kernel") or it cannot tell ("launched"). At most kMaxWaitPeers per communicator and
// kMaxWaitSeries per scrape, so a job-wide hang cannot blow up the series count.
constexpr size_t kMaxWaitSeries = 64;
void EmitCompletionSeen(const CommView& v, MetricFamily* f) {
  prom::AddGauge(f, 1, v.With({{"by", CompletionSeenName(v.c->completion)}}));
}
void EmitWait(const CommView& v, MetricFamily* f) {
  const WaitSite& w = v.c->wait;
  if (!w.present || v.c->finalized) return;
  const char* cls = WaitClassName(w.cls);
  const char* func = FuncName(w.func);
  auto number = [](int n) { return n >= 0 ? std::to_string(n) : std::string(); };
  auto add = [&](double seconds, const WaitPeer* p) {
    if (f->metric.size() >= kMaxWaitSeries) return;
    prom::AddGauge(f, seconds,
                   v.With({{"class", cls}, {"func", func},
                           {"peer_global_rank", p != nullptr ? number(p->peer_global_rank) : ""},
                           {"peer_host", p != nullptr ? p->peer_host : ""},
                           {"peer_rank", p != nullptr ? number(p->peer_rank) : ""}, {"nic", p != nullptr ? p->nic : ""},
                           {"direction", p == nullptr ? "" : p->send ? "send" : "recv"},
                           {"state", p != nullptr && p->failed ? "failed" : "waiting"}}));
  };
  if (w.peers.empty()) return add(Seconds(w.age_ns), nullptr);
  for (const WaitPeer& p : w.peers) add(Seconds(p.waiting_ns), &p);
}
// The hang rules' progress inputs, exported only where they can matter, so that the rules read the waiting ranks and
// the idle ones instead of every rank x communicator (docs/scaling.md): a stalled communicator's collectives
// issued (beside its wait), and, on a rank idle on every communicator, each one's collectives issued (a rank that
// did not issue what the others wait in is idle and behind them).
void EmitWaitLastSeq(const CommView& v, MetricFamily* f) {
  if (v.c->wait.present && !v.c->finalized) prom::AddGauge(f, static_cast<double>(CollsIssued(*v.c)), v.base);
}
void EmitIdleLastSeq(const CommView& v, MetricFamily* f) {
  if (!v.rank_idle || v.c->finalized) return;
  prom::AddGauge(f, static_cast<double>(CollsIssued(*v.c)), v.With({{"by", CompletionSeenName(v.c->completion)}}));
}
void EmitBySize(const CommView& v, MetricFamily* f) {
  for (const auto& [key, n] : v.sized) {
    prom::AddCounter(f, static_cast<double>(n), v.With({{"func", FuncName(key.first)}, {"size_le", key.second}}));
  }
}
void EmitCommLatency(const CommView& v, MetricFamily* f) {
  for (const auto& [func, a] : v.by_func) {
    prom::AddLog2Histogram(f, a.latency_buckets, prom::kMediumBounds, static_cast<double>(a.latency_sum_ns),
                           v.With({{"func", FuncName(func)}}));
  }
}
void EmitEnqueueSeconds(const CommView& v, MetricFamily* f) {
  for (const auto& [func, a] : v.by_func) {
    prom::AddCounter(f, Seconds(a.cpu_sum_ns), v.With({{"func", FuncName(func)}}));
  }
}
// At most NCCLSCOPE_METRICS_P2P_PEERS named peers per direction, the rest as peer="other" (p2p_peer_fold.h).
void EmitPeerStarted(const CommView& v, MetricFamily* f) {
  const size_t k = static_cast<size_t>(Params().Int(ParamId::kMetricsP2pPeers));
  for (const FoldedPeer& p : SharedP2pPeerFold().Fold(v.c->comm_hash, v.c->rank, v.c->p2p_peers, k)) {
    prom::AddCounter(f, static_cast<double>(p.started),
                     v.With({{"peer", p.peer}, {"direction", p.send ? "send" : "recv"}}));
  }
}
void EmitDroppedByReason(const CommView& v, MetricFamily* f) {
  for (const auto& [reason, n] : v.c->dropped) {
    prom::AddCounter(f, static_cast<double>(n), v.With({{"reason", reason}}));
  }
}
void EmitPhases(const CommView& v, MetricFamily* f) {
  static const char* kPhaseNames[] = {"initial_sync", "compute", "final_sync"};
  if (v.c->phase_ops == 0) return;
  for (int i = 0; i < 3; ++i) prom::AddCounter(f, Seconds(v.c->phase_sum_ns[i]), v.With({{"phase", kPhaseNames[i]}}));
}
void EmitBarrier(const CommView& v, MetricFamily* f) {
  if (v.c->symmetric_ops != 0) prom::AddCounter(f, Seconds(v.c->symmetric_barrier_ns), v.base);
}
void EmitBarrierOps(const CommView& v, MetricFamily* f) {
  if (v.c->symmetric_ops != 0) prom::AddCounter(f, static_cast<double>(v.c->symmetric_ops), v.base);
}
// tag_name: NCCLSCOPE_TAG_NAMES's name for the tag, "" (the same as no label) when it names none.
template <uint64_t TagTotals::*Field>
void EmitTag(const CommView& v, MetricFamily* f) {
  for (const TagTotals& t : v.c->tags) {
    prom::AddCounter(f, static_cast<double>(t.*Field), v.With({{"tag", Hex0x16(t.tag)}, {"tag_name", TagName(t.tag)}}));
  }
  if (v.c->tags_other.ops != 0) {
    prom::AddCounter(f, static_cast<double>(v.c->tags_other.*Field), v.With({{"tag", "other"}, {"tag_name", ""}}));
  }
}

void EmitProcessLatency(const ProcessView& v, MetricFamily* f) {
  for (const auto& [key, a] : v.latency) {
    prom::AddLog2Histogram(f, a.latency_buckets, v.detailed ? prom::kFineBounds : prom::kCoarseBounds,
                           static_cast<double>(a.latency_sum_ns),
                           {{"kind", KindName(key.first)}, {"func", FuncName(key.second)}});
  }
}
void EmitProcessDropped(const ProcessView& v, MetricFamily* f) {
  prom::AddCounter(f, static_cast<double>(Sum(v.snap->process_dropped)), {});  // present while zero
}
void EmitProcessDroppedByReason(const ProcessView& v, MetricFamily* f) {
  for (const auto& [reason, n] : v.snap->process_dropped) {
    prom::AddCounter(f, static_cast<double>(n), {{"reason", reason}});
  }
}

constexpr auto kBasic = prom::Level::kBasic, kDetailed = prom::Level::kDetailed, kFull = prom::Level::kFull;
constexpr auto kCounter = MetricType::Counter, kGauge = MetricType::Gauge, kHistogram = MetricType::Histogram;

// Families in exposition order; a row above the scrape's level, or without series, is left out.
const CommRow kCommRows[] = {
    {"ncclscope_comm_info", "Live communicator metadata (value is always 1)", kGauge, kBasic, nullptr, EmitInfo},
    {"ncclscope_comm_operations_total", "Collective and point-to-point operations completed", kCounter, kBasic,
     nullptr, EmitOpCounter<&AggregateCell::count>},
    {"ncclscope_comm_bytes_total", "Operation bytes (nccl-tests byte base)", kCounter, kBasic, nullptr,
     EmitOpCounter<&AggregateCell::bytes>},
    {"ncclscope_comm_bus_bytes_total",
     "Collective bytes times the nccl-tests bus factor: rate() over this / rate() of "
     "ncclscope_comm_operation_seconds_total{kind=\"coll\"} = bus bandwidth",
     kCounter, kBasic, nullptr, EmitBusBytes},
    {"ncclscope_comm_operation_seconds_total",
     "GPU- or proxy-timed seconds inside operations, waiting for peers included: the rank with the least per "
     "operation is the one the others wait for",
     kCounter, kBasic, nullptr, EmitSeconds},
    {"ncclscope_comm_last_seq",
     "Progress: coll = sum over functions of the largest sequence number; p2p = operations started, all peers and "
     "directions",
     kGauge, kBasic, nullptr, EmitLastSeq},
    {"ncclscope_comm_in_flight_operations", "Operations enqueued and not completed", kGauge, kBasic,
     [](const CommSnapshot& c) { return static_cast<double>(c.in_flight_count); }, nullptr},
    {"ncclscope_comm_oldest_in_flight_age_seconds", "Age of the oldest in-flight operation", kGauge, kBasic,
     [](const CommSnapshot& c) { return Seconds(c.oldest_in_flight_age_ns); }, nullptr},
    {"ncclscope_comm_stalled", "1 when the stall watch flagged this communicator", kGauge, kBasic,
     [](const CommSnapshot& c) { return c.stalled ? 1.0 : 0.0; }, nullptr},
    {"ncclscope_comm_completion_seen",
     "How this rank sees its operations finish (value 1): by=\"kernel\" (KernelCh events), \"network\" (KernelCh off: "
     "a stall shows only as ncclscope's still connections), \"none\" (KernelCh off and no ncclscope connection: a "
     "hang is not seen)",
     kGauge, kBasic, nullptr, EmitCompletionSeen},
    {"ncclscope_comm_wait_seconds",
     "Stalled communicators only: where the oldest operation waits (class host, peer, kernel or launched; for peer, "
     "whom and on which NIC) and for how long",
     kGauge, kBasic, nullptr, EmitWait},
    {"ncclscope_comm_wait_last_seq",
     "Stalled communicators only: ncclscope_comm_last_seq{kind=\"coll\"}, the collectives this waiting rank issued",
     kGauge, kBasic, nullptr, EmitWaitLastSeq},
    {"ncclscope_comm_idle_last_seq",
     "Only while this rank has had nothing in flight on any communicator for the stall floor "
     "(NCCLSCOPE_STALL_FLOOR_MS) or more: ncclscope_comm_last_seq{kind=\"coll\"} of each communicator (by: as in "
     "ncclscope_comm_completion_seen)",
     kGauge, kBasic, nullptr, EmitIdleLastSeq},
    {"ncclscope_comm_dropped_events_total", "Profiler events dropped", kCounter, kBasic,  // present while zero
     [](const CommSnapshot& c) { return static_cast<double>(Sum(c.dropped)); }, nullptr},
    {"ncclscope_comm_operations_by_size_total",
     "Operations by function and size class (size_le: the power-of-four upper bound)", kCounter, kDetailed, nullptr,
     EmitBySize},
    {"ncclscope_comm_operation_duration_seconds",
     "Operation latency timed on the GPU (KernelCh) or by the proxy, per communicator", kHistogram, kDetailed,
     nullptr, EmitCommLatency},
    {"ncclscope_comm_enqueue_seconds_total", "Host time spent enqueuing operations that had no GPU or proxy timing",
     kCounter, kDetailed, nullptr, EmitEnqueueSeconds},
    {"ncclscope_comm_p2p_started_total",
     "Point-to-point operations started per peer and direction (the busiest NCCLSCOPE_METRICS_P2P_PEERS peers; the "
     "rest as peer=\"other\")",
     kCounter, kDetailed, nullptr, EmitPeerStarted},
    {"ncclscope_comm_dropped_events_by_reason_total", "Profiler events dropped, by reason", kCounter, kDetailed,
     nullptr, EmitDroppedByReason},
    {"ncclscope_comm_flight_recorder_overwritten_total",
     "Operations older than the flight recorder's window (the last NCCLSCOPE_FR_DEPTH to arrive)", kCounter,
     kDetailed, [](const CommSnapshot& c) { return static_cast<double>(c.fr_overwritten); }, nullptr},
    {"ncclscope_comm_kernel_phase_seconds_total",
     "v7 KernelPhase time per phase (initial_sync, compute, final_sync), the longest channel's", kCounter, kDetailed,
     nullptr, EmitPhases},
    {"ncclscope_comm_symmetric_barrier_seconds_total",
     "v7: initial_sync of symmetric collectives, the time this rank waited for the others", kCounter, kDetailed,
     nullptr, EmitBarrier},
    {"ncclscope_comm_symmetric_operations_total", "v7: symmetric collectives that reported kernel phases", kCounter,
     kDetailed, nullptr, EmitBarrierOps},
    {"ncclscope_comm_tag_operations_total",
     "Operations per v7 user tag (the first tags of a communicator; the rest as tag=\"other\")", kCounter, kFull,
     nullptr, EmitTag<&TagTotals::ops>},
    {"ncclscope_comm_tag_bytes_total", "Bytes per v7 user tag", kCounter, kFull, nullptr,
     EmitTag<&TagTotals::bytes>},
};
const ProcessRow kProcessRows[] = {
    {"ncclscope_operation_duration_seconds",
     "Operation latency timed on the GPU (KernelCh) or by the proxy, per process and operation type", kHistogram,
     kBasic, EmitProcessLatency},
    {"ncclscope_profiler_dropped_events_total",
     "Profiler events dropped outside any communicator (NULL context, PXN, ...)", kCounter, kBasic,
     EmitProcessDropped},
    {"ncclscope_profiler_dropped_events_by_reason_total", "Profiler events dropped outside any communicator, by reason",
     kCounter, kDetailed, EmitProcessDroppedByReason},
};

CommView MakeView(const CommSnapshot& c, bool detailed, bool rank_idle, ProcessView* process) {
  CommView v{&c, detailed, rank_idle, {{"comm", Hex0x16(c.comm_hash)}, {"rank", std::to_string(c.rank)}}, {}, {}, {}, {}};
  for (const AggregateCell& cell : c.aggregates) {
    const auto key = detailed ? std::make_tuple(cell.kind, cell.func, cell.algo, cell.proto)
                              : std::make_tuple(cell.kind, Func::kOther, Algo::kNone, Proto::kNone);
    Accumulate(&v.counters[key], cell);
    Accumulate(&v.by_kind[cell.kind], cell);
    Accumulate(&v.by_func[cell.func], cell);
    Accumulate(&process->latency[{cell.kind, cell.func}], cell);
    if (detailed) v.sized[{cell.func, SizeLabel(cell.size_class)}] += cell.count;
  }
  return v;
}

// Idle on every live communicator (at least one) for the stall floor or more: the rank issues nothing, waits in
// nothing, so a communicator others wait in is one it did not join.
bool RankIdle(const ProcessSnapshot& snap) {
  const uint64_t floor_ns = static_cast<uint64_t>(Params().Int(ParamId::kStallFloorMs)) * 1'000'000;
  bool any = false;
  for (const CommSnapshot& c : snap.comms) {
    if (c.finalized) continue;
    if (c.idle_ns < floor_ns) return false;
    any = true;
  }
  return any;
}

}  // namespace

void AppendProfilerFamilies(std::vector<MetricFamily>* out) {
  ProcessSnapshot snap = CommRegistry::Instance().Snapshot(SnapshotScope::kWithoutRecorder);
  const bool rank_idle = RankIdle(snap);
  // Destroyed communicators' final totals, newest first; a (comm, rank) that is live again, or retired twice,
  // is exported once (the exposition must not repeat a series).
  std::set<std::pair<uint64_t, int>> seen;
  for (const CommSnapshot& c : snap.comms) seen.insert({c.comm_hash, c.rank});
  std::vector<CommSnapshot> retired = RetiredComms();
  for (auto it = retired.rbegin(); it != retired.rend(); ++it) {
    if (seen.insert({it->comm_hash, it->rank}).second) snap.comms.push_back(std::move(*it));
  }
  SharedP2pPeerFold().Retain(seen);  // communicators gone from both lists
  const prom::Level level = prom::CurrentLevel();
  const bool detailed = level >= prom::Level::kDetailed;
  ProcessView process{&snap, detailed, {}};
  std::vector<CommView> views;
  views.reserve(snap.comms.size());
  for (const CommSnapshot& c : snap.comms) views.push_back(MakeView(c, detailed, rank_idle, &process));

  auto keep = [out](MetricFamily f) {
    if (!f.metric.empty()) out->push_back(std::move(f));
  };
  for (const CommRow& row : kCommRows) {
    if (row.level > level) continue;
    MetricFamily f = prom::Family(row.name, row.help, row.type);
    for (const CommView& v : views) {
      if (row.emit != nullptr) {
        row.emit(v, &f);
      } else if (row.type == MetricType::Counter) {
        prom::AddCounter(&f, row.read(*v.c), v.base);
      } else {
        prom::AddGauge(&f, row.read(*v.c), v.base);
      }
    }
    keep(std::move(f));
  }
  for (const ProcessRow& row : kProcessRows) {
    if (row.level > level) continue;
    MetricFamily f = prom::Family(row.name, row.help, row.type);
    row.emit(process, &f);
    keep(std::move(f));
  }
}

}  // namespace ncclscope
