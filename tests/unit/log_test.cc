// Logging goes through NCCL's logger with NCCL's subsystem flags once one is installed, and to stderr
// filtered by NCCL_DEBUG before that.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"

namespace ncclscope {
namespace {

struct Line {
  int level;
  unsigned long flags;
  std::string text;
  std::string file;
};
std::vector<Line>* g_lines = nullptr;

void Capture(ncclscope_log_level_t level, unsigned long flags, const char* file, int, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  g_lines->push_back({static_cast<int>(level), flags, buf, file != nullptr ? file : ""});
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_lines = &lines_;
    SetNcclLogger(&Capture);
  }
  void TearDown() override {
    SetNcclLogger(nullptr);
    g_lines = nullptr;
  }
  std::vector<Line> lines_;
};

TEST_F(LogTest, InfoCarriesTheSubsystemAndOurPrefix) {
  NCCLSCOPE_INFO(subsys::kNet, "hello %d", 7);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].level, NCCLSCOPE_LOG_INFO);
  EXPECT_EQ(lines_[0].flags, NCCLSCOPE_SUBSYS_NET);
  EXPECT_EQ(lines_[0].text, "ncclscope: hello 7");
}

// The file a line names is relative to the repository (-fmacro-prefix-map in CMakeLists.txt), not the build
// host's absolute path.
TEST_F(LogTest, TheSourceFileIsNamedRelativeToTheRepository) {
  NCCLSCOPE_WARN(subsys::kNet, "where");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].file, "tests/unit/log_test.cc");
}

// A value read from outside (a NIC name, the job id) cannot split NCCL's log line: control bytes are escaped.
TEST_F(LogTest, ControlCharactersInAMessageAreEscaped) {
  NCCLSCOPE_WARN(subsys::kNet, "NIC '%s' job '%s'", "eth0\nNCCL WARN forged", "j\x1b[2J");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].text, "ncclscope: NIC 'eth0\\nNCCL WARN forged' job 'j\\x1b[2J'");
  EXPECT_EQ(lines_[0].text.find('\n'), std::string::npos);
}

// The logger adds the one "ncclscope: " prefix; callers write none (log_prefix_test checks every call site).
TEST_F(LogTest, ACapturedLineCarriesThePrefixOnce) {
  NCCLSCOPE_INFO(subsys::kInit, "version %s (NCCL %s)", NCCLSCOPE_VERSION, "2.28.9");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].text, std::string("ncclscope: version ") + NCCLSCOPE_VERSION + " (NCCL 2.28.9)");
  EXPECT_EQ(lines_[0].text.find("ncclscope", 1), std::string::npos) << lines_[0].text;
}

TEST_F(LogTest, WarnGoesToEverySubsystem) {
  NCCLSCOPE_WARN(subsys::kProfile, "bad");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].level, NCCLSCOPE_LOG_WARN);
  EXPECT_EQ(lines_[0].flags, NCCLSCOPE_SUBSYS_ALL);
}

TEST_F(LogTest, LogOnceLogsOncePerCallSite) {
  for (int i = 0; i < 5; ++i) NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kProfile, "dropped %d", i);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].text, "ncclscope: dropped 0");
}

TEST(LogStderr, HonoursNcclDebug) {
  SetNcclLogger(nullptr);
  setenv("NCCL_DEBUG", "WARN", 1);
  ReloadStderrLogLevel();
  testing::internal::CaptureStderr();
  NCCLSCOPE_INFO(subsys::kNet, "quiet info");
  NCCLSCOPE_WARN(subsys::kNet, "loud warn");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("quiet info"), std::string::npos) << err;
  EXPECT_NE(err.find("[ncclscope] WARN loud warn"), std::string::npos) << err;

  setenv("NCCL_DEBUG", "INFO", 1);
  ReloadStderrLogLevel();
  testing::internal::CaptureStderr();
  NCCLSCOPE_INFO(subsys::kNet, "now visible");
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("INFO now visible"), std::string::npos) << err;
  unsetenv("NCCL_DEBUG");
  ReloadStderrLogLevel();
}

}  // namespace
}  // namespace ncclscope
