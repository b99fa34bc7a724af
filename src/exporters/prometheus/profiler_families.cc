// Profiler-half metric families from the live-communicator registry's snapshot. Labels stay within a small
// per-rank budget: communicator, rank and function (plus algorithm/protocol on counters); size classes stay
// in the dumps. The rank whose ncclscope_comm_last_seq lags is the one the others wait for.
#include <map>
#include <tuple>

#include "core/registry.h"
#include "core/snapshot.h"
#include "common/hex.h"
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"

namespace ncclscope {

using prometheus::MetricType;

void AppendProfilerFamilies(std::vector<prometheus::MetricFamily>* out) {
  const ProcessSnapshot snap = CommRegistry::Instance().Snapshot();
  auto info = prom::Family("ncclscope_comm_info", "Live communicator metadata (value is always 1)", MetricType::Gauge);
  auto ops = prom::Family("ncclscope_comm_operations_total", "Collective and point-to-point operations completed",
                          MetricType::Counter);
  auto bytes = prom::Family("ncclscope_comm_bytes_total", "Operation bytes (nccl-tests byte base)", MetricType::Counter);
  auto bus = prom::Family("ncclscope_comm_bus_bytes_total",
                          "Bytes times the nccl-tests bus factor: rate() over this / rate() of duration = bus bandwidth",
                          MetricType::Counter);
  auto lat = prom::Family("ncclscope_comm_operation_duration_seconds",
                          "Operation latency timed on the GPU (KernelCh) or by the proxy; never CPU enqueue time",
                          MetricType::Histogram);
  auto cpu = prom::Family("ncclscope_comm_enqueue_seconds_total",
                          "Host time spent enqueuing operations that had no GPU or proxy timing", MetricType::Counter);
  auto last_seq = prom::Family("ncclscope_comm_last_seq", "Largest collective sequence number seen per function",
                               MetricType::Gauge);
  auto in_flight = prom::Family("ncclscope_comm_in_flight_operations", "Operations enqueued and not completed",
                                MetricType::Gauge);
  auto oldest = prom::Family("ncclscope_comm_oldest_in_flight_age_seconds", "Age of the oldest in-flight operation",
                             MetricType::Gauge);
  auto stalled = prom::Family("ncclscope_comm_stalled", "1 when the stall watch flagged this communicator",
                              MetricType::Gauge);
  auto dropped = prom::Family("ncclscope_comm_dropped_events_total", "Profiler events dropped, by reason",
                              MetricType::Counter);
  auto overwritten = prom::Family("ncclscope_comm_flight_recorder_overwritten_total",
                                  "Completed operations overwritten in the flight recorder", MetricType::Counter);

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
    // Counters per function × algorithm × protocol; the latency histogram per function.
    std::map<std::tuple<std::string, std::string, std::string>, AggregateCell> by_algo;
    std::map<std::string, AggregateCell> by_func;
    for (const AggregateCell& cell : c.aggregates) {
      const std::string func = FuncName(cell.func);
      AggregateCell& a = by_algo[{func, AlgoName(cell.algo), ProtoName(cell.proto)}];
      AggregateCell& f = by_func[func];
      for (AggregateCell* t : {&a, &f}) {
        t->count += cell.count;
        t->bytes += cell.bytes;
        t->bus_bytes += cell.bus_bytes;
        t->latency_sum_ns += cell.latency_sum_ns;
        t->cpu_sum_ns += cell.cpu_sum_ns;
        t->latency_count += cell.latency_count;
        for (int b = 0; b < kLatencyBuckets; ++b) t->latency_buckets[b] += cell.latency_buckets[b];
      }
    }
    for (const auto& [key, a] : by_algo) {
      const auto& [func, algo, proto] = key;
      prom::Labels l = with({{"func", func}, {"algo", algo}, {"proto", proto}});
      prom::AddCounter(&ops, static_cast<double>(a.count), l);
      prom::AddCounter(&bytes, static_cast<double>(a.bytes), l);
      prom::AddCounter(&bus, static_cast<double>(a.bus_bytes), l);
    }
    for (const auto& [func, f] : by_func) {
      prom::AddLog2Histogram(&lat, f.latency_buckets, 10, 35, static_cast<double>(f.latency_sum_ns),
                             with({{"func", func}}));
      prom::AddCounter(&cpu, static_cast<double>(f.cpu_sum_ns) / 1e9, with({{"func", func}}));
    }
    for (const OpTotals& t : c.ops) {
      if (t.kind == OpKind::kColl) prom::AddGauge(&last_seq, static_cast<double>(t.last_seq), with({{"func", FuncName(t.func)}}));
    }
    prom::AddGauge(&in_flight, c.in_flight_count, base);
    prom::AddGauge(&oldest, static_cast<double>(c.oldest_in_flight_age_ns) / 1e9, base);
    prom::AddGauge(&stalled, c.stalled ? 1 : 0, base);
    prom::AddCounter(&overwritten, static_cast<double>(c.fr_overwritten), base);
    for (const auto& [reason, n] : c.dropped) prom::AddCounter(&dropped, static_cast<double>(n), with({{"reason", reason}}));
  }
  auto process_dropped = prom::Family("ncclscope_profiler_dropped_events_total",
                                      "Profiler events dropped outside any communicator (NULL context, PXN, ...)",
                                      MetricType::Counter);
  for (const auto& [reason, n] : snap.process_dropped) {
    prom::AddCounter(&process_dropped, static_cast<double>(n), {{"reason", reason}});
  }
  for (auto* f : {&info, &ops, &bytes, &bus, &lat, &cpu, &last_seq, &in_flight, &oldest, &stalled, &dropped,
                  &overwritten, &process_dropped}) {
    if (!f->metric.empty()) out->push_back(std::move(*f));
  }
}

}  // namespace ncclscope
