// Histogram building for the exporters: bucket bounds print as clean decimals, counts are cumulative, the
// _sum is the exact sum given (never an estimate), and the detail level follows NCCLSCOPE_METRICS_LEVEL.
#include "exporters/prometheus/family_builders.h"

#include <gtest/gtest.h>
#include "exporters/prometheus/exposition.h"

#include <array>
#include <cmath>
#include <limits>

#include "common/params.h"
#include "temp_dir.h"

namespace ncclscope {
namespace {

TEST(FamilyBuilders, BoundsPrintAsCleanDecimals) {
  auto f = prom::Family("h_seconds", "test", prometheus::MetricType::Histogram);
  std::array<uint64_t, 40> counts{};
  prom::AddLog2Histogram(&f, counts, {13, 14}, 0, {});
  const std::string text = SerializeExposition({f});
  EXPECT_NE(text.find("le=\"8.192e-06\""), std::string::npos) << text;
  EXPECT_NE(text.find("le=\"1.6384e-05\""), std::string::npos) << text;
  EXPECT_EQ(text.find("000000001"), std::string::npos) << text;
}

TEST(Exposition, EscapesAndFormats) {
  auto f = prom::Family("c_total", "a \\ help\nline", prometheus::MetricType::Counter);
  prom::AddCounter(&f, 12345678901234.0, {{"a", "x\"y\\z\nw"}});
  auto g = prom::Family("g", "gauge", prometheus::MetricType::Gauge);
  prom::AddGauge(&g, 0.1, {});
  EXPECT_EQ(SerializeExposition({f, g}),
            "# HELP c_total a \\\\ help\\nline\n# TYPE c_total counter\n"
            "c_total{a=\"x\\\"y\\\\z\\nw\"} 12345678901234\n"
            "# HELP g gauge\n# TYPE g gauge\ng 0.1\n");
  EXPECT_EQ(FormatExpositionValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatExpositionValue(std::nan("")), "NaN");
}

TEST(FamilyBuilders, CumulativeCountsAndExactSum) {
  auto f = prom::Family("h_seconds", "test", prometheus::MetricType::Histogram);
  std::array<uint64_t, 40> counts{};
  counts[3] = 2;   // [8, 16) ns: below the first bound, folded into it
  counts[14] = 5;  // [16384, 32768) ns
  counts[39] = 1;  // beyond the last bound: +Inf only
  prom::AddLog2Histogram(&f, counts, prom::kCoarseBounds, 123456789.0, {{"k", "v"}});
  const auto& h = f.metric.at(0).histogram;
  ASSERT_EQ(h.bucket.size(), prom::kCoarseBounds.size() + 1);
  EXPECT_EQ(h.bucket[0].cumulative_count, 2u);  // le 2^14 ns
  EXPECT_EQ(h.bucket[1].cumulative_count, 7u);  // le 2^18 ns
  EXPECT_EQ(h.bucket.back().cumulative_count, 8u);
  EXPECT_EQ(h.sample_count, 8u);
  EXPECT_DOUBLE_EQ(h.sample_sum, 0.123456789);
}

TEST(FamilyBuilders, LevelFromTheEnvironment) {
  {
    testing::ScopedEnv env("NCCLSCOPE_METRICS_LEVEL", "Detailed");
    ReloadParams();
    EXPECT_EQ(prom::CurrentLevel(), prom::Level::kDetailed);
  }
  {
    testing::ScopedEnv env("NCCLSCOPE_METRICS_LEVEL", "verbose");  // invalid: a warning and the default
    ReloadParams();
    EXPECT_EQ(prom::CurrentLevel(), prom::Level::kBasic);
  }
  ReloadParams();
  EXPECT_EQ(prom::CurrentLevel(), prom::Level::kBasic);
}

}  // namespace
}  // namespace ncclscope
