#include "exporters/prometheus/exposition.h"

#include <charconv>
#include <cmath>
#include <string_view>

namespace ncclscope {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;

void AppendEscaped(std::string* out, std::string_view text, bool quotes) {
  for (char c : text) {
    if (c == '\\') out->append("\\\\");
    else if (c == '\n') out->append("\\n");
    else if (c == '"' && quotes) out->append("\\\"");
    else out->push_back(c);
  }
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Summary: return "summary";
    default: return "untyped";
  }
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

std::string SerializeExposition(const std::vector<prometheus::MetricFamily>& families) {
  std::string out;
  out.reserve(4096);
  for (const auto& f : families) {
    out.append("# HELP ").append(f.name).push_back(' ');
    AppendEscaped(&out, f.help, false);
    out.append("\n# TYPE ").append(f.name).push_back(' ');
    out.append(TypeName(f.type)).push_back('\n');
    for (const ClientMetric& m : f.metric) {
      switch (f.type) {
        case MetricType::Counter: AppendSample(&out, f.name, "", m.label, nullptr, 0, m.counter.value); break;
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
  return out;
}

}  // namespace ncclscope
