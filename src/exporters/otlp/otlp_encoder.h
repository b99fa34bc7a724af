// The metric families of the Prometheus endpoint (exporters/prometheus/metric_families.h) as one OTLP
// ExportMetricsServiceRequest (opentelemetry-proto collector/metrics/v1), protobuf-encoded:
//   counter   -> Sum (cumulative, monotonic) of NumberDataPoint as_double
//   gauge     -> Gauge (an untyped family too)
//   histogram -> Histogram (cumulative): explicit_bounds = the finite `le` bounds, bucket_counts per bucket
//                (Prometheus' cumulative counts taken apart), count and sum
// A summary family is left out (ncclscope exports none). Metric names stay the Prometheus ones; a series'
// labels become its data point's string attributes; the resource carries `resource` (service.name, the
// identity) and the scope is ncclscope's name and version. Pure: no I/O, no global state.
#ifndef NCCLSCOPE_EXPORTERS_OTLP_OTLP_ENCODER_H_
#define NCCLSCOPE_EXPORTERS_OTLP_OTLP_ENCODER_H_

#include <prometheus/metric_family.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ncclscope::otlp {

struct ExportContext {
  std::vector<std::pair<std::string, std::string>> resource;  // resource attributes, string-valued
  std::string scope_name = "ncclscope";
  std::string scope_version;
  uint64_t start_time_ns = 0;  // start of the cumulative counts (the plugin's start)
  uint64_t time_ns = 0;        // when the families were collected
};

std::string EncodeMetricsRequest(const std::vector<prometheus::MetricFamily>& families, const ExportContext& ctx);

}  // namespace ncclscope::otlp

#endif  // NCCLSCOPE_EXPORTERS_OTLP_OTLP_ENCODER_H_
