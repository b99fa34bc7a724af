// The recording mode's writer (common/call_recorder.h) in its own process, so that NCCLSCOPE_RECORD_DIR is set
// before the recorder's first use: lines from many threads stay whole and ordered, every thread is named once,
// ids follow pointers, tokens are unique per event and resolve to our handles, tallies fold polling calls.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/call_recorder.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ncclscope::record {
namespace {

std::vector<nlohmann::json> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));  // throws on a torn line
  return lines;
}

class CallRecorderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("ncclscope-recorder-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    setenv("NCCLSCOPE_RECORD_DIR", dir_.c_str(), 1);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string dir_;
};
std::string CallRecorderTest::dir_;

TEST_F(CallRecorderTest, ManyThreadsWriteWholeOrderedLines) {
  Recorder* r = Recorder::Get();
  ASSERT_NE(r, nullptr);
  constexpr int kThreads = 8, kLines = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([r, t] {
      for (int i = 0; i < kLines; ++i) {
        int object = 0;
        void* token = r->Wrap(&object);  // one event: a token handed out, then referred to
        r->Write("startEvent", [&](Line& l) { l.Int("thread", t).Int("n", i).NewId("handle", token, 'h'); });
        r->Write("stopEvent", [&](Line& l) { l.Ref("handle", token).Str("quote", "a \"quoted\" name"); });
        EXPECT_EQ(r->Unwrap(token), &object);
      }
    });
  }
  for (auto& t : threads) t.join();
  r->Flush();
  const std::vector<nlohmann::json> lines = ReadLines(r->path());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0]["format"], "ncclscope.record.v1");
  size_t starts = 0, names = 0;
  uint64_t last_i = 0;
  bool first = true;
  std::set<std::string> handles;
  for (const auto& l : lines) {
    if (l.value("call", "") == "thread") {
      ++names;
      continue;
    }
    if (!l.contains("i")) continue;
    if (!first) {
      EXPECT_EQ(l["i"].get<uint64_t>(), last_i + 1) << "line numbers follow the write order";
    }
    first = false;
    last_i = l["i"];
    if (l["call"] == "startEvent") {
      ++starts;
      EXPECT_TRUE(handles.insert(l["handle"].get<std::string>()).second) << "a token is used for one event only";
    } else {
      EXPECT_TRUE(handles.count(l["handle"].get<std::string>())) << "stop refers to the started event's id";
      EXPECT_EQ(l["quote"], "a \"quoted\" name");
    }
  }
  EXPECT_EQ(starts, static_cast<size_t>(kThreads * kLines));
  EXPECT_EQ(names, static_cast<size_t>(kThreads));
}

TEST_F(CallRecorderTest, TalliesAndRepeatsFoldPollingCalls) {
  Recorder* r = Recorder::Get();
  ASSERT_NE(r, nullptr);
  int request = 0;
  for (int i = 0; i < 5; ++i) r->Tally(&request);
  EXPECT_EQ(r->Take(&request), 5u);
  EXPECT_EQ(r->Take(&request), 0u);
  EXPECT_FALSE(r->Repeat(&request, 42));  // first time: written
  EXPECT_TRUE(r->Repeat(&request, 42));   // the same again: folded and counted
  EXPECT_TRUE(r->Repeat(&request, 42));
  EXPECT_EQ(r->Take(&request), 2u);
  EXPECT_FALSE(r->Repeat(&request, 43));
  r->Forget(&request);
  EXPECT_FALSE(r->Repeat(&request, 43)) << "a forgotten key starts over";
  int foreign = 0;
  EXPECT_EQ(r->Unwrap(&foreign), &foreign) << "a pointer that is no token comes back as it is";
  EXPECT_EQ(r->Wrap(nullptr), nullptr);
}

}  // namespace
}  // namespace ncclscope::record
