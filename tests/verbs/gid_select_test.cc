// GID choice over synthetic ports: IB uses GID 0; RoCE defaults to the RoCE v2 IPv4-mapped GID; the
// explicit index, version, family and range settings each change the choice as NCCL's do; and the
// speed table (lane rate x width) matches NCCL's.
#include "net/verbs/gid_select.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

namespace ncclscope::net::verbs {
namespace {

VerbsGid Gid(int index, const char* text, GidType type) {
  VerbsGid g;
  g.index = index;
  EXPECT_EQ(inet_pton(AF_INET6, text, g.raw.data()), 1) << text;
  g.type = type;
  g.netdev = "eth0";
  return g;
}

// What a soft-RoCE port on 198.51.100.1 with an IPv6 address shows: link-local v1/v2, IPv4 v1/v2,
// global IPv6 v1/v2.
VerbsPort RocePort() {
  VerbsPort p;
  p.port_num = 1;
  p.state = 4;
  p.link_layer = LinkLayer::kEthernet;
  p.gid_tbl_len = 1024;
  p.gids = {Gid(0, "fe80::5054:ff:fe12:3456", GidType::kIbOrRoceV1),
            Gid(1, "fe80::5054:ff:fe12:3456", GidType::kRoceV2),
            Gid(2, "::ffff:198.51.100.1", GidType::kIbOrRoceV1),
            Gid(3, "::ffff:198.51.100.1", GidType::kRoceV2),
            Gid(4, "2001:db8::1", GidType::kIbOrRoceV1),
            Gid(5, "2001:db8::1", GidType::kRoceV2)};
  return p;
}

TEST(GidSelect, DefaultIsRoceV2Ipv4Mapped) {
  GidChoice c = SelectGid(RocePort(), GidPolicy{});
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.roce_version, 2);
  EXPECT_EQ(GidToString(c.raw), "::ffff:198.51.100.1");
}

TEST(GidSelect, RoceVersionOne) {
  GidPolicy p;
  p.roce_version = 1;
  EXPECT_EQ(SelectGid(RocePort(), p).index, 2);
}

TEST(GidSelect, Ipv6FamilySkipsLinkLocal) {
  GidPolicy p;
  p.family = AF_INET6;
  GidChoice c = SelectGid(RocePort(), p);
  EXPECT_EQ(c.index, 5);
  EXPECT_EQ(GidToString(c.raw), "2001:db8::1");
}

TEST(GidSelect, ExplicitIndexWinsAndMustBePopulated) {
  GidPolicy p;
  p.gid_index = 1;
  EXPECT_EQ(SelectGid(RocePort(), p).index, 1);
  p.gid_index = 17;
  GidChoice none = SelectGid(RocePort(), p);
  EXPECT_EQ(none.index, -1);
  EXPECT_NE(none.reason.find("17"), std::string::npos);
}

TEST(GidSelect, AddressRangeFilters) {
  VerbsPort port = RocePort();
  port.gids.push_back(Gid(6, "::ffff:203.0.113.1", GidType::kIbOrRoceV1));
  port.gids.push_back(Gid(7, "::ffff:203.0.113.1", GidType::kRoceV2));
  std::string why;
  GidPolicy p;
  p.range = ParseAddrRange("203.0.113.0/24", AF_INET, &why);
  ASSERT_TRUE(p.range) << why;
  EXPECT_EQ(SelectGid(port, p).index, 7);
  p.range = ParseAddrRange("198.51.100.0/24", AF_INET, &why);
  EXPECT_EQ(SelectGid(port, p).index, 3);
  p.range = ParseAddrRange("192.0.2.0/24", AF_INET, &why);  // nothing inside: NCCL's fallback to GID 0
  GidChoice c = SelectGid(port, p);
  EXPECT_EQ(c.index, 0);
  EXPECT_NE(c.reason.find("falling back"), std::string::npos);
  p.family = AF_INET6;
  p.range = ParseAddrRange("2001:db8::/32", AF_INET6, &why);
  ASSERT_TRUE(p.range) << why;
  EXPECT_EQ(SelectGid(port, p).index, 5);
}

TEST(GidSelect, BadRangesDoNotParse) {
  std::string why;
  EXPECT_FALSE(ParseAddrRange("198.51.100.0", AF_INET, &why));
  EXPECT_FALSE(ParseAddrRange("198.51.100.0/33", AF_INET, &why));
  EXPECT_FALSE(ParseAddrRange("nonsense/8", AF_INET, &why));
  EXPECT_FALSE(ParseAddrRange("2001:db8::/8", AF_INET, &why));
}

TEST(GidSelect, OtherVersionWhenTheWantedOneIsMissing) {
  VerbsPort port = RocePort();
  port.gids = {Gid(0, "fe80::1", GidType::kIbOrRoceV1), Gid(1, "::ffff:198.51.100.1", GidType::kIbOrRoceV1)};
  GidChoice c = SelectGid(port, GidPolicy{});
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.roce_version, 1);
}

