// Net-half metric families from SnapshotNetStats(): NIC totals as ncclscope_nic_*, and at the full level the
// communicator rows as ncclscope_comm_net_* (separate names so that sum() over any family never counts a byte
// twice). Rows come from our own transports (nic = interface or device name) and from NCCL IB's QP profiler
// events (nic="nccl-ib<N>", src/profiler/net_ib_accounting.cc); the two never describe the same bytes.
#include <map>

#include "core/net_links.h"
#include "core/net_stats.h"
#include "common/hex.h"
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"
#include "nic_view/rank_nic_view.h"

namespace ncclscope {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

// A family per counter block group: one series per row whose value `read` gives, or whose series `emit` adds.
struct NetRow {
  const char* suffix;  // after ncclscope_nic_ or ncclscope_comm_net_
  const char* help;
  MetricType type;
  prom::Level level;
  double (*read)(const NetStatsRow&);
  void (*emit)(const NetStatsRow&, const prom::Labels&, bool detailed, MetricFamily*);
};

// Errors by kind from the detailed level on, one total below it.
void EmitErrors(const NetStatsRow& row, const prom::Labels& labels, bool detailed, MetricFamily* f) {
  if (!detailed) {
    uint64_t total = 0;
    for (uint64_t n : row.errors) total += n;
    prom::AddCounter(f, static_cast<double>(total), labels);
    return;
  }
  for (int k = 0; k < static_cast<int>(NetErrorKind::kCount); ++k) {
    prom::Labels with_kind = labels;
    with_kind.push_back({"kind", NetErrorKindName(static_cast<NetErrorKind>(k))});
    prom::AddCounter(f, static_cast<double>(row.errors[k]), std::move(with_kind));
  }
}
void EmitLatency(const NetStatsRow& row, const prom::Labels& labels, bool, MetricFamily* f) {
  prom::AddLog2Histogram(f, row.latency_log2_ns, prom::kFineBounds, static_cast<double>(row.latency_sum_ns), labels);
}

constexpr auto kBasic = prom::Level::kBasic, kDetailed = prom::Level::kDetailed;

// Families in exposition order; a row above the scrape's level, or without series, is left out.
const NetRow kNetRows[] = {
    {"sent_bytes_total", "Bytes sent (ncclscope transports; nic=nccl-ib<N>: NCCL IB QP profiler events)",
     MetricType::Counter, kBasic, [](const NetStatsRow& r) { return static_cast<double>(r.bytes_sent); }, nullptr},
    {"received_bytes_total", "Bytes received (ncclscope transports; nic=nccl-ib<N>: NCCL IB QP profiler events)",
     MetricType::Counter, kBasic, [](const NetStatsRow& r) { return static_cast<double>(r.bytes_received); }, nullptr},
    {"sent_messages_total", "Messages (isend requests) completed", MetricType::Counter, kBasic,
     [](const NetStatsRow& r) { return static_cast<double>(r.messages_sent); }, nullptr},
    {"received_messages_total", "Messages received (irecv buffers) completed", MetricType::Counter, kBasic,
     [](const NetStatsRow& r) { return static_cast<double>(r.messages_received); }, nullptr},
    {"requests_in_flight", "Requests posted and not yet completed", MetricType::Gauge, kBasic,
     [](const NetStatsRow& r) { return static_cast<double>(r.in_flight); }, nullptr},
    {"waiting_seconds",
     "Seconds the requests in flight have waited with none completing (0 when none is in flight): grows on a stuck "
     "link or peer", MetricType::Gauge, kBasic,
     [](const NetStatsRow& r) { return static_cast<double>(r.waiting_ns) / 1e9; }, nullptr},
    {"connections_open", "Open send and receive connections", MetricType::Gauge, kDetailed,
     [](const NetStatsRow& r) { return static_cast<double>(r.connections_open); }, nullptr},
    {"errors_total", "Network errors (by kind from the detailed level on)", MetricType::Counter, kBasic, nullptr,
     EmitErrors},
    {"completion_latency_seconds",
     "Request completion latency, post to test() done (nccl-ib<N>: per QP work request)", MetricType::Histogram,
     kDetailed, nullptr, EmitLatency},
};

// What the kernel's TCP says of the TCP transport's connections per NIC: retransmissions rise on a lossy or
// overfull link (a rate-limited one drops), and the round-trip time grows with the queue in front of it.
void AppendTcpFamilies(std::vector<MetricFamily>* out) {
  auto retransmits = prom::Family("ncclscope_nic_tcp_retransmits_total",
                                  "Segments the kernel retransmitted on this process's TCP connections over the NIC, "
                                  "whoever opened them: ncclscope's transport, a wrapped plugin, NCCL's socket "
                                  "transport (TCP_INFO; closed connections included)", MetricType::Counter);
  auto rtt = prom::Family("ncclscope_nic_tcp_rtt_seconds",
                          "The largest smoothed round-trip time of this process's open TCP connections over the NIC "
                          "(TCP_INFO)", MetricType::Gauge);
  const std::vector<NicTcpInfo> ours = SnapshotNicTcpInfo();
  for (const NicTcpInfo& t : ours) {
    if (t.connections > 0) prom::AddGauge(&rtt, t.rtt_max_s, {{"nic", t.nic}});
  }
  for (const auto& [nic, n] : TcpRetransmitsByNic(ours)) {
    prom::AddCounter(&retransmits, static_cast<double>(n), {{"nic", nic}});
  }
  if (!retransmits.metric.empty()) out->push_back(std::move(retransmits));
  if (!rtt.metric.empty()) out->push_back(std::move(rtt));
}

}  // namespace

