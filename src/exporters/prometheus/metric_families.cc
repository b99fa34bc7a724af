#include "exporters/prometheus/metric_families.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "common/clock.h"
#include "common/nccl_version.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "nic_view/rank_nic_view.h"

namespace ncclscope {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Start time of this process's plugin, for `time() - ncclscope_process_start_time_seconds`.
const double kStartSeconds = static_cast<double>(RealtimeNs()) / 1e9;

std::atomic<bool> g_identity_on_target{false};
std::atomic<FamilySource> g_sources[4] = {};

MetricFamily Gauge(const char* name, const char* help) { return MetricFamily{name, help, MetricType::Gauge, {}}; }

ClientMetric GaugeValue(double value, std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

}  // namespace

void AddFamilySource(FamilySource source) {
  for (std::atomic<FamilySource>& slot : g_sources) {
    FamilySource empty = nullptr;
    if (slot.load(std::memory_order_acquire) == source) return;
    if (slot.compare_exchange_strong(empty, source, std::memory_order_acq_rel)) return;
  }
}

void SetIdentityOnTarget(bool on) { g_identity_on_target.store(on, std::memory_order_release); }
bool IdentityOnTarget() { return g_identity_on_target.load(std::memory_order_acquire); }

std::vector<MetricFamily> CollectMetricFamilies(IdentityPlacement placement) {
  std::vector<MetricFamily> out;
  MetricFamily build = Gauge("ncclscope_build_info", "ncclscope build metadata (value is always 1)");
  build.metric.push_back(GaugeValue(1, {{"version", NCCLSCOPE_VERSION}}));
  out.push_back(std::move(build));
  MetricFamily process = Gauge("ncclscope_process_info",
                               "This process: pid, the NCCL version it runs (empty when none is found), and the "
                               "identity labels unless the target carries them (value is always 1)");
  std::vector<ClientMetric::Label> labels = {{"pid", std::to_string(getpid())},
                                             {"nccl_version", NcclVersionInProcess()}};
  const bool identity_here = placement == IdentityPlacement::kEndpoint && !IdentityOnTarget();
  const bool on_every_series = identity_here && Params().Str(ParamId::kPromIdentityLabels) == "series";
  if (identity_here && !on_every_series) {
    for (const auto& [name, value] : Identity().Labels()) labels.push_back({name, value});
  }
  // One value per process: here in every placement, never on other series (docs/metrics.md, "Identity").
  if (!Identity().mig_uuid.empty()) labels.push_back({"mig_uuid", Identity().mig_uuid});
  if (!Identity().gpu_pci.empty()) labels.push_back({"gpu_pci", Identity().gpu_pci});
  // One snapshot of the net half per scrape: the NIC families and which NICs this rank uses agree.
  const NetStatsSnapshot net = SnapshotNetStats();
  const RankNics nics = RankNicsOf(net);
  std::vector<MetricFamily> rank_nics;
  AppendRankNicFamilies(nics, &labels, &rank_nics);
  process.metric.push_back(GaugeValue(1, std::move(labels)));
  out.push_back(std::move(process));
  for (MetricFamily& f : rank_nics) out.push_back(std::move(f));
  MetricFamily start = Gauge("ncclscope_process_start_time_seconds", "Unix time at which the plugin was loaded");
  start.metric.push_back(GaugeValue(kStartSeconds, {}));
  out.push_back(std::move(start));
  AppendProfilerFamilies(&out);
  AppendNetFamilies(net, &out);
  AppendHostFamilies(nics, &out);
  for (const std::atomic<FamilySource>& slot : g_sources) {
    if (FamilySource source = slot.load(std::memory_order_acquire)) source(&out);
  }
  if (on_every_series) AddLabelsToEverySeries(Identity().Labels(), &out);
  return out;
}

void AddLabelsToEverySeries(const std::vector<std::pair<std::string, std::string>>& labels,
                            std::vector<MetricFamily>* families) {
  for (MetricFamily& family : *families) {
    for (ClientMetric& metric : family.metric) {
      for (const auto& [name, value] : labels) {
        // Captured by an init-capture: clang 14 cannot capture a structured binding.
        const bool present = std::any_of(metric.label.begin(), metric.label.end(), [&n = name](const auto& l) {
          return l.name == n;
        });
        if (!present) metric.label.push_back({name, value});
      }
    }
  }
}

}  // namespace ncclscope
