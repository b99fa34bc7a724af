#include "exporters/otlp/otlp_encoder.h"

#include <algorithm>
#include <cmath>

#include "exporters/otlp/proto_writer.h"

namespace ncclscope::otlp {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Field numbers of opentelemetry-proto (v1 of each package); the names are the .proto's.
namespace field {
constexpr uint32_t kRequestResourceMetrics = 1;  // ExportMetricsServiceRequest.resource_metrics
constexpr uint32_t kResourceMetricsResource = 1;
constexpr uint32_t kResourceMetricsScopeMetrics = 2;
constexpr uint32_t kResourceAttributes = 1;
constexpr uint32_t kScopeMetricsScope = 1;
constexpr uint32_t kScopeMetricsMetrics = 2;
constexpr uint32_t kScopeName = 1;  // InstrumentationScope
constexpr uint32_t kScopeVersion = 2;
constexpr uint32_t kKeyValueKey = 1;
constexpr uint32_t kKeyValueValue = 2;
constexpr uint32_t kAnyValueString = 1;
constexpr uint32_t kMetricName = 1;
constexpr uint32_t kMetricDescription = 2;
constexpr uint32_t kMetricGauge = 5;
constexpr uint32_t kMetricSum = 7;
constexpr uint32_t kMetricHistogram = 9;
constexpr uint32_t kDataPoints = 1;              // Gauge, Sum and Histogram alike
constexpr uint32_t kAggregationTemporality = 2;  // Sum and Histogram
constexpr uint32_t kSumIsMonotonic = 3;
constexpr uint32_t kNumberAttributes = 7;  // NumberDataPoint
constexpr uint32_t kStartTime = 2;         // NumberDataPoint and HistogramDataPoint
constexpr uint32_t kTime = 3;
constexpr uint32_t kNumberAsDouble = 4;
constexpr uint32_t kHistogramCount = 4;  // HistogramDataPoint
constexpr uint32_t kHistogramSum = 5;
constexpr uint32_t kHistogramBucketCounts = 6;
constexpr uint32_t kHistogramExplicitBounds = 7;
constexpr uint32_t kHistogramAttributes = 9;
}  // namespace field

constexpr uint64_t kCumulative = 2;  // AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE

void KeyValue(ProtoWriter* out, uint32_t field_number, const std::string& key, const std::string& value) {
  ProtoWriter any;
  any.BytesField(field::kAnyValueString, value);
  ProtoWriter kv;
  kv.BytesField(field::kKeyValueKey, key);
  kv.MessageField(field::kKeyValueValue, any);
  out->MessageField(field_number, kv);
}

void Labels(ProtoWriter* point, uint32_t field_number, const std::vector<ClientMetric::Label>& labels) {
  for (const ClientMetric::Label& l : labels) KeyValue(point, field_number, l.name, l.value);
}

ProtoWriter NumberPoint(const ClientMetric& m, double value, bool with_start, const ExportContext& ctx) {
  ProtoWriter p;
  Labels(&p, field::kNumberAttributes, m.label);
  if (with_start) p.Fixed64Field(field::kStartTime, ctx.start_time_ns);
  p.Fixed64Field(field::kTime, ctx.time_ns);
  p.DoubleField(field::kNumberAsDouble, value);
  return p;
}

ProtoWriter HistogramPoint(const ClientMetric& m, const ExportContext& ctx) {
  ProtoWriter p;
  Labels(&p, field::kHistogramAttributes, m.label);
  p.Fixed64Field(field::kStartTime, ctx.start_time_ns);
  p.Fixed64Field(field::kTime, ctx.time_ns);
  p.Fixed64Field(field::kHistogramCount, m.histogram.sample_count);
  p.DoubleField(field::kHistogramSum, m.histogram.sample_sum);
  // Prometheus counts are cumulative up to each `le`; OTLP wants one count per bucket, the last one
  // (above the last finite bound) included. Packed repeated fields: one length-delimited run each.
  ProtoWriter counts;
  ProtoWriter bounds;
  uint64_t below = 0;
  for (const ClientMetric::Bucket& b : m.histogram.bucket) {
    if (std::isinf(b.upper_bound)) continue;
    bounds.RawDouble(b.upper_bound);
    counts.RawFixed64(b.cumulative_count >= below ? b.cumulative_count - below : 0);
    below = std::max(below, b.cumulative_count);
  }
  counts.RawFixed64(m.histogram.sample_count >= below ? m.histogram.sample_count - below : 0);
  p.MessageField(field::kHistogramBucketCounts, counts);
  if (!bounds.bytes().empty()) p.MessageField(field::kHistogramExplicitBounds, bounds);
  return p;
}

// One Metric, or false for a family with nothing OTLP carries (a summary, no series).
bool EncodeMetric(const MetricFamily& f, const ExportContext& ctx, ProtoWriter* metric) {
  if (f.metric.empty() || f.type == MetricType::Summary) return false;
  metric->BytesField(field::kMetricName, f.name);
  if (!f.help.empty()) metric->BytesField(field::kMetricDescription, f.help);
  ProtoWriter data;
  switch (f.type) {
    case MetricType::Counter:
      for (const ClientMetric& m : f.metric) {
        data.MessageField(field::kDataPoints, NumberPoint(m, m.counter.value, true, ctx));
      }
      data.VarintField(field::kAggregationTemporality, kCumulative);
      data.VarintField(field::kSumIsMonotonic, 1);
      metric->MessageField(field::kMetricSum, data);
      return true;
    case MetricType::Histogram:
      for (const ClientMetric& m : f.metric) data.MessageField(field::kDataPoints, HistogramPoint(m, ctx));
      data.VarintField(field::kAggregationTemporality, kCumulative);
      metric->MessageField(field::kMetricHistogram, data);
      return true;
    default:  // gauge, untyped, info
      for (const ClientMetric& m : f.metric) {
        const double v = f.type == MetricType::Untyped ? m.untyped.value : m.gauge.value;
        data.MessageField(field::kDataPoints, NumberPoint(m, v, false, ctx));
      }
      metric->MessageField(field::kMetricGauge, data);
      return true;
  }
}

}  // namespace

std::string EncodeMetricsRequest(const std::vector<MetricFamily>& families, const ExportContext& ctx) {
  ProtoWriter resource;
  for (const auto& [key, value] : ctx.resource) KeyValue(&resource, field::kResourceAttributes, key, value);
  ProtoWriter scope;
  scope.BytesField(field::kScopeName, ctx.scope_name);
  if (!ctx.scope_version.empty()) scope.BytesField(field::kScopeVersion, ctx.scope_version);
  ProtoWriter scope_metrics;
  scope_metrics.MessageField(field::kScopeMetricsScope, scope);
  ProtoWriter metric;
  for (const MetricFamily& f : families) {
    metric.Clear();
    if (EncodeMetric(f, ctx, &metric)) scope_metrics.MessageField(field::kScopeMetricsMetrics, metric);
  }
  ProtoWriter resource_metrics;
  resource_metrics.MessageField(field::kResourceMetricsResource, resource);
  resource_metrics.MessageField(field::kResourceMetricsScopeMetrics, scope_metrics);
  ProtoWriter request;
  request.MessageField(field::kRequestResourceMetrics, resource_metrics);
  return request.Take();
}

}  // namespace ncclscope::otlp
