// The host's NIC counters (host_nics/host_nics.h) as ncclscope_host_*: exported by the one process of the job
// that speaks for the host, whoever carries the data (NCCL's own IB transport included). docs/metrics.md, "The
// host's NICs", lists the families and their series. The basic level keeps to 6 series per RDMA port (rate,
// bytes both ways, and the retransmission, congestion and error events each summed; a seventh, its link downs,
// from the port's first link down on), so that a host of 8 NICs adds 6 per rank; the detailed level names each
// driver counter and adds packets, the port's identity and the network interfaces under RDMA ports. Interfaces
// at the basic level: only on hosts without RDMA ports (TCP).
#include "exporters/prometheus/host_families.h"

#include "exporters/prometheus/metric_families.h"
#include "nic_view/rank_nic_view.h"

namespace ncclscope {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

void AppendIfAny(MetricFamily f, std::vector<MetricFamily>* out) {
  if (!f.metric.empty()) out->push_back(std::move(f));
}

std::string NumaLabel(int node) { return node >= 0 ? std::to_string(node) : ""; }

// Families of counters the driver names, one per kind: summed per port at the basic level, by name above it.
struct KindFamily {
  RdmaCounterKind kind;
  prom::Level level;  // the lowest level that exports it
  MetricFamily family;
};

std::string JoinedComma(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

void AppendRdmaFamilies(const HostNics& nics, prom::Level level, std::vector<MetricFamily>* out) {
  const std::vector<RdmaPort>& ports = nics.rdma;
  const bool detailed = level >= prom::Level::kDetailed;
  auto rate = prom::Family("ncclscope_host_rdma_port_rate_bytes_per_second",
                           "The port's negotiated link rate, 0 while the port is not ACTIVE (lower than its peers': "
                           "retrained to a lower speed)", MetricType::Gauge);
  auto bytes = prom::Family("ncclscope_host_rdma_port_bytes_total",
                            "Bytes through the port by direction, all of the host's traffic (counters/port_*_data, or "
                            "the driver's tx_bytes/rx_bytes)", MetricType::Counter);
  auto info = prom::Family("ncclscope_host_rdma_port_info",
                           "An RDMA port of this host: link layer, PCI address, NUMA node and the PCI addresses of the "
                           "GPUs it is nearest (detailed level; value is always 1)", MetricType::Gauge);
  auto link_downs = prom::Family("ncclscope_host_rdma_port_link_downs_total",
                                 "Times the port's link went down (link_downed) since this process first read it: a "
                                 "flapping link (below the detailed level only from the first one on)",
                                 MetricType::Counter);
  auto packets = prom::Family("ncclscope_host_rdma_port_packets_total",
                              "Packets through the port by direction (detailed level)", MetricType::Counter);
  KindFamily kinds[] = {
      {RdmaCounterKind::kRetransmit, prom::Level::kBasic,
       prom::Family("ncclscope_host_rdma_port_retransmit_events_total",
                    "Retransmission events, by the driver's counter from the detailed level on (sequence errors, ACK "
                    "timeouts, duplicates, RNR retries): rising on a lossy link", MetricType::Counter)},
      {RdmaCounterKind::kCongestion, prom::Level::kBasic,
       prom::Family("ncclscope_host_rdma_port_congestion_events_total",
                    "Congestion events, by the driver's counter from the detailed level on (ECN marks, CNPs sent and "
                    "handled, transmit wait)", MetricType::Counter)},
      {RdmaCounterKind::kError, prom::Level::kBasic,
       prom::Family("ncclscope_host_rdma_port_error_events_total",
                    "Link and packet errors, discards and error completions, by the driver's counter from the "
                    "detailed level on", MetricType::Counter)},
      {RdmaCounterKind::kOther, prom::Level::kFull,
       prom::Family("ncclscope_host_rdma_port_other_events_total", "The driver's other counters (full level)",
                    MetricType::Counter)},
  };
  for (size_t i = 0; i < ports.size(); ++i) {
    const RdmaPort& p = ports[i];
    const prom::Labels labels = {{"device", p.device}, {"port", std::to_string(p.port)}};
    prom::Labels with_netdev = labels;
    with_netdev.push_back({"netdev", p.netdev});
    if (!p.active || p.rate_bytes_per_s > 0) prom::AddGauge(&rate, p.active ? p.rate_bytes_per_s : 0, with_netdev);
    if (detailed) {
      prom::Labels id = labels;
      for (auto [name, value] : {std::pair<const char*, std::string>{"link_layer", p.link_layer},
                                 {"pci", p.location.pci}, {"numa_node", NumaLabel(p.location.numa_node)},
                                 {"nearest_gpus", i < nics.nearest_gpus.size() ? JoinedComma(nics.nearest_gpus[i])
                                                                                : ""}}) {
        id.push_back({name, value});
      }
      prom::AddGauge(&info, 1, std::move(id));
    }
    const std::optional<uint64_t> downs = i < nics.link_downs.size() ? nics.link_downs[i] : std::nullopt;
    if (downs && (*downs > 0 || detailed)) prom::AddCounter(&link_downs, static_cast<double>(*downs), labels);
    bool seen[4] = {};  // one series per direction: the first source wins (counters/ before hw_counters/)
    for (const RdmaCounter& c : p.counters) {
      const int k = static_cast<int>(c.kind);
      if (k <= static_cast<int>(RdmaCounterKind::kPacketsReceived)) {
        const bool is_bytes = c.kind == RdmaCounterKind::kBytesSent || c.kind == RdmaCounterKind::kBytesReceived;
        if (seen[k] || (!is_bytes && !detailed)) continue;
        seen[k] = true;
        prom::Labels with_dir = labels;
        const bool sent = c.kind == RdmaCounterKind::kBytesSent || c.kind == RdmaCounterKind::kPacketsSent;
        with_dir.push_back({"direction", sent ? "sent" : "received"});
        prom::AddCounter(is_bytes ? &bytes : &packets, static_cast<double>(c.value), std::move(with_dir));
        continue;
      }
      for (KindFamily& f : kinds) {
        if (f.kind != c.kind || f.level > level || !detailed) continue;
        prom::Labels with_name = labels;
        with_name.push_back({"counter", c.name});
        prom::AddCounter(&f.family, static_cast<double>(c.value), std::move(with_name));
      }
    }
    for (KindFamily& f : kinds) {
      const std::optional<uint64_t> sum = detailed ? std::nullopt : SumOfKind(p, f.kind);
      if (sum && f.level <= level) prom::AddCounter(&f.family, static_cast<double>(*sum), labels);
    }
  }
  for (MetricFamily* f : {&rate, &bytes, &link_downs, &info, &packets}) AppendIfAny(std::move(*f), out);
  for (KindFamily& k : kinds) AppendIfAny(std::move(k.family), out);
}

void AppendNetdevFamilies(const std::vector<Netdev>& netdevs, const std::vector<RdmaPort>& ports, prom::Level level,
                          std::vector<MetricFamily>* out) {
  const bool detailed = level >= prom::Level::kDetailed;
  if (!detailed && !ports.empty()) return;  // an RDMA host's ports speak for its links at the basic level
  auto info = prom::Family("ncclscope_host_netdev_info",
                           "A network interface of this host: the RDMA device over it, PCI address and NUMA node "
                           "(value is always 1)", MetricType::Gauge);
  auto up = prom::Family("ncclscope_host_netdev_up", "1 when the interface is up", MetricType::Gauge);
  auto carrier = prom::Family("ncclscope_host_netdev_carrier_changes_total",
                              "Link state changes (a down and an up count two): a flapping link", MetricType::Counter);
  auto bytes = prom::Family("ncclscope_host_netdev_bytes_total", "Bytes by direction", MetricType::Counter);
  auto errors = prom::Family("ncclscope_host_netdev_errors_total",
                             "Receive and transmit errors (by direction from the detailed level on)",
                             MetricType::Counter);
  auto dropped = prom::Family("ncclscope_host_netdev_dropped_total",
                              "Packets dropped (by direction from the detailed level on)", MetricType::Counter);
  auto speed = prom::Family("ncclscope_host_netdev_speed_bytes_per_second",
                            "The negotiated link speed (detailed level)", MetricType::Gauge);
  auto packets = prom::Family("ncclscope_host_netdev_packets_total", "Packets by direction (detailed level)",
                              MetricType::Counter);
  for (const Netdev& d : netdevs) {
    std::string rdma_device;
    for (const RdmaPort& p : ports) {
      if (p.netdev == d.name) rdma_device = p.device;
    }
    const prom::Labels labels = {{"netdev", d.name}};
    prom::AddGauge(&info, 1, {{"netdev", d.name}, {"rdma_device", rdma_device}, {"pci", d.location.pci},
                              {"numa_node", NumaLabel(d.location.numa_node)}});
    prom::AddGauge(&up, d.up ? 1 : 0, labels);
    prom::AddCounter(&carrier, static_cast<double>(d.carrier_changes), labels);
    auto both = [&](MetricFamily* f, uint64_t sent, uint64_t received) {
      prom::AddCounter(f, static_cast<double>(sent), {{"netdev", d.name}, {"direction", "sent"}});
      prom::AddCounter(f, static_cast<double>(received), {{"netdev", d.name}, {"direction", "received"}});
    };
    both(&bytes, d.tx_bytes, d.rx_bytes);
    if (!detailed) {
      prom::AddCounter(&errors, static_cast<double>(d.tx_errors + d.rx_errors), labels);
      prom::AddCounter(&dropped, static_cast<double>(d.tx_dropped + d.rx_dropped), labels);
      continue;
    }
    if (d.speed_bytes_per_s > 0) prom::AddGauge(&speed, d.speed_bytes_per_s, labels);
    both(&packets, d.tx_packets, d.rx_packets);
    both(&errors, d.tx_errors, d.rx_errors);
    both(&dropped, d.tx_dropped, d.rx_dropped);
  }
  for (MetricFamily* f : {&info, &up, &carrier, &bytes, &errors, &dropped, &speed, &packets}) {
    AppendIfAny(std::move(*f), out);
  }
}

}  // namespace

void AppendHostNicFamilies(const HostNics& nics, prom::Level level, std::vector<MetricFamily>* out) {
  AppendRdmaFamilies(nics, level, out);
  AppendNetdevFamilies(nics.netdevs, nics.rdma, level, out);
}

void AppendHostFamilies(const RankNics& rank_nics, std::vector<MetricFamily>* out) {
  HostNics nics;
  if (ReadHostNicsIfSpeaker(NetdevsOf(rank_nics), &nics)) AppendHostNicFamilies(nics, prom::CurrentLevel(), out);
}

}  // namespace ncclscope
