// Builds every ncclscope metric family from the current snapshots. Called at scrape time on the endpoint's
// server thread (http_server.h) and by the textfile writer; reads snapshots only, never NCCL state. Thread-safe.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_METRIC_FAMILIES_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_METRIC_FAMILIES_H_

#include <prometheus/metric_family.h>

#include <string>
#include <utility>
#include <vector>

#include "core/net_stats.h"
#include "host_nics/rank_nics.h"

namespace ncclscope {

// Where the identity labels (common/process_identity.h) go; docs/metrics.md, "Identity". Never both on the
// target and in the exposition.
enum class IdentityPlacement {
  kEndpoint,  // the HTTP exposition: unless the file_sd target carries them, on ncclscope_process_info, or on
              // every series with NCCLSCOPE_PROM_IDENTITY_LABELS=series
  kTextfile,  // none here: the textfile writer adds them, and pid, to every series; the OTLP push (a layer
              // above) makes them resource attributes
};
std::vector<prometheus::MetricFamily> CollectMetricFamilies(IdentityPlacement placement = IdentityPlacement::kEndpoint);

// Adds each label to every series of `families` that does not carry one of that name already.
void AddLabelsToEverySeries(const std::vector<std::pair<std::string, std::string>>& labels,
                            std::vector<prometheus::MetricFamily>* families);

// A layer above (the OTLP push) adds its own self-metric families to every collection through a source
// registered here, once per process; at most 4 sources. Each is called at the end of CollectMetricFamilies.
using FamilySource = void (*)(std::vector<prometheus::MetricFamily>* out);
void AddFamilySource(FamilySource source);

// Set by the endpoint once its file_sd target file (with the identity labels as target labels) is written.
void SetIdentityOnTarget(bool on);
bool IdentityOnTarget();

// The parts, one per snapshot source.
void AppendNetFamilies(const NetStatsSnapshot& net, std::vector<prometheus::MetricFamily>* out);
void AppendProfilerFamilies(std::vector<prometheus::MetricFamily>* out);
// The host's NIC counters, in the one process of the job that speaks for the host (host_families.cc); the
// interfaces `rank_nics` uses are among them whatever kind of device they are.
void AppendHostFamilies(const RankNics& rank_nics, std::vector<prometheus::MetricFamily>* out);
// Which NICs this rank uses (host_nics/rank_nics.h): as labels of ncclscope_process_info (`nics`,
// `nic_mapping`, `gpu_pci`: no series of their own at the basic level), and from the detailed level on as
// ncclscope_rank_nic_info, one series per NIC, for joins with the host's NIC counters (rank_nic_families.cc).
void AppendRankNicFamilies(const RankNics& nics, std::vector<prometheus::ClientMetric::Label>* process_labels,
                           std::vector<prometheus::MetricFamily>* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_METRIC_FAMILIES_H_
