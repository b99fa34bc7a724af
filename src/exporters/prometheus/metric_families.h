// Builds every ncclscope metric family from the current snapshots. Called at scrape time on a civetweb
// thread (and by the textfile writer); reads snapshots only, never NCCL state. Thread-safe.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_METRIC_FAMILIES_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_METRIC_FAMILIES_H_

#include <prometheus/metric_family.h>

#include <vector>

namespace ncclscope {

std::vector<prometheus::MetricFamily> CollectMetricFamilies();

// The parts, one per snapshot source.
void AppendNetFamilies(std::vector<prometheus::MetricFamily>* out);
void AppendProfilerFamilies(std::vector<prometheus::MetricFamily>* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_METRIC_FAMILIES_H_
