// Small helpers to build prometheus-cpp MetricFamily values from our plain-data snapshots.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_FAMILY_BUILDERS_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_FAMILY_BUILDERS_H_

#include <prometheus/metric_family.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/params.h"

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

// NCCLSCOPE_METRICS_LEVEL: each level includes the ones before it.
enum class Level { kBasic = 0, kDetailed = 1, kFull = 2 };
inline Level CurrentLevel() {
  const std::string& text = Params().Str(ParamId::kMetricsLevel);
  return text == "full" ? Level::kFull : text == "detailed" ? Level::kDetailed : Level::kBasic;
}

// 2^k ns in seconds as the double nearest to the decimal value, so bounds print as le="8.192e-06" rather
// than the le="8.192000000000001e-06" that 8192 / 1e9 gives.
inline double Pow2NsInSeconds(int k) {
  const std::string text = std::to_string(uint64_t{1} << k) + "e-9";
  return std::strtod(text.c_str(), nullptr);
}

// A histogram from log2 buckets of nanoseconds (bucket b holds [2^b, 2^(b+1)) ns), exposed in seconds with
// upper bounds 2^(b+1) ns for the b in `bounds` (ascending exponents of 2); everything below the first bound
// folds into it. `sum_ns` is the exact sum of the observations.
template <class Buckets>
void AddLog2Histogram(prometheus::MetricFamily* f, const Buckets& counts, std::initializer_list<int> bounds,
                      double sum_ns, Labels labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  uint64_t cumulative = 0;
  size_t b = 0;
  for (int k : bounds) {  // upper bound 2^k ns: buckets b < k
    for (; b < std::size(counts) && static_cast<int>(b) < k; ++b) cumulative += counts[b];
    m.histogram.bucket.push_back({cumulative, Pow2NsInSeconds(k)});
  }
  m.histogram.bucket.push_back({total, std::numeric_limits<double>::infinity()});
  m.histogram.sample_count = total;
  m.histogram.sample_sum = sum_ns / 1e9;
  f->metric.push_back(std::move(m));
}

// Every power of two from 2 us to 2^36 ns (~69 s): the detailed levels' latency buckets.
inline constexpr std::initializer_list<int> kFineBounds = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
                                                           25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36};
// Every second (x4): 4 us .. 69 s, the detailed level's per-communicator histograms.
inline constexpr std::initializer_list<int> kMediumBounds = {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36};
// Every fourth: 16 us, 262 us, 4.2 ms, 67 ms, 1.07 s, 17.2 s — the basic level's few buckets.
inline constexpr std::initializer_list<int> kCoarseBounds = {14, 18, 22, 26, 30, 34};

}  // namespace ncclscope::prom

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_FAMILY_BUILDERS_H_
