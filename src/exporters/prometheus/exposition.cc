#include "exporters/prometheus/exposition.h"

#include <charconv>
#include <cmath>
#include <string_view>

namespace ncclscope {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;

// Label values escape quotes in both formats; HELP text only in OpenMetrics.
void AppendEscaped(std::string* out, std::string_view text, bool quotes) {
  for (char c : text) {
    if (c == '\\') out->append("\\\\");
    else if (c == '\n') out->append("\\n");
    else if (c == '"' && quotes) out->append("\\\"");
    else out->push_back(c);
  }
}

const char* TypeName(MetricType type, bool openmetrics) {
  switch (type) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Summary: return "summary";
    default: return openmetrics ? "unknown" : "untyped";
  }
}

constexpr std::string_view kTotal = "_total";

bool EndsWithTotal(const std::string& name) {
  return name.size() > kTotal.size() && name.compare(name.size() - kTotal.size(), kTotal.size(), kTotal) == 0;
}

// name{labels[,le="bound"]} value
void AppendSample(std::string* out, const std::string& name, const char* suffix,
                  const std::vector<ClientMetric::Label>& labels, const char* extra_name, double extra_value,
                  double value) {
  out->append(name).append(suffix);
  if (!labels.empty() || extra_name != nullptr) {
    out->push_back('{');
    bool first = true;
    for (const auto& l : labels) {
      if (!first) out->push_back(',');
      first = false;
      out->append(l.name).append("=\"");
      AppendEscaped(out, l.value, true);
      out->push_back('"');
    }
    if (extra_name != nullptr) {
      if (!first) out->push_back(',');
      out->append(extra_name).append("=\"").append(FormatExpositionValue(extra_value)).push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(FormatExpositionValue(value)).push_back('\n');
}

}  // namespace

std::string FormatExpositionValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

std::string SerializeExposition(const std::vector<prometheus::MetricFamily>& families, ExpositionFormat format) {
  const bool om = format == ExpositionFormat::kOpenMetrics;
  std::string out;
  out.reserve(4096);
  for (const auto& f : families) {
    // OpenMetrics names a counter family without its samples' _total suffix. A counter whose name lacks the
    // suffix would get a new series name there, so it goes out as unknown, under the name it has in text.
    const bool om_counter = om && f.type == MetricType::Counter && EndsWithTotal(f.name);
    const std::string family = om_counter ? f.name.substr(0, f.name.size() - kTotal.size()) : f.name;
    const MetricType type = om && f.type == MetricType::Counter && !om_counter ? MetricType::Untyped : f.type;
    out.append("# HELP ").append(family).push_back(' ');
    AppendEscaped(&out, f.help, om);
    out.append("\n# TYPE ").append(family).push_back(' ');
    out.append(TypeName(type, om)).push_back('\n');
    for (const ClientMetric& m : f.metric) {
      switch (f.type) {
        case MetricType::Counter:
          AppendSample(&out, family, om_counter ? "_total" : "", m.label, nullptr, 0, m.counter.value);
          break;
        case MetricType::Gauge: AppendSample(&out, f.name, "", m.label, nullptr, 0, m.gauge.value); break;
        case MetricType::Histogram:
          for (const auto& b : m.histogram.bucket) {
            AppendSample(&out, f.name, "_bucket", m.label, "le", b.upper_bound,
                         static_cast<double>(b.cumulative_count));
          }
          AppendSample(&out, f.name, "_sum", m.label, nullptr, 0, m.histogram.sample_sum);
          AppendSample(&out, f.name, "_count", m.label, nullptr, 0, static_cast<double>(m.histogram.sample_count));
          break;
        default: AppendSample(&out, f.name, "", m.label, nullptr, 0, m.untyped.value); break;
      }
    }
  }
  if (om) out.append("# EOF\n");
  return out;
}

}  // namespace ncclscope
