#include "exporters/prometheus/metric_families.h"

#include <unistd.h>

#include <string>

#include "common/clock.h"
#include "common/params.h"

namespace ncclscope {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Start time of this process's plugin, for `time() - ncclscope_process_start_time_seconds`.
const double kStartSeconds = static_cast<double>(RealtimeNs()) / 1e9;

MetricFamily Gauge(const char* name, const char* help) { return MetricFamily{name, help, MetricType::Gauge, {}}; }

ClientMetric GaugeValue(double value, std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

}  // namespace

std::vector<MetricFamily> CollectMetricFamilies() {
  std::vector<MetricFamily> out;
  MetricFamily info = Gauge("ncclscope_build_info", "ncclscope build and process metadata (value is always 1)");
  info.metric.push_back(GaugeValue(1, {{"version", "0.1.0"},
                                       {"pid", std::to_string(getpid())},
                                       {"ncclscope_job", Params().Str(ParamId::kJobId)}}));
  out.push_back(std::move(info));
  MetricFamily start = Gauge("ncclscope_process_start_time_seconds", "Unix time at which the plugin was loaded");
  start.metric.push_back(GaugeValue(kStartSeconds, {}));
  out.push_back(std::move(start));
  AppendProfilerFamilies(&out);
  AppendNetFamilies(&out);
  return out;
}

}  // namespace ncclscope
