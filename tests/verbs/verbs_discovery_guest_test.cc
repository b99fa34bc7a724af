// Device discovery on real soft-RoCE devices, in the QEMU guest of the rdma tier: rxe0 on
// 198.51.100.1/24 and rxe1 on 203.0.113.1/24 (Ethernet link layer). Checks that both become net
// devices with a speed, the RoCE v2 IPv4-mapped GID of their address and no PCI path NCCL's topology
// could misread, and that NCCL_IB_HCA selects what it says. On a host without a verbs device it prints
// SKIP and exits 77 (ctest's skip code), so it is harmless outside the guest.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/params.h"
#include "net/verbs/discovery.h"
#include "net/verbs/ibv_api.h"

namespace ncclscope::net::verbs {
namespace {

// The guest's devices, enumerated once (verbs_guest_main.cc has checked there are some).
const std::vector<VerbsDevice>& Devices() {
  static const std::vector<VerbsDevice> devices = EnumerateDevices(*LoadIbvApi().value(), "/sys").value();
  return devices;
}

const VerbsNetDevice* Find(const DiscoveryReport& r, const std::string& name) {
  for (const VerbsNetDevice& d : r.devices) {
    if (d.device_name == name) return &d;
  }
  return nullptr;
}

std::vector<std::string> Names(const DiscoveryReport& r) {
  std::vector<std::string> out;
  for (const VerbsNetDevice& d : r.devices) out.push_back(d.device_name + ":" + std::to_string(d.port_num));
  return out;
}

DiscoveryReport Select(const std::string& hca) {
  DiscoveryOptions o;
  o.hca = hca;
  return SelectNetDevices(Devices(), o);
}

void ExpectRoceDevice(const DiscoveryReport& r, const std::string& name, const std::string& gid) {
  const VerbsNetDevice* d = Find(r, name);
  ASSERT_NE(d, nullptr) << name << " was not chosen";
  SCOPED_TRACE(d->reason);
  EXPECT_EQ(d->port_num, 1);
  EXPECT_EQ(d->link_layer, LinkLayer::kEthernet);
  EXPECT_GT(d->props.speed_mbps, 0);
  EXPECT_EQ(d->gid.roce_version, 2);
  EXPECT_EQ(GidToString(d->gid.raw), gid);
  EXPECT_EQ(d->props.name, name);
  EXPECT_EQ(d->props.ptr_support, 1);
  EXPECT_EQ(d->props.rail_id, -1);
  // rxe has no PCI function of its own: either no device link at all, or the link points at the
  // netdev's parent (virtio), which NCCL's topology must not mistake for a NIC function.
  std::printf("%s: full PCI path '%s', reported '%s'\n", name.c_str(), d->full_pci_path.c_str(),
              d->props.pci_path.c_str());
  EXPECT_EQ(d->props.pci_path.find("/infiniband/"), std::string::npos);
  if (!d->props.pci_path.empty()) {
    EXPECT_EQ(d->props.pci_path.rfind("/sys/devices/", 0), 0u) << d->props.pci_path;
  }
}

TEST(VerbsDiscoveryGuest, BothSoftRoceDevicesAreChosen) {
  DiscoveryReport r = Select("");
  for (const std::string& line : r.lines) std::printf("  %s\n", line.c_str());
  for (const VerbsDevice& d : Devices()) {
    for (const VerbsPort& p : d.ports) {
      for (const VerbsGid& g : p.gids) {
        std::printf("  %s:%d GID %d %s type %d netdev %s\n", d.name.c_str(), p.port_num, g.index,
                    GidToString(g.raw).c_str(), static_cast<int>(g.type), g.netdev.c_str());
      }
    }
  }
  ExpectRoceDevice(r, "rxe0", "::ffff:198.51.100.1");
  ExpectRoceDevice(r, "rxe1", "::ffff:203.0.113.1");
}

TEST(VerbsDiscoveryGuest, HcaFilterSelectsWhatItSays) {
  EXPECT_EQ(Names(Select("rxe1")), (std::vector<std::string>{"rxe1:1"}));
  EXPECT_EQ(Names(Select("=rxe0:1")), (std::vector<std::string>{"rxe0:1"}));
  EXPECT_EQ(Names(Select("=rxe0:2")), (std::vector<std::string>{}));
  EXPECT_EQ(Names(Select("^rxe0")), (std::vector<std::string>{"rxe1:1"}));
  EXPECT_EQ(Names(Select("rxe")), (std::vector<std::string>{"rxe0:1", "rxe1:1"}));
}

TEST(VerbsDiscoveryGuest, EnvironmentVariablesReachDiscovery) {
  setenv("NCCL_IB_HCA", "rxe0", 1);
  setenv("NCCLSCOPE_IB_HCA", "=rxe1", 1);  // ours wins
  ReloadParams();
  Result<DiscoveryReport> r = DiscoverVerbsDevices(DiscoveryOptions::FromParams(Params()));
  unsetenv("NCCL_IB_HCA");
  unsetenv("NCCLSCOPE_IB_HCA");
  ReloadParams();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Names(r.value()), (std::vector<std::string>{"rxe1:1"}));
}

TEST(VerbsDiscoveryGuest, RoceVersionOneAndExplicitIndex) {
  DiscoveryOptions o;
  o.hca = "=rxe0";
  o.gid.roce_version = 1;
  DiscoveryReport v1 = SelectNetDevices(Devices(), o);
  ASSERT_EQ(v1.devices.size(), 1u);
  // Recent kernels give rxe RoCE v2 GIDs only: then the IPv4 GID of the other version is used, and
  // the reason says so.
  const GidChoice& gid = v1.devices[0].gid;
  EXPECT_EQ(GidToString(gid.raw), "::ffff:198.51.100.1");
  if (gid.roce_version != 1) {
    EXPECT_NE(gid.reason.find("another RoCE version"), std::string::npos) << gid.reason;
  }
  o.gid.roce_version = 2;
  o.gid.gid_index = 0;
  DiscoveryReport explicit0 = SelectNetDevices(Devices(), o);
  ASSERT_EQ(explicit0.devices.size(), 1u);
  EXPECT_EQ(explicit0.devices[0].gid.index, 0);
}

}  // namespace
}  // namespace ncclscope::net::verbs
