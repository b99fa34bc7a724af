// Device selection over synthetic structs: which ports become net devices, the one-line reason for
// every port considered, the properties NCCL receives (PCI path, port numbering, speed, rails), NCCL's
// device order, the HCA filter, and options read from the tunables.
#include "net/verbs/discovery.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

namespace ncclscope::net::verbs {
namespace {

VerbsGid Gid(int index, const char* text, GidType type) {
  VerbsGid g;
  g.index = index;
  inet_pton(AF_INET6, text, g.raw.data());
  g.type = type;
  return g;
}

VerbsDevice Rxe(const char* name, const char* ip4_mapped) {
  VerbsDevice d;
  d.name = name;
  d.node_type = 1;
  d.transport_type = 0;
  d.supports_rc = true;
  d.max_qp = 1048560;
  d.max_qp_wr = 1048576;
  VerbsPort p;
  p.port_num = 1;
  p.state = 4;
  p.link_layer = LinkLayer::kEthernet;
  p.active_speed = 1;   // SDR
  p.active_width = 2;   // 4X
  p.speed_mbps = PortSpeedMbps(1, 2);
  p.gids = {Gid(0, "fe80::5054:ff:fe12:3456", GidType::kIbOrRoceV1),
            Gid(1, "fe80::5054:ff:fe12:3456", GidType::kRoceV2), Gid(2, ip4_mapped, GidType::kIbOrRoceV1),
            Gid(3, ip4_mapped, GidType::kRoceV2)};
  d.ports.push_back(p);
  return d;
}

VerbsDevice Mlx(const char* name, const char* pci, int state) {
  VerbsDevice d;
  d.name = name;
  d.node_type = 1;
  d.supports_rc = true;
  d.pci_path = pci;
  d.numa_node = 0;
  d.sys_image_guid = 0x1122334455667788ull;
  d.max_qp = 131072;
  VerbsPort p;
  p.port_num = 1;
  p.state = state;
  p.link_layer = LinkLayer::kInfiniBand;
  p.active_speed = 128;
  p.active_width = 2;
  p.speed_mbps = PortSpeedMbps(128, 2);
  p.lid = 7;
  p.gids = {Gid(0, "fe80::248a:703:49:d4f0", GidType::kIbOrRoceV1)};
  d.ports.push_back(p);
  return d;
}

VerbsDevice Efa() {
  VerbsDevice d;
  d.name = "efa0";
  d.node_type = 7;       // IBV_NODE_UNSPECIFIED
  d.transport_type = 4;  // IBV_TRANSPORT_UNSPECIFIED
  d.decline_reason = RcDeclineReason(d.node_type, d.transport_type);
  d.supports_rc = d.decline_reason.empty();
  return d;
}

std::vector<VerbsDevice> Host() {
  return {Rxe("rxe0", "::ffff:198.51.100.1"), Mlx("mlx5_1", "/sys/devices/pci0000:00/0000:00:01.0/0000:5e:00.1", 1),
          Efa(), Mlx("mlx5_0", "/sys/devices/pci0000:00/0000:00:01.0/0000:5e:00.0", 4),
          Mlx("mlx5_2", "/sys/devices/pci0000:00/0000:00:02.0/0000:86:00.0", 4), Rxe("rxe1", "::ffff:203.0.113.1")};
}

bool HasLine(const DiscoveryReport& r, const std::string& line) {
  return std::find(r.lines.begin(), r.lines.end(), line) != r.lines.end();
}

std::vector<std::string> Names(const DiscoveryReport& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices) out.push_back(d.device_name + ":" + std::to_string(d.port_num));
  return out;
}

TEST(SelectNetDevices, ReasonsForEveryPortAndDevice) {
  DiscoveryReport r = SelectNetDevices(Host(), DiscoveryOptions{});
  EXPECT_TRUE(HasLine(r, "rxe0:1 Ethernet 10000 Mbps RoCE v2 GID 3 ::ffff:198.51.100.1: chosen"));
  EXPECT_TRUE(HasLine(r, "mlx5_1:1 port down: skipped"));
  EXPECT_TRUE(HasLine(r, "efa0: no RC QPs: declined"));
  EXPECT_TRUE(HasLine(r, "mlx5_0:1 IB 400000 Mbps LID 7: chosen"));
  EXPECT_EQ(r.lines.size(), 6u);
}

TEST(SelectNetDevices, NcclOrderPciFirstVirtualLast) {
  DiscoveryReport r = SelectNetDevices(Host(), DiscoveryOptions{});
  EXPECT_EQ(Names(r), (std::vector<std::string>{"mlx5_0:1", "mlx5_2:1", "rxe0:1", "rxe1:1"}));
}

TEST(SelectNetDevices, PropertiesNcclReceives) {
  DiscoveryReport r = SelectNetDevices(Host(), DiscoveryOptions{});
  ASSERT_EQ(r.devices.size(), 4u);
  const NetProperties& ib = r.devices[0].props;
  EXPECT_EQ(ib.name, "mlx5_0");
  EXPECT_EQ(ib.pci_path, "/sys/devices/pci0000:00/0000:00:01.0/0000:5e:00.0");
  EXPECT_EQ(ib.guid, 0x1122334455667788ull);
  EXPECT_EQ(ib.ptr_support, 1);
  EXPECT_TRUE(ib.reg_is_global);
  EXPECT_EQ(ib.speed_mbps, 400000);
  EXPECT_EQ(ib.port, 1);
  EXPECT_EQ(ib.max_comms, 131072);
  EXPECT_EQ(ib.max_recvs, kMaxRecvs);
  EXPECT_EQ(ib.rail_id, -1);
  EXPECT_EQ(ib.plane_id, -1);
  EXPECT_EQ(ib.numa_node, 0);
  const VerbsNetDevice& rxe = r.devices[2];
  EXPECT_EQ(rxe.props.pci_path, "");
  EXPECT_EQ(rxe.props.speed_mbps, 10000);
  EXPECT_EQ(rxe.gid.index, 3);
  EXPECT_EQ(rxe.link_layer, LinkLayer::kEthernet);
}

TEST(SelectNetDevices, SecondFunctionOfOneNicGetsTheNextPortNumber) {
  std::vector<VerbsDevice> host = {Mlx("mlx5_0", "/sys/devices/pci0000:00/0000:00:01.0/0000:5e:00.0", 4),
                                   Mlx("mlx5_1", "/sys/devices/pci0000:00/0000:00:01.0/0000:5e:00.1", 4)};
  DiscoveryReport r = SelectNetDevices(host, DiscoveryOptions{});
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].props.pci_path, r.devices[1].props.pci_path);  // one NIC for NCCL's topology
  EXPECT_EQ(r.devices[0].props.port, 1);
  EXPECT_EQ(r.devices[1].props.port, 2);
}

