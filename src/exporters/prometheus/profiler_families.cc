// Profiler-half metric families from the live-communicator registry's snapshot, at the detail level of
// NCCLSCOPE_METRICS_LEVEL (docs/metrics.md). The basic level keeps a handful of series per communicator, so a
// 10,000-GPU job stays within what a Prometheus tenant holds; richer levels split the same families by
// function, algorithm and protocol (never under another name, so sum() never counts twice) and add families.
#include <map>
#include <set>
#include <tuple>

#include "common/hex.h"
#include "core/registry.h"
#include "core/snapshot.h"
#include "core/tag_names.h"
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"
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

}  // namespace

void AppendProfilerFamilies(std::vector<prometheus::MetricFamily>* out) {
  ProcessSnapshot snap = CommRegistry::Instance().Snapshot(SnapshotScope::kWithoutRecorder);
  // Destroyed communicators' final totals, newest first; a (comm, rank) that is live again, or retired twice,
  // is exported once (the exposition must not repeat a series).
  std::set<std::pair<uint64_t, int>> seen;
  for (const CommSnapshot& c : snap.comms) seen.insert({c.comm_hash, c.rank});
  std::vector<CommSnapshot> retired = RetiredComms();
  for (auto it = retired.rbegin(); it != retired.rend(); ++it) {
    if (seen.insert({it->comm_hash, it->rank}).second) snap.comms.push_back(std::move(*it));
  }
  const prom::Level level = prom::CurrentLevel();
  const bool detailed = level >= prom::Level::kDetailed, full = level == prom::Level::kFull;

  auto info = prom::Family("ncclscope_comm_info", "Live communicator metadata (value is always 1)", MetricType::Gauge);
  auto ops = prom::Family("ncclscope_comm_operations_total", "Collective and point-to-point operations completed",
                          MetricType::Counter);
  auto bytes = prom::Family("ncclscope_comm_bytes_total", "Operation bytes (nccl-tests byte base)", MetricType::Counter);
  auto bus = prom::Family("ncclscope_comm_bus_bytes_total",
                          "Collective bytes times the nccl-tests bus factor: rate() over this / rate() of "
                          "ncclscope_comm_operation_seconds_total{kind=\"coll\"} = bus bandwidth",
                          MetricType::Counter);
  auto seconds = prom::Family("ncclscope_comm_operation_seconds_total",
                              "GPU- or proxy-timed seconds inside operations, waiting for peers included: the rank "
                              "with the least per operation is the one the others wait for",
                              MetricType::Counter);
  auto last_seq = prom::Family("ncclscope_comm_last_seq",
                               "Progress: coll = sum over functions of the largest sequence number; p2p = operations "
                               "started, all peers and directions",
                               MetricType::Gauge);
  auto in_flight = prom::Family("ncclscope_comm_in_flight_operations", "Operations enqueued and not completed",
                                MetricType::Gauge);
  auto oldest = prom::Family("ncclscope_comm_oldest_in_flight_age_seconds", "Age of the oldest in-flight operation",
                             MetricType::Gauge);
  auto stalled = prom::Family("ncclscope_comm_stalled", "1 when the stall watch flagged this communicator",
                              MetricType::Gauge);
  auto dropped = prom::Family("ncclscope_comm_dropped_events_total", "Profiler events dropped", MetricType::Counter);
  // Detailed.
  auto by_size = prom::Family("ncclscope_comm_operations_by_size_total",
                              "Operations by function and size class (size_le: the power-of-four upper bound)",
                              MetricType::Counter);
  auto comm_lat = prom::Family("ncclscope_comm_operation_duration_seconds",
                               "Operation latency timed on the GPU (KernelCh) or by the proxy, per communicator",
                               MetricType::Histogram);
  auto cpu = prom::Family("ncclscope_comm_enqueue_seconds_total",
                          "Host time spent enqueuing operations that had no GPU or proxy timing", MetricType::Counter);
  auto peer_seq = prom::Family("ncclscope_comm_p2p_started_total",
                               "Point-to-point operations started per peer and direction", MetricType::Counter);
  auto dropped_by = prom::Family("ncclscope_comm_dropped_events_by_reason_total", "Profiler events dropped, by reason",
                                 MetricType::Counter);
  auto overwritten = prom::Family("ncclscope_comm_flight_recorder_overwritten_total",
                                  "Operations older than the flight recorder's window (the last NCCLSCOPE_FR_DEPTH to arrive)",
                                  MetricType::Counter);
  auto phases = prom::Family("ncclscope_comm_kernel_phase_seconds_total",
                             "v7 KernelPhase time per phase (initial_sync, compute, final_sync), the longest channel's",
                             MetricType::Counter);
  auto barrier = prom::Family("ncclscope_comm_symmetric_barrier_seconds_total",
                              "v7: initial_sync of symmetric collectives, the time this rank waited for the others",
                              MetricType::Counter);
  auto barrier_ops = prom::Family("ncclscope_comm_symmetric_operations_total",
                                  "v7: symmetric collectives that reported kernel phases", MetricType::Counter);
  // Full.
  auto tag_ops = prom::Family("ncclscope_comm_tag_operations_total",
                              "Operations per v7 user tag (the first tags of a communicator; the rest as tag=\"other\")",
                              MetricType::Counter);
  auto tag_bytes = prom::Family("ncclscope_comm_tag_bytes_total", "Bytes per v7 user tag", MetricType::Counter);

  // Per process: latency by operation type, summed over communicators (basic: coarse buckets).
  std::map<std::pair<OpKind, Func>, AggregateCell> process_latency;

  for (const CommSnapshot& c : snap.comms) {
    const prom::Labels base = {{"comm", Hex0x16(c.comm_hash)}, {"rank", std::to_string(c.rank)}};
    auto with = [&base](std::initializer_list<prometheus::ClientMetric::Label> extra) {
      prom::Labels l = base;
      l.insert(l.end(), extra);
      return l;
    };
    prom::AddGauge(&info, 1,
                   with({{"comm_name", c.has_name ? c.comm_name : ""},
                         {"nranks", std::to_string(c.nranks)},
                         {"nnodes", std::to_string(c.nnodes)},
                         {"abi", c.abi}}));
    // Counters per kind (basic) or per kind × function × algorithm × protocol (detailed).
    std::map<std::tuple<OpKind, Func, Algo, Proto>, AggregateCell> counters;
    std::map<OpKind, AggregateCell> by_kind;
    std::map<Func, AggregateCell> by_func;
    std::map<std::pair<Func, std::string>, uint64_t> sized;
    for (const AggregateCell& cell : c.aggregates) {
      const auto key = detailed ? std::make_tuple(cell.kind, cell.func, cell.algo, cell.proto)
                                : std::make_tuple(cell.kind, Func::kOther, Algo::kNone, Proto::kNone);
      Accumulate(&counters[key], cell);
      Accumulate(&by_kind[cell.kind], cell);
      Accumulate(&by_func[cell.func], cell);
      Accumulate(&process_latency[{cell.kind, cell.func}], cell);
      if (detailed) sized[{cell.func, SizeLabel(cell.size_class)}] += cell.count;
    }
    for (const auto& [key, a] : counters) {
      const auto& [kind, func, algo, proto] = key;
      prom::Labels l = with({{"kind", KindName(kind)}});
      if (detailed) l.insert(l.end(), {{"func", FuncName(func)}, {"algo", AlgoName(algo)}, {"proto", ProtoName(proto)}});
      prom::AddCounter(&ops, static_cast<double>(a.count), l);
      prom::AddCounter(&bytes, static_cast<double>(a.bytes), l);
      if (kind == OpKind::kColl) {
        l.erase(l.begin() + 2);  // bus bytes exist for collectives only: no kind label
        prom::AddCounter(&bus, static_cast<double>(a.bus_bytes), l);
      }
    }
    for (const auto& [kind, a] : by_kind) {
      prom::AddCounter(&seconds, static_cast<double>(a.latency_sum_ns) / 1e9, with({{"kind", KindName(kind)}}));
    }
    // Progress, visible for both kinds at every level (a point-to-point hang shows as a p2p lag).
    uint64_t coll_seq = 0, p2p_started = 0;
    for (const OpTotals& t : c.ops) {
      if (t.kind != OpKind::kColl) continue;
      if (detailed) {
        prom::AddGauge(&last_seq, static_cast<double>(t.last_seq), with({{"kind", "coll"}, {"func", FuncName(t.func)}}));
      }
      coll_seq += t.last_seq;
    }
    for (const PeerProgress& p : c.p2p_peers) {
      p2p_started += p.started;
      if (detailed) {
        prom::AddCounter(&peer_seq, static_cast<double>(p.started),
                         with({{"peer", std::to_string(p.peer)}, {"direction", p.send ? "send" : "recv"}}));
      }
    }
    if (!detailed) prom::AddGauge(&last_seq, static_cast<double>(coll_seq), with({{"kind", "coll"}}));
    prom::AddGauge(&last_seq, static_cast<double>(p2p_started), with({{"kind", "p2p"}}));
    prom::AddGauge(&in_flight, c.in_flight_count, base);
    prom::AddGauge(&oldest, static_cast<double>(c.oldest_in_flight_age_ns) / 1e9, base);
    prom::AddGauge(&stalled, c.stalled ? 1 : 0, base);
    prom::AddCounter(&dropped, static_cast<double>(Sum(c.dropped)), base);  // present while zero
    if (detailed) {
      for (const auto& [func, f] : by_func) {
        prom::AddLog2Histogram(&comm_lat, f.latency_buckets, prom::kMediumBounds, static_cast<double>(f.latency_sum_ns),
                               with({{"func", FuncName(func)}}));
        prom::AddCounter(&cpu, static_cast<double>(f.cpu_sum_ns) / 1e9, with({{"func", FuncName(func)}}));
      }
      for (const auto& [key, n] : sized) {
        prom::AddCounter(&by_size, static_cast<double>(n), with({{"func", FuncName(key.first)}, {"size_le", key.second}}));
      }
      for (const auto& [reason, n] : c.dropped) {
        prom::AddCounter(&dropped_by, static_cast<double>(n), with({{"reason", reason}}));
      }
      prom::AddCounter(&overwritten, static_cast<double>(c.fr_overwritten), base);
      if (c.phase_ops != 0) {
        static const char* kPhaseNames[] = {"initial_sync", "compute", "final_sync"};
        for (int i = 0; i < 3; ++i) {
          prom::AddCounter(&phases, static_cast<double>(c.phase_sum_ns[i]) / 1e9, with({{"phase", kPhaseNames[i]}}));
        }
      }
      if (c.symmetric_ops != 0) {
        prom::AddCounter(&barrier, static_cast<double>(c.symmetric_barrier_ns) / 1e9, base);
        prom::AddCounter(&barrier_ops, static_cast<double>(c.symmetric_ops), base);
      }
    }
    if (full) {
      // tag_name: NCCLSCOPE_TAG_NAMES's name for the tag, "" (the same as no label) when it names none.
      for (const TagTotals& t : c.tags) {
        const auto labels = with({{"tag", Hex0x16(t.tag)}, {"tag_name", TagName(t.tag)}});
        prom::AddCounter(&tag_ops, static_cast<double>(t.ops), labels);
        prom::AddCounter(&tag_bytes, static_cast<double>(t.bytes), labels);
      }
      if (c.tags_other.ops != 0) {
        const auto labels = with({{"tag", "other"}, {"tag_name", ""}});
        prom::AddCounter(&tag_ops, static_cast<double>(c.tags_other.ops), labels);
        prom::AddCounter(&tag_bytes, static_cast<double>(c.tags_other.bytes), labels);
      }
    }
  }

  auto latency = prom::Family("ncclscope_operation_duration_seconds",
                              "Operation latency timed on the GPU (KernelCh) or by the proxy, per process and "
                              "operation type",
                              MetricType::Histogram);
  for (const auto& [key, a] : process_latency) {
    prom::AddLog2Histogram(&latency, a.latency_buckets, detailed ? prom::kFineBounds : prom::kCoarseBounds,
                           static_cast<double>(a.latency_sum_ns),
                           {{"kind", KindName(key.first)}, {"func", FuncName(key.second)}});
  }
  auto process_dropped = prom::Family("ncclscope_profiler_dropped_events_total",
                                      "Profiler events dropped outside any communicator (NULL context, PXN, ...)",
                                      MetricType::Counter);
  prom::AddCounter(&process_dropped, static_cast<double>(Sum(snap.process_dropped)), {});  // present while zero
  auto process_dropped_by = prom::Family("ncclscope_profiler_dropped_events_by_reason_total",
                                         "Profiler events dropped outside any communicator, by reason",
                                         MetricType::Counter);
  if (detailed) {
    for (const auto& [reason, n] : snap.process_dropped) {
      prom::AddCounter(&process_dropped_by, static_cast<double>(n), {{"reason", reason}});
    }
  }
  for (auto* f : {&info, &ops, &bytes, &bus, &seconds, &last_seq, &in_flight, &oldest, &stalled, &dropped, &by_size,
                  &comm_lat, &cpu, &peer_seq, &dropped_by, &overwritten, &phases, &barrier, &barrier_ops, &tag_ops, &tag_bytes, &latency,
                  &process_dropped, &process_dropped_by}) {
    if (!f->metric.empty()) out->push_back(std::move(*f));
  }
}

}  // namespace ncclscope
