// Unit tests of the sim's plugin loader: NCCL's name rules and symbol probe orders (docs/nccl-abi.md#loading), and
// the clear errors the sim prints when a library or table is missing. Built from the sim's own sources.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin_loader.h"

namespace ncclscope::sim {
namespace {

using V = std::vector<std::string>;

TEST(SimLoader, NetNameRules) {
  EXPECT_EQ(PluginCandidates("net", nullptr), V({"libnccl-net.so"}));
  EXPECT_EQ(PluginCandidates("net", "none"), V());
  EXPECT_EQ(PluginCandidates("net", "NoNe"), V());
  EXPECT_EQ(PluginCandidates("net", "ncclscope"), V({"ncclscope", "libnccl-net-ncclscope.so"}));
  EXPECT_EQ(PluginCandidates("net", "/opt/x/libfoo.so"), V({"/opt/x/libfoo.so"}));
  EXPECT_EQ(PluginCandidates("net", "./foo"), V({"./foo"}));
  EXPECT_EQ(PluginCandidates("net", "libfoo.so"), V({"libfoo.so"}));
  // NCCL compares with the length of the value: any prefix of STATIC_PLUGIN means dlopen(NULL).
  EXPECT_EQ(PluginCandidates("net", "STATIC_PLUGIN"), V({""}));
  EXPECT_EQ(PluginCandidates("net", "static"), V({""}));
}

TEST(SimLoader, ProfilerNameRules) {
  EXPECT_EQ(PluginCandidates("profiler", nullptr), V({"libnccl-profiler.so"}));
  EXPECT_EQ(PluginCandidates("profiler", "ncclscope"), V({"ncclscope", "libnccl-profiler-ncclscope.so"}));
  EXPECT_EQ(PluginCandidates("profiler", "none"), V());
}

TEST(SimLoader, ProbeOrders) {
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_30).front(), "ncclNetPlugin_v12");
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_28).front(), "ncclNetPlugin_v11");
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_28).back(), "ncclNetPlugin_v6");
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_28).size(), 6u);
  EXPECT_EQ(ProfilerProbeOrder(NcclVersion::k2_30), V({"ncclProfiler_v6", "ncclProfiler_v5", "ncclProfiler_v4",
                                                       "ncclProfiler_v3", "ncclProfiler_v2", "ncclProfiler_v1"}));
  EXPECT_EQ(ProfilerProbeOrder(NcclVersion::k2_28).front(), "ncclProfiler_v5");
  // The releases before 2.28: newest net v8 (2.23), v9 (2.25), v10 (2.26, 2.27); profiler v1, v2, v3, v4.
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_23).front(), "ncclNetPlugin_v8");
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_25).front(), "ncclNetPlugin_v9");
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_26).front(), "ncclNetPlugin_v10");
  EXPECT_EQ(NetProbeOrder(NcclVersion::k2_27).front(), "ncclNetPlugin_v10");
  EXPECT_EQ(ProfilerProbeOrder(NcclVersion::k2_23), V({"ncclProfiler_v1"}));
  EXPECT_EQ(ProfilerProbeOrder(NcclVersion::k2_25).front(), "ncclProfiler_v2");
  EXPECT_EQ(ProfilerProbeOrder(NcclVersion::k2_26).front(), "ncclProfiler_v3");
  EXPECT_EQ(ProfilerProbeOrder(NcclVersion::k2_27).front(), "ncclProfiler_v4");
}

TEST(SimLoader, BindsNewestTableOfTheChosenVersion) {
  PluginHost& host = PluginHost::Instance();
  for (auto [v, want] : {std::pair{NcclVersion::k2_30, 12}, std::pair{NcclVersion::k2_28, 11},
                         std::pair{NcclVersion::k2_26, 10}, std::pair{NcclVersion::k2_25, 9},
                         std::pair{NcclVersion::k2_23, 8}}) {
    host.Configure(v, NCCLSCOPE_PLUGIN_PATH, "none", true, true);
    std::string err;
    NetApi* net = host.AcquireNet(&err);
    ASSERT_NE(net, nullptr) << err;
    EXPECT_EQ(net->version, want);
    host.ReleaseNet();  // the last user: dlclose, the next Acquire loads afresh
  }
}

TEST(SimLoader, MissingTableIsNamed) {
  PluginHost& host = PluginHost::Instance();
  // A library with no ncclNetPlugin_v* at all: libc.
  host.Configure(NcclVersion::k2_30, "libc.so.6", "none", true, true);
  std::string err;
  EXPECT_EQ(host.AcquireNet(&err), nullptr);
  EXPECT_NE(err.find("ncclNetPlugin_v12"), std::string::npos) << err;
  EXPECT_NE(err.find("is unsupported"), std::string::npos) << err;
}

}  // namespace
}  // namespace ncclscope::sim
