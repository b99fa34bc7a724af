// Unknown NCCLSCOPE_* variables (common/unknown_env.h): the nearest known name of a typo, what counts as known,
// and that every variable the tree reads itself is known (so none of them is ever reported).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/params.h"
#include "common/unknown_env.h"
#include "log_capture.h"

namespace ncclscope {
namespace {

std::vector<std::string> ParamNames() {
  std::vector<std::string> out;
  for (const ParamSpec& spec : AllParamSpecs()) out.push_back(spec.env);
  return out;
}

TEST(EditDistance, CountsTheUsualTypos) {
  EXPECT_EQ(EditDistance("PROM_PORT", "PROM_PORT"), 0u);
  EXPECT_EQ(EditDistance("DUMPDIR", "DUMP_DIR"), 1u) << "a missing character";
  EXPECT_EQ(EditDistance("PROM_PROT", "PROM_PORT"), 1u) << "two neighbours swapped";
  EXPECT_EQ(EditDistance("TRACE", "TRACK"), 1u);
  EXPECT_EQ(EditDistance("", "ABC"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(NearestName, NamesWhatTheTypoMeant) {
  const std::vector<std::string> known = ParamNames();
  EXPECT_EQ(NearestName("NCCLSCOPE_DUMPDIR", known), "NCCLSCOPE_DUMP_DIR");
  EXPECT_EQ(NearestName("NCCLSCOPE_PROM_PROT", known), "NCCLSCOPE_PROM_PORT");
  EXPECT_EQ(NearestName("NCCLSCOPE_SD_DIRECTORY", known), "NCCLSCOPE_SD_DIR");
  EXPECT_EQ(NearestName("NCCLSCOPE_FR_DEPT", known), "NCCLSCOPE_FR_DEPTH");
  EXPECT_EQ(NearestName("ncclscope_prom_port", known), "NCCLSCOPE_PROM_PORT") << "case does not count";
  EXPECT_EQ(NearestName("X", {}), "");
  EXPECT_FALSE(NearestName("NCCLSCOPE_" + std::string(100 * 1024, 'X'), known).empty())
      << "a huge name is compared by its start, at once";
}

TEST(UnknownVariables, OnlyOurPrefixAndOnlyUnknownNames) {
  const char* env[] = {"NCCLSCOPE_DUMPDIR=/x", "NCCLSCOPE_PROM_PROT=1", "NCCLSCOPE_DUMP_DIR=/y",
                       "NCCLSCOPE_SIM_ROOT=127.0.0.1:1", "NCCLSCOPE_TEST_KEEP=1", "NCCL_DEBUG=INFO",
                       "SLURM_JOB_ID=7", "NCCLSCOPE_JOB_ID=a=b", "NCCLSCOPEX=1", "NCCLSCOPE_EMPTY=", nullptr};
  const std::vector<UnknownVariable> unknown = UnknownVariables(env);
  ASSERT_EQ(unknown.size(), 3u);
  EXPECT_EQ(unknown[0].name, "NCCLSCOPE_DUMPDIR");
  EXPECT_EQ(unknown[0].nearest, "NCCLSCOPE_DUMP_DIR");
  EXPECT_EQ(unknown[1].name, "NCCLSCOPE_PROM_PROT");
  EXPECT_EQ(unknown[1].nearest, "NCCLSCOPE_PROM_PORT");
  EXPECT_EQ(unknown[2].name, "NCCLSCOPE_EMPTY");
  EXPECT_TRUE(UnknownVariables(nullptr).empty());
}

// Sets a typo of NCCLSCOPE_PROM_PORT, warns twice, and exits 0 when exactly one warning named it with the hint.
[[noreturn]] void WarnTwiceAndExit() {
  setenv("NCCLSCOPE_PROM_PROT", "1", 1);
  ::ncclscope::testing::LogCapture::Clear();
  SetNcclLogger(&::ncclscope::testing::LogCapture::Logger);
  WarnUnknownVariablesOnce();
  WarnUnknownVariablesOnce();
  SetNcclLogger(nullptr);
  int named = 0;
  int with_hint = 0;
  for (const std::string& w : ::ncclscope::testing::LogCapture::AllWarnings()) {
    if (w.find("NCCLSCOPE_PROM_PROT is not an ncclscope variable") == std::string::npos) continue;
    ++named;
    if (w.find("did you mean NCCLSCOPE_PROM_PORT?") != std::string::npos) ++with_hint;
  }
  fprintf(stderr, "warnings naming the typo: %d, with the hint: %d\n", named, with_hint);
  exit(named == 1 && with_hint == 1 ? 0 : 1);
}

// In a process of its own (a death test re-executing only this test): the warning is once per process, and an
// earlier test of this binary that initialized the runtime has had its once already.
TEST(UnknownVariables, WarnsOncePerProcessAtInit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(WarnTwiceAndExit(), ::testing::ExitedWithCode(0), "warnings naming the typo: 1, with the hint: 1");
}

// Every NCCLSCOPE_* variable the tree reads from the environment (getenv in C++, ${…} in shell, os.environ in
// Python) is a tunable or listed in KnownNonParamVariables(): a new reader that is neither would be reported
// to its users as a typo.
TEST(UnknownVariables, EveryVariableTheTreeReadsIsKnown) {
  namespace fs = std::filesystem;
  const std::regex reader(
      R"re((?:getenv\(\s*"|EnvInt\(\s*"|kRootEnv = "|\$\{|environ(?:\.get)?[\[(]\s*"|environ\.setdefault\(\s*")(NCCLSCOPE_[A-Z0-9_]+))re");
  std::set<std::string> known;
  for (const ParamSpec& spec : AllParamSpecs()) known.insert(spec.env);
  for (const char* name : KnownNonParamVariables()) known.insert(name);
  std::set<std::string> unknown;
  int scanned = 0;
  for (const char* dir : {"src", "tools", "tests", "scripts", "deploy"}) {
    const fs::path root = fs::path(NCCLSCOPE_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".sh" && ext != ".py")) continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      ++scanned;
      for (auto it = std::sregex_iterator(s.begin(), s.end(), reader); it != std::sregex_iterator(); ++it) {
        if (known.count((*it)[1]) == 0) unknown.insert((*it)[1].str() + " (" + entry.path().string() + ")");
      }
    }
  }
  EXPECT_GT(scanned, 100);
  EXPECT_TRUE(unknown.empty()) << "read but unknown: " << ::testing::PrintToString(unknown);
}

}  // namespace
}  // namespace ncclscope
