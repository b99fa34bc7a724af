// Which v7 layout ncclscope reads for which collective library (src/plugin/profiler/rccl_layout.h): the verdict
// rules, and the detection itself with the sim's fake librccl.so loaded into this process.
#include "plugin/profiler/rccl_layout.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace ncclscope::profiler::abi {
namespace {

RcclHost Host(const char* lib, int version, bool coll_config) {
  RcclHost h;
  h.library = lib;
  h.version = version;
  h.coll_config = coll_config;
  return h;
}

TEST(RcclLayout, NoRcclIsNvidiaWithoutALogLine) {
  std::string why = "stale";
  EXPECT_EQ(V7ReadingFor(Host("", 23102, true), &why), V7Reading::kNvidia);
  EXPECT_EQ(why, "");
}

TEST(RcclLayout, Rccl231WithCollConfigKeepsV7) {
  std::string why;
  EXPECT_EQ(V7ReadingFor(Host("/opt/rocm/lib/librccl.so.1", 23100, true), &why), V7Reading::kRcclAppended);
  EXPECT_NE(why.find("RCCL (NCCL 2.31.0 base, /opt/rocm/lib/librccl.so.1)"), std::string::npos) << why;
  EXPECT_NE(why.find("NVIDIA's layout"), std::string::npos) << why;
}

TEST(RcclLayout, DeclinesWithoutCollConfigOrBefore231OrUnknownVersion) {
  std::string why;
  EXPECT_EQ(V7ReadingFor(Host("librccl.so", 23102, false), &why), V7Reading::kRcclAsV6);
  EXPECT_NE(why.find("has no ncclAllReduceConfig"), std::string::npos) << why;
  EXPECT_EQ(V7ReadingFor(Host("librccl.so", 22807, true), &why), V7Reading::kRcclAsV6);
  EXPECT_NE(why.find("predates NCCL 2.31"), std::string::npos) << why;
  EXPECT_EQ(V7ReadingFor(Host("librccl.so", 0, true), &why), V7Reading::kRcclAsV6);
  EXPECT_NE(why.find("unknown version"), std::string::npos) << why;
  EXPECT_NE(why.find("declining profiler v7's additions"), std::string::npos) << why;
}

#ifdef NCCLSCOPE_FAKE_RCCL_DIR
// Before and after loading the fake: found by its name, with the symbol the "rccl" fake has.
// NCCLSCOPE_RCCL_V7 overrides the heuristic either way under RCCL, and never applies without it.
TEST(RcclLayout, TheOperatorsChoiceOverridesTheHeuristicUnderRcclOnly) {
  std::string why;
  EXPECT_EQ(V7ReadingFor(Host("librccl.so", 23102, true), &why, "v6"), V7Reading::kRcclAsV6);
  EXPECT_NE(why.find("NCCLSCOPE_RCCL_V7=v6"), std::string::npos) << why;
  EXPECT_EQ(V7ReadingFor(Host("librccl.so", 23102, false), &why, "v7"), V7Reading::kRcclAppended);
  EXPECT_NE(why.find("NCCLSCOPE_RCCL_V7=v7"), std::string::npos) << why;
  EXPECT_EQ(V7ReadingFor(Host("", 23102, false), &why, "v6"), V7Reading::kNvidia);
  EXPECT_EQ(why, "");
}

TEST(RcclLayout, FindsALoadedLibrcclAndItsConfigApi) {
  EXPECT_EQ(FindRccl().library, "");
  const std::string path = std::string(NCCLSCOPE_FAKE_RCCL_DIR) + "/fake-rccl/librccl.so";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  RcclHost found = FindRccl();
  EXPECT_EQ(found.library, path);
  EXPECT_TRUE(found.coll_config);
  dlclose(h);
  EXPECT_EQ(FindRccl().library, "");
}
#endif

}  // namespace
}  // namespace ncclscope::profiler::abi
