// The host's NIC counters (host_nics/host_nics.h) as ncclscope_host_*: exported by the one process of the job
// that speaks for the host, whoever carries the data (NCCL's own IB transport included). Per RDMA port: bytes,
// and the retransmission, congestion and error events (summed at the basic level, by the driver's counter name
// from the detailed level on); per network interface: the kernel's statistics (at the basic level only the
// interfaces not under an RDMA port: the port's own counters tell more). docs/metrics.md, "The host's NICs",
// lists the families and their series.
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"
#include "host_nics/host_nics.h"

#include <iterator>

namespace ncclscope {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

prom::Labels PortLabels(const RdmaPort& p) { return {{"device", p.device}, {"port", std::to_string(p.port)}}; }

void AppendIfAny(MetricFamily f, std::vector<MetricFamily>* out) {
  if (!f.metric.empty()) out->push_back(std::move(f));
}

void AppendRdmaFamilies(const std::vector<RdmaPort>& ports, prom::Level level, std::vector<MetricFamily>* out) {
  auto info = prom::Family("ncclscope_host_rdma_port_info",
                           "An RDMA port of this host: its network interface, link layer, PCI address and NUMA node "
                           "(value is always 1)", MetricType::Gauge);
  auto active = prom::Family("ncclscope_host_rdma_port_active", "1 when the port's state is ACTIVE", MetricType::Gauge);
  auto rate = prom::Family("ncclscope_host_rdma_port_rate_bytes_per_second",
                           "The port's negotiated link rate (lower than its peers': retrained to a lower speed)",
                           MetricType::Gauge);
  auto bytes = prom::Family("ncclscope_host_rdma_port_bytes_total",
                            "Bytes through the port by direction, all of the host's traffic (counters/port_*_data, or "
                            "the driver's tx_bytes/rx_bytes)", MetricType::Counter);
  auto packets = prom::Family("ncclscope_host_rdma_port_packets_total",
                              "Packets through the port by direction (detailed level)",
                              MetricType::Counter);
  struct ByName {
    RdmaCounterKind kind;
    MetricFamily family;
  };
  ByName by_name[] = {
      {RdmaCounterKind::kRetransmit,
       prom::Family("ncclscope_host_rdma_port_retransmit_events_total",
                    "Retransmission events (by the driver's counter from the detailed level on (sequence errors, ACK timeouts, duplicates, RNR "
                    "retries): rising on a lossy link", MetricType::Counter)},
      {RdmaCounterKind::kCongestion,
       prom::Family("ncclscope_host_rdma_port_congestion_events_total",
                    "Congestion events (by the driver's counter from the detailed level on: ECN marks, CNPs sent and handled, transmit wait)",
                    MetricType::Counter)},
      {RdmaCounterKind::kError,
       prom::Family("ncclscope_host_rdma_port_error_events_total",
                    "Link and packet errors, discards and error completions (by the driver's counter from the detailed level on)",
                    MetricType::Counter)},
      {RdmaCounterKind::kOther,
       prom::Family("ncclscope_host_rdma_port_other_events_total",
                    "The driver's other counters (full metrics level only)", MetricType::Counter)},
  };
  const bool detailed = level >= prom::Level::kDetailed;
  for (const RdmaPort& p : ports) {
    prom::Labels labels = PortLabels(p);
    prom::Labels info_labels = labels;
    info_labels.push_back({"netdev", p.netdev});
    info_labels.push_back({"link_layer", p.link_layer});
    info_labels.push_back({"pci", p.pci});
    info_labels.push_back({"numa_node", p.numa_node >= 0 ? std::to_string(p.numa_node) : ""});
    prom::AddGauge(&info, 1, std::move(info_labels));
    prom::AddGauge(&active, p.active ? 1 : 0, labels);
    if (p.rate_bytes_per_s > 0) prom::AddGauge(&rate, p.rate_bytes_per_s, labels);
    // One series per direction: the first source wins (counters/ before hw_counters/), never both.
    bool seen[4] = {};
    uint64_t sums[std::size(by_name)] = {};
    bool any[std::size(by_name)] = {};
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
      if (c.kind == RdmaCounterKind::kOther && level < prom::Level::kFull) continue;
      for (size_t b = 0; b < std::size(by_name); ++b) {
        if (by_name[b].kind != c.kind) continue;
        if (!detailed) {  // the basic level sums a kind per port
          sums[b] += c.value;
          any[b] = true;
          continue;
        }
        prom::Labels with_name = labels;
        with_name.push_back({"counter", c.name});
        prom::AddCounter(&by_name[b].family, static_cast<double>(c.value), std::move(with_name));
      }
    }
    for (size_t b = 0; b < std::size(by_name); ++b) {
      if (any[b]) prom::AddCounter(&by_name[b].family, static_cast<double>(sums[b]), labels);
    }
  }
  for (MetricFamily* f : {&info, &active, &rate, &bytes, &packets}) AppendIfAny(std::move(*f), out);
  for (ByName& b : by_name) AppendIfAny(std::move(b.family), out);
}

void AppendNetdevFamilies(const std::vector<Netdev>& netdevs, const std::vector<RdmaPort>& ports, prom::Level level,
                          std::vector<MetricFamily>* out) {
  const bool detailed = level >= prom::Level::kDetailed;
  auto info = prom::Family("ncclscope_host_netdev_info",
                           "A network interface of this host: the RDMA device over it, PCI address and NUMA node (value "
                           "is always 1)", MetricType::Gauge);
  auto up = prom::Family("ncclscope_host_netdev_up", "1 when the interface is up", MetricType::Gauge);
  auto speed = prom::Family("ncclscope_host_netdev_speed_bytes_per_second",
                            "The negotiated link speed (detailed level)", MetricType::Gauge);
  auto carrier = prom::Family("ncclscope_host_netdev_carrier_changes_total",
                              "Link state changes (a down and an up count two): a flapping link", MetricType::Counter);
  auto bytes = prom::Family("ncclscope_host_netdev_bytes_total", "Bytes by direction", MetricType::Counter);
  auto packets = prom::Family("ncclscope_host_netdev_packets_total", "Packets by direction (detailed level)",
                              MetricType::Counter);
  auto errors = prom::Family("ncclscope_host_netdev_errors_total",
                             "Receive and transmit errors (by direction from the detailed level on)", MetricType::Counter);
  auto dropped = prom::Family("ncclscope_host_netdev_dropped_total",
                              "Packets dropped (by direction from the detailed level on)", MetricType::Counter);
  for (const Netdev& d : netdevs) {
    std::string rdma_device;
    for (const RdmaPort& p : ports) {
      if (p.netdev == d.name) rdma_device = p.device;
    }
    if (!rdma_device.empty() && !detailed) continue;  // the port's counters speak for it at the basic level
    const prom::Labels labels = {{"netdev", d.name}};
    prom::AddGauge(&info, 1,
                   {{"netdev", d.name}, {"rdma_device", rdma_device}, {"pci", d.pci},
                    {"numa_node", d.numa_node >= 0 ? std::to_string(d.numa_node) : ""}});
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
  for (MetricFamily* f : {&info, &up, &speed, &carrier, &bytes, &packets, &errors, &dropped}) {
    AppendIfAny(std::move(*f), out);
  }
}

}  // namespace

void AppendHostFamilies(std::vector<MetricFamily>* out) {
  HostNics nics;
  if (!ReadHostNicsIfSpeaker(&nics)) return;
  const prom::Level level = prom::CurrentLevel();
  AppendRdmaFamilies(nics.rdma, level, out);
  AppendNetdevFamilies(nics.netdevs, nics.rdma, level, out);
}

}  // namespace ncclscope
