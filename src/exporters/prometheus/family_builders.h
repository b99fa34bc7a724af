// Small helpers to build prometheus-cpp MetricFamily values from our plain-data snapshots.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_FAMILY_BUILDERS_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_FAMILY_BUILDERS_H_

#include <prometheus/metric_family.h>

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace ncclscope::prom {

using Labels = std::vector<prometheus::ClientMetric::Label>;

inline prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type) {
  return prometheus::MetricFamily{name, help, type, {}};
}

inline void AddCounter(prometheus::MetricFamily* f, double value, Labels labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  f->metric.push_back(std::move(m));
}

inline void AddGauge(prometheus::MetricFamily* f, double value, Labels labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f->metric.push_back(std::move(m));
}

// A histogram from log2 buckets of nanoseconds (bucket b holds [2^b, 2^(b+1)) ns), exposed in seconds with
// upper bounds 2^(b+1) ns for b in [first, last]; everything below `first` folds into the first bucket.
// `sum_ns` is the exact sum when known, else the bucket midpoints' estimate is used.
template <class Buckets>
void AddLog2Histogram(prometheus::MetricFamily* f, const Buckets& counts, int first, int last, double sum_ns,
                      Labels labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  uint64_t cumulative = 0, total = 0;
  double estimate = 0;
  for (size_t b = 0; b < std::size(counts); ++b) {
    total += counts[b];
    estimate += static_cast<double>(counts[b]) * 1.5 * static_cast<double>(uint64_t{1} << b);
  }
  for (int b = 0; b <= last && b < static_cast<int>(std::size(counts)); ++b) {
    cumulative += counts[b];
    if (b < first) continue;
    m.histogram.bucket.push_back({cumulative, static_cast<double>(uint64_t{2} << b) / 1e9});
  }
  m.histogram.bucket.push_back({total, std::numeric_limits<double>::infinity()});
  m.histogram.sample_count = total;
  m.histogram.sample_sum = (sum_ns >= 0 ? sum_ns : estimate) / 1e9;
  f->metric.push_back(std::move(m));
}

}  // namespace ncclscope::prom

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_FAMILY_BUILDERS_H_