TEST(GidSelect, NoGidAtAllDeclines) {
  VerbsPort port = RocePort();
  port.gids.clear();
  EXPECT_EQ(SelectGid(port, GidPolicy{}).index, -1);
}

TEST(GidSelect, InfiniBandUsesIndexZeroAndLid) {
  VerbsPort port;
  port.link_layer = LinkLayer::kInfiniBand;
  port.lid = 42;
  port.gids = {Gid(0, "fe80::248a:703:49:d4f0", GidType::kIbOrRoceV1)};
  GidPolicy p;
  p.gid_index = 3;  // a RoCE setting: ignored on IB
  GidChoice c = SelectGid(port, p);
  EXPECT_EQ(c.index, 0);
  EXPECT_NE(c.reason.find("LID 42"), std::string::npos);
}

TEST(GidSelect, FamilyAndValidity) {
  EXPECT_EQ(GidFamily(Gid(0, "::ffff:10.0.0.1", GidType::kRoceV2).raw), AF_INET);
  EXPECT_EQ(GidFamily(Gid(0, "ff0e::ffff:239.1.1.1", GidType::kRoceV2).raw), AF_INET);
  EXPECT_EQ(GidFamily(Gid(0, "fe80::1", GidType::kRoceV2).raw), AF_INET6);
  EXPECT_FALSE(GidIsValid(Gid(0, "fe80::1", GidType::kRoceV2).raw));  // link-local
  EXPECT_FALSE(GidIsValid(Gid(0, "::", GidType::kRoceV2).raw));
  EXPECT_FALSE(GidIsValid(Gid(0, "fe80::", GidType::kRoceV2).raw));
  EXPECT_TRUE(GidIsValid(Gid(0, "::ffff:10.0.0.1", GidType::kRoceV2).raw));
}

TEST(PortSpeed, NcclTable) {
  EXPECT_EQ(PortSpeedMbps(1, 1), 2500);      // SDR 1X
  EXPECT_EQ(PortSpeedMbps(2, 2), 20000);     // DDR 4X
  EXPECT_EQ(PortSpeedMbps(4, 2), 40000);     // QDR 4X
  EXPECT_EQ(PortSpeedMbps(8, 2), 40000);     // FDR10 4X (NCCL counts it as QDR)
  EXPECT_EQ(PortSpeedMbps(16, 2), 56000);    // FDR 4X
  EXPECT_EQ(PortSpeedMbps(32, 2), 100000);   // EDR 4X
  EXPECT_EQ(PortSpeedMbps(64, 2), 200000);   // HDR 4X
  EXPECT_EQ(PortSpeedMbps(128, 2), 400000);  // NDR 4X
  EXPECT_EQ(PortSpeedMbps(128, 16), 200000); // NDR 2X
  EXPECT_EQ(PortSpeedMbps(256, 2), 800000);  // XDR 4X (active_speed_ex)
  EXPECT_EQ(PortSpeedMbps(32, 8), 300000);   // EDR 12X
  EXPECT_EQ(PortSpeedMbps(0, 2), 0);         // unknown
  EXPECT_EQ(PortSpeedMbps(32, 0), 0);
}

}  // namespace
}  // namespace ncclscope::net::verbs