TEST(SelectNetDevices, HcaFilterSelectsAndAssignsRails) {
  DiscoveryOptions o;
  o.hca = "=rxe1:1:5:2,mlx5_0";
  DiscoveryReport r = SelectNetDevices(Host(), o);
  EXPECT_EQ(Names(r), (std::vector<std::string>{"mlx5_0:1", "rxe1:1"}));
  EXPECT_EQ(r.devices[1].props.rail_id, 5);
  EXPECT_EQ(r.devices[1].props.plane_id, 2);
  EXPECT_TRUE(HasLine(r, "rxe1:1 Ethernet 10000 Mbps RoCE v2 GID 3 ::ffff:203.0.113.1 rail 5 plane 2: chosen"));
  EXPECT_TRUE(HasLine(r, "rxe0:1 not selected by NCCL_IB_HCA='=rxe1:1:5:2,mlx5_0': skipped"));
  o.hca = "^rxe0,mlx";
  EXPECT_EQ(Names(SelectNetDevices(Host(), o)), (std::vector<std::string>{"rxe1:1"}));
  o.hca = "rxe";
  EXPECT_EQ(Names(SelectNetDevices(Host(), o)), (std::vector<std::string>{"rxe0:1", "rxe1:1"}));
}

TEST(SelectNetDevices, UnknownSpeedIsReportedAsTenGigabit) {
  std::vector<VerbsDevice> host = {Rxe("rxe0", "::ffff:198.51.100.1")};
  host[0].ports[0].speed_mbps = 0;
  DiscoveryReport r = SelectNetDevices(host, DiscoveryOptions{});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].props.speed_mbps, 10000);
  EXPECT_NE(r.devices[0].reason.find("speed unknown"), std::string::npos);
}

TEST(SelectNetDevices, PortWithoutUsableGidIsSkipped) {
  DiscoveryOptions o;
  o.gid.gid_index = 9;
  std::vector<VerbsDevice> host = {Rxe("rxe0", "::ffff:198.51.100.1")};
  DiscoveryReport r = SelectNetDevices(host, o);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(HasLine(r, "rxe0:1 Ethernet: NCCL_IB_GID_INDEX=9 is not a populated GID: skipped"));
}

TEST(RcDeclineReason, ByNodeAndTransportType) {
  EXPECT_EQ(RcDeclineReason(1, 0), "");  // CA / IB: mlx5, rxe
  EXPECT_NE(RcDeclineReason(4, 1).find("iWARP"), std::string::npos);
  EXPECT_EQ(RcDeclineReason(7, 4), "no RC QPs");  // EFA
}

TEST(DiscoveryOptions, FromTunables) {
  std::map<std::string, std::string> env = {{"NCCL_IB_HCA", "=rxe1"},          {"NCCL_IB_GID_INDEX", "3"},
                                            {"NCCL_IB_ROCE_VERSION_NUM", "1"}, {"NCCL_IB_ADDR_FAMILY", "AF_INET6"},
                                            {"NCCL_IB_ADDR_RANGE", "2001:db8::/32"}, {"NCCL_IB_DISABLE", "1"}};
  auto get = [&env](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  DiscoveryOptions o = DiscoveryOptions::FromParams(ParseParams(get));
  EXPECT_TRUE(o.disabled);
  EXPECT_EQ(o.hca, "=rxe1");
  EXPECT_EQ(o.gid.gid_index, 3);
  EXPECT_EQ(o.gid.roce_version, 1);
  EXPECT_EQ(o.gid.family, AF_INET6);
  ASSERT_TRUE(o.gid.range);
  EXPECT_EQ(o.gid.range->prefix_len, 32);

  DiscoveryOptions d = DiscoveryOptions::FromParams(ParseParams([](const char*) -> const char* { return nullptr; }));
  EXPECT_FALSE(d.disabled);
  EXPECT_EQ(d.hca, "");
  EXPECT_EQ(d.gid.gid_index, -1);
  EXPECT_EQ(d.gid.roce_version, 2);
  EXPECT_EQ(d.gid.family, AF_INET);
  EXPECT_FALSE(d.gid.range);
  EXPECT_EQ(d.sysfs_root, "/sys");
}

}  // namespace
}  // namespace ncclscope::net::verbs
