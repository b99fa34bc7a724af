// Net-half metric families from SnapshotNetStats(): NIC totals as ncclscope_nic_*, and at the full level the
// communicator rows as ncclscope_comm_net_* (separate names so that sum() over any family never counts a byte
// twice). Rows come from our own transports (nic = interface or device name) and from NCCL IB's QP profiler
// events (nic="nccl-ib<N>", src/profiler/net_ib_accounting.cc); the two never describe the same bytes.
#include "core/net_stats.h"
#include "common/hex.h"
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"

namespace ncclscope {

using prometheus::MetricType;

void AppendNetFamilies(std::vector<prometheus::MetricFamily>* out) {
  const NetStatsSnapshot snap = SnapshotNetStats();
  const prom::Level level = prom::CurrentLevel();
  const bool detailed = level >= prom::Level::kDetailed, full = level == prom::Level::kFull;
  struct Group {
    const char* prefix;
    bool nic_total;
  };
  for (const Group g : {Group{"ncclscope_nic_", true}, Group{"ncclscope_comm_net_", false}}) {
    if (!g.nic_total && !full) continue;
    auto name = [&](const char* suffix) { return std::string(g.prefix) + suffix; };
    std::string n_sent = name("sent_bytes_total"), n_recv = name("received_bytes_total"),
                n_msent = name("sent_messages_total"), n_mrecv = name("received_messages_total"),
                n_inflight = name("requests_in_flight"), n_conns = name("connections_open"),
                n_errors = name("errors_total"), n_lat = name("completion_latency_seconds");
    auto sent = prom::Family(n_sent.c_str(), "Bytes sent (ncclscope transports; nic=nccl-ib<N>: NCCL IB QP profiler events)", MetricType::Counter);
    auto recv = prom::Family(n_recv.c_str(), "Bytes received (ncclscope transports; nic=nccl-ib<N>: NCCL IB QP profiler events)", MetricType::Counter);
    auto msent = prom::Family(n_msent.c_str(), "Messages (isend requests) completed", MetricType::Counter);
    auto mrecv = prom::Family(n_mrecv.c_str(), "Messages received (irecv buffers) completed", MetricType::Counter);
    auto inflight = prom::Family(n_inflight.c_str(), "Requests posted and not yet completed", MetricType::Gauge);
    auto conns = prom::Family(n_conns.c_str(), "Open send and receive connections", MetricType::Gauge);
    auto errors = prom::Family(n_errors.c_str(), "Network errors (by kind from the detailed level on)", MetricType::Counter);
    auto lat = prom::Family(n_lat.c_str(), "Request completion latency, post to test() done (nccl-ib<N>: per QP work request)", MetricType::Histogram);
    for (const NetStatsRow& row : snap.rows) {
      if (row.nic_total != g.nic_total) continue;
      prom::Labels labels = {{"nic", row.nic}};
      if (!g.nic_total) labels.push_back({"comm", Hex0x16(row.comm_id)});
      prom::AddCounter(&sent, static_cast<double>(row.bytes_sent), labels);
      prom::AddCounter(&recv, static_cast<double>(row.bytes_received), labels);
      prom::AddCounter(&msent, static_cast<double>(row.messages_sent), labels);
      prom::AddCounter(&mrecv, static_cast<double>(row.messages_received), labels);
      prom::AddGauge(&inflight, static_cast<double>(row.in_flight), labels);
      if (detailed) {
        prom::AddGauge(&conns, static_cast<double>(row.connections_open), labels);
        for (int k = 0; k < static_cast<int>(NetErrorKind::kCount); ++k) {
          prom::Labels with_kind = labels;
          with_kind.push_back({"kind", NetErrorKindName(static_cast<NetErrorKind>(k))});
          prom::AddCounter(&errors, static_cast<double>(row.errors[k]), std::move(with_kind));
        }
        prom::AddLog2Histogram(&lat, row.latency_log2_ns, prom::kFineBounds, static_cast<double>(row.latency_sum_ns),
                               labels);
      } else {
        uint64_t total = 0;
        for (uint64_t n : row.errors) total += n;
        prom::AddCounter(&errors, static_cast<double>(total), labels);
      }
    }
    for (auto* f : {&sent, &recv, &msent, &mrecv, &inflight, &conns, &errors, &lat}) {
      if (!f->metric.empty()) out->push_back(std::move(*f));
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
}

}  // namespace ncclscope
