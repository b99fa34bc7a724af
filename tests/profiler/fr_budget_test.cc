// NCCLSCOPE_FR_MEMORY (profiler/fr_budget.h): the flight recorders of a process together stay under the budget;
// the communicator that would pass it gets a smaller power-of-two depth, with one warning naming the bytes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "core/flight_recorder.h"
#include "log_capture.h"
#include "profiler/comm_context.h"
#include "profiler/fr_budget.h"

namespace ncclscope::profiler {
namespace {

TEST(DepthWithinBudget, KeepsWhatFitsAndHalvesWhatDoesNot) {
  constexpr size_t kRec = 192;
  EXPECT_EQ(DepthWithinBudget(2048, kRec, 0, 64u << 20), 2048) << "the default fits";
  EXPECT_EQ(DepthWithinBudget(3000, kRec, 0, 64u << 20), 3000) << "a depth that fits is kept, power of two or not";
  // 1M records (201 MB) in 64 MiB: the largest power of two that fits is 256K records (48 MiB).
  EXPECT_EQ(DepthWithinBudget(1 << 20, kRec, 0, 64u << 20), 1 << 18);
  EXPECT_EQ(DepthWithinBudget(1 << 20, kRec, 60u << 20, 64u << 20), 1 << 14) << "what others hold counts";
  EXPECT_EQ(DepthWithinBudget(4096, kRec, 64u << 20, 64u << 20), kMinFrDepth) << "never below the minimum";
  EXPECT_EQ(DepthWithinBudget(4096, kRec, 100u << 20, 64u << 20), kMinFrDepth) << "past the budget: the minimum";
  EXPECT_EQ(DepthWithinBudget(16, kRec, 100u << 20, 64u << 20), 16);
  EXPECT_EQ(DepthWithinBudget(100, kRec, 0, 64 * kRec), 64) << "a power of two below a non-power request";
}

CommInfo Info(uint64_t hash) {
  CommInfo info;
  info.comm_hash = hash;
  info.nranks = 2;
  return info;
}

TEST(FlightRecorderBudget, CommunicatorsShareTheProcessBudgetAndGiveItBack) {
  ::ncclscope::testing::LogCapture::Clear();
  SetNcclLogger(&::ncclscope::testing::LogCapture::Logger);
  const size_t rec = FlightRecorder::BytesPerRecord();
  const size_t before = FlightRecorderBudget::Process().used_bytes();
  ContextConfig cfg;
  cfg.fr_depth = 1 << 20;  // a value seen in the field: ~201 MB a communicator
  cfg.fr_memory_bytes = before + 4096 * rec;  // room for 4096 records
  std::vector<std::unique_ptr<CommContext>> comms;
  std::vector<int> depths;
  for (uint64_t h = 1; h <= 3; ++h) {
    comms.push_back(std::make_unique<CommContext>(Info(0xf0 + h), cfg, false));
    CommSnapshot snap;
    comms.back()->Fill(&snap);
    depths.push_back(snap.fr_depth);
  }
  EXPECT_EQ(depths, (std::vector<int>{4096, kMinFrDepth, kMinFrDepth}));
  EXPECT_EQ(FlightRecorderBudget::Process().used_bytes(), before + (4096 + 2 * kMinFrDepth) * rec);
  SetNcclLogger(nullptr);
  const std::vector<std::string> warnings = ::ncclscope::testing::LogCapture::AllWarnings();
  ASSERT_EQ(warnings.size(), 1u) << "one warning per process; later cuts go to INFO";
  EXPECT_NE(warnings[0].find("NCCLSCOPE_FR_DEPTH=1048576 costs " + std::to_string((size_t{1} << 20) * rec) + " bytes"),
            std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("keeps 4096 records (" + std::to_string(4096 * rec) + " bytes)"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("NCCLSCOPE_FR_MEMORY"), std::string::npos);
  comms.clear();
  EXPECT_EQ(FlightRecorderBudget::Process().used_bytes(), before) << "a destroyed communicator gives its records back";
  // Freed, the budget serves the next communicator in full again.
  CommContext again(Info(0xf9), cfg, false);
  CommSnapshot snap;
  again.Fill(&snap);
  EXPECT_EQ(snap.fr_depth, 4096);
}

}  // namespace
}  // namespace ncclscope::profiler