void AppendNetFamilies(const NetStatsSnapshot& snap, std::vector<MetricFamily>* out) {
  const prom::Level level = prom::CurrentLevel();
  const bool detailed = level >= prom::Level::kDetailed, full = level == prom::Level::kFull;
  struct Group {
    const char* prefix;
    bool nic_total;
  };
  for (const Group g : {Group{"ncclscope_nic_", true}, Group{"ncclscope_comm_net_", false}}) {
    if (!g.nic_total && !full) continue;
    for (const NetRow& r : kNetRows) {
      if (r.level > level) continue;
      const std::string name = std::string(g.prefix) + r.suffix;
      MetricFamily f = prom::Family(name.c_str(), r.help, r.type);
      for (const NetStatsRow& row : snap.rows) {
        if (row.nic_total != g.nic_total) continue;
        prom::Labels labels = {{"nic", row.nic}};
        if (!g.nic_total) labels.push_back({"comm", Hex0x16(row.comm_id)});
        if (r.emit != nullptr) {
          r.emit(row, labels, detailed, &f);
        } else if (r.type == MetricType::Counter) {
          prom::AddCounter(&f, r.read(row), labels);
        } else {
          prom::AddGauge(&f, r.read(row), labels);
        }
      }
      if (!f.metric.empty()) out->push_back(std::move(f));
    }
  }
  // One info series per NIC a transport described: joins the counters above with the fabric's rails and
  // planes (v12 railId/planeId from NCCL_IB_HCA; empty when not given).
  auto info = prom::Family("ncclscope_nic_info", "A NIC of ncclscope's transports: rail and plane as NCCL sees them",
                           MetricType::Gauge);
  for (const NicIdentity& id : snap.nics) {
    auto id_label = [](int v) { return v >= 0 ? std::to_string(v) : std::string(); };
    prom::AddGauge(&info, 1,
                   {{"nic", id.nic}, {"transport", id.transport}, {"rail", id_label(id.rail)}, {"plane", id_label(id.plane)}});
  }
  if (!info.metric.empty()) out->push_back(std::move(info));
  AppendTcpFamilies(out);
}

}  // namespace ncclscope
