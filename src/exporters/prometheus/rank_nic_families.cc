// Which of the host's NICs this rank's traffic uses, and whether that is exact or inferred (host_nics/rank_nics.h).
// The NIC counters are the host's (host_families.cc, one process per host); this is what ties them to ranks:
//   ncclscope_host_rdma_port_retransmit_events_total * on(ncclscope_job, host, device, port)
//     group_right ncclscope_rank_nic_info
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"

namespace ncclscope {

void AppendRankNicFamilies(const RankNics& nics, std::vector<prometheus::ClientMetric::Label>* process_labels,
                           std::vector<prometheus::MetricFamily>* out) {
  process_labels->push_back({"nics", RankNicsLabel(nics)});
  process_labels->push_back({"nic_mapping", NicMappingName(nics.mapping)});
  if (prom::CurrentLevel() < prom::Level::kDetailed || nics.nics.empty()) return;
  auto info = prom::Family("ncclscope_rank_nic_info",
                           "A NIC this rank's traffic uses (detailed level; value is always 1): mapping says how it "
                           "is known (exact where ncclscope carries or wraps the transport, inferred otherwise), "
                           "pci_path the PCI path from the rank's GPU (PIX … SYS, \"\" unknown)",
                           prometheus::MetricType::Gauge);
  for (const RankNic& n : nics.nics) {
    prom::AddGauge(&info, 1,
                   {{"device", n.device}, {"port", n.device.empty() ? "" : std::to_string(n.port)},
                    {"netdev", n.netdev}, {"mapping", NicMappingName(nics.mapping)},
                    {"pci_path", n.from_gpu ? PciPathTypeName(n.from_gpu->type) : ""}});
  }
  out->push_back(std::move(info));
}

}  // namespace ncclscope
