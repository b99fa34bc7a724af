// The Prometheus text exposition format (version 0.0.4) and OpenMetrics 1.0 of our metric families. Ours rather than
// prometheus-cpp's TextSerializer, which prints 16 significant digits and so turns a bucket bound of 8.192 us
// into le="8.192000000000001e-06"; here every value is the shortest text that reads back as the same double.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_EXPOSITION_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_EXPOSITION_H_

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace ncclscope {

enum class ExpositionFormat { kText, kOpenMetrics };

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* kOpenMetricsContentType = "application/openmetrics-text; version=1.0.0; charset=utf-8";

// OpenMetrics differs in what a scraper sees only where the formats differ: a counter family is named
// without _total (its samples keep it), HELP escapes quotes, untyped is "unknown", and "# EOF" ends it.
std::string SerializeExposition(const std::vector<prometheus::MetricFamily>& families,
                                ExpositionFormat format = ExpositionFormat::kText);

// The shortest decimal text of `v` that parses back to `v`; "+Inf", "-Inf", "NaN" as the format spells them.
std::string FormatExpositionValue(double v);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_EXPOSITION_H_
