// Loading libibverbs: a missing library is a clean error naming what to install (the plugin still
// loads); the installed one resolves every required entry point; on a host without RDMA devices
// discovery returns an empty report rather than failing.
#include "net/verbs/ibv_api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

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
  for (const void* fn : {reinterpret_cast<const void*>(api.get_device_list), reinterpret_cast<const void*>(api.free_device_list),
                         reinterpret_cast<const void*>(api.get_device_name), reinterpret_cast<const void*>(api.open_device),
                         reinterpret_cast<const void*>(api.close_device), reinterpret_cast<const void*>(api.query_device),
                         reinterpret_cast<const void*>(api.query_port_compat), reinterpret_cast<const void*>(api.query_gid),
                         reinterpret_cast<const void*>(api.alloc_pd), reinterpret_cast<const void*>(api.dealloc_pd),
                         reinterpret_cast<const void*>(api.reg_mr), reinterpret_cast<const void*>(api.dereg_mr),
                         reinterpret_cast<const void*>(api.create_cq), reinterpret_cast<const void*>(api.destroy_cq),
                         reinterpret_cast<const void*>(api.create_qp), reinterpret_cast<const void*>(api.modify_qp),
                         reinterpret_cast<const void*>(api.destroy_qp), reinterpret_cast<const void*>(api.event_type_str),
                         reinterpret_cast<const void*>(api.wc_status_str)}) {
    EXPECT_NE(fn, nullptr);
  }
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
