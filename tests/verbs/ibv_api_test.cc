// Loading libibverbs: a missing library is a clean error naming what to install (the plugin still
// loads); the installed one resolves every required entry point; on a host without RDMA devices
// discovery returns an empty report rather than failing.
#include "net/verbs/ibv_api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "net/verbs/discovery.h"

namespace ncclscope::net::verbs {
namespace {

constexpr const char* kMissing = "libncclscope-no-such-ibverbs.so.1";

TEST(IbvApi, MissingLibraryIsACleanError) {
  Result<IbvApi> r = LoadIbvApiFrom(kMissing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kSystem);
  EXPECT_NE(r.status().message().find(std::string(kMissing) + " not found: install rdma-core / ibverbs-providers"),
            std::string::npos)
      << r.status().message();
}

TEST(IbvApi, DiscoveryWithoutTheLibraryFailsCleanly) {
  DiscoveryOptions o;
  o.ibverbs_soname = kMissing;
  Result<DiscoveryReport> r = DiscoverVerbsDevices(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not found"), std::string::npos);
}

TEST(IbvApi, InstalledLibraryResolvesEveryRequiredSymbol) {
  Result<const IbvApi*> r = LoadIbvApi();
  if (!r.ok()) GTEST_SKIP() << r.status().message();
  const IbvApi& api = *r.value();
  auto p = [](auto fn) { return reinterpret_cast<const void*>(fn); };
  const std::pair<const char*, const void*> required[] = {
      {"get_device_list", p(api.get_device_list)}, {"free_device_list", p(api.free_device_list)},
      {"get_device_name", p(api.get_device_name)}, {"open_device", p(api.open_device)},
      {"close_device", p(api.close_device)},       {"query_device", p(api.query_device)},
      {"query_port", p(api.query_port_compat)},    {"query_gid", p(api.query_gid)},
      {"alloc_pd", p(api.alloc_pd)},               {"dealloc_pd", p(api.dealloc_pd)},
      {"reg_mr", p(api.reg_mr)},                   {"dereg_mr", p(api.dereg_mr)},
      {"create_cq", p(api.create_cq)},             {"destroy_cq", p(api.destroy_cq)},
      {"create_qp", p(api.create_qp)},             {"modify_qp", p(api.modify_qp)},
      {"destroy_qp", p(api.destroy_qp)},           {"event_type_str", p(api.event_type_str)},
      {"wc_status_str", p(api.wc_status_str)},     {"port_state_str", p(api.port_state_str)}};
  for (const auto& [name, fn] : required) EXPECT_NE(fn, nullptr) << name;
  EXPECT_STREQ(api.wc_status_str(IBV_WC_SUCCESS), "success");
  // The same table every time: loaded once.
  EXPECT_EQ(LoadIbvApi().value(), r.value());
}

TEST(IbvApi, HostWithoutDevicesGivesAnEmptyReport) {
  Result<DiscoveryReport> r = DiscoverVerbsDevices(DiscoveryOptions{});
  if (!r.ok()) GTEST_SKIP() << r.status().message();  // no rdma-core on this host
  if (!r->devices.empty() || r->lines.size() != 1) GTEST_SKIP() << "this host has verbs devices";
  EXPECT_EQ(r->lines[0], "no verbs device found");
}

TEST(IbvApi, DisabledLoadsNothing) {
  DiscoveryOptions o;
  o.disabled = true;
  o.ibverbs_soname = kMissing;  // would fail if it were loaded
  Result<DiscoveryReport> r = DiscoverVerbsDevices(o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->devices.empty());
}

}  // namespace
}  // namespace ncclscope::net::verbs
