// Subnet-aware port choice over synthetic ports, as in the direct-connect layout the rdma2 tier builds:
// host A has rxe0 on 198.51.100.0/24 (the link to B) and rxe1 on 192.0.2.0/24 (a link elsewhere).
#include "net/verbs/subnet_route.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace ncclscope::net::verbs {
namespace {

RawGid Gid(const char* text) {
  RawGid g{};
  EXPECT_EQ(inet_pton(AF_INET6, text, g.data()), 1) << text;
  return g;
}
RawGid V4(const char* ip) { return Gid((std::string("::ffff:") + ip).c_str()); }
uint32_t Addr(const char* ip) {
  in_addr a{};
  EXPECT_EQ(inet_pton(AF_INET, ip, &a), 1);
  return a.s_addr;
}

VerbsNetDevice Port(const char* name, const RawGid& gid, LinkLayer ll = LinkLayer::kEthernet) {
  VerbsNetDevice d;
  d.device_name = name;
  d.port_num = 1;
  d.link_layer = ll;
  d.gid.raw = gid;
  return d;
}

TEST(SubnetRoute, Ipv4GidsCompareUnderThePrefixLength) {
  EXPECT_TRUE(GidsShareSubnet(V4("198.51.100.1"), V4("198.51.100.2"), 24));
  EXPECT_FALSE(GidsShareSubnet(V4("198.51.100.1"), V4("198.51.101.2"), 24));
  EXPECT_TRUE(GidsShareSubnet(V4("198.51.100.1"), V4("198.51.101.2"), 16));
  EXPECT_FALSE(GidsShareSubnet(V4("10.0.0.1"), V4("10.0.0.2"), 32));
  EXPECT_TRUE(GidsShareSubnet(V4("10.0.0.1"), V4("10.0.0.1"), 32));
  EXPECT_TRUE(GidsShareSubnet(V4("10.0.0.1"), V4("11.0.0.1"), 1));
}

TEST(SubnetRoute, Ipv6GidsCompareTheirSubnetPrefix) {
  EXPECT_TRUE(GidsShareSubnet(Gid("2001:db8:1:2::1"), Gid("2001:db8:1:2::99"), 24));
  EXPECT_FALSE(GidsShareSubnet(Gid("2001:db8:1:2::1"), Gid("2001:db8:1:3::1"), 24));
  EXPECT_FALSE(GidsShareSubnet(Gid("2001:db8:1:2::1"), V4("198.51.100.1"), 24));  // families differ
  EXPECT_FALSE(GidsShareSubnet(RawGid{}, RawGid{}, 24));                           // zero: no GID
}

TEST(SubnetRoute, KeepsNcclsPortWhenItReachesThePeer) {
  std::vector<VerbsNetDevice> ports{Port("rxe0", V4("198.51.100.1")), Port("rxe1", V4("192.0.2.1"))};
  EXPECT_EQ(ChoosePortBySubnet(ports, 0, {V4("198.51.100.2")}, 24), 0);
}

TEST(SubnetRoute, TakesThePortOnThePeersSubnet) {
  std::vector<VerbsNetDevice> ports{Port("rxe0", V4("192.0.2.1")), Port("rxe1", V4("198.51.100.1"))};
  EXPECT_EQ(ChoosePortBySubnet(ports, 0, {V4("198.51.100.2")}, 24), 1);
  EXPECT_EQ(ChoosePortBySubnet(ports, 1, {V4("192.0.2.7")}, 24), 0);
}

TEST(SubnetRoute, KeepsNcclsPortWhenNothingMatchesOrThePeerGidIsUnknown) {
  std::vector<VerbsNetDevice> ports{Port("rxe0", V4("192.0.2.1")), Port("rxe1", V4("198.51.100.1"))};
  EXPECT_EQ(ChoosePortBySubnet(ports, 1, {V4("203.0.113.2")}, 24), 1);
  EXPECT_EQ(ChoosePortBySubnet(ports, 0, {RawGid{}}, 24), 0);
}

TEST(SubnetRoute, NeverPicksAnInfiniBandPort) {
  std::vector<VerbsNetDevice> ports{Port("mlx5_0", Gid("fe80::1"), LinkLayer::kInfiniBand),
                                    Port("rxe0", V4("198.51.100.1"))};
  EXPECT_EQ(ChoosePortBySubnet(ports, 0, {Gid("fe80::2")}, 24), 0);
  EXPECT_EQ(ChoosePortBySubnet(ports, 0, {V4("198.51.100.9")}, 24), 1);
}

TEST(SubnetRoute, DialsTheListenerAddressOnASubnetWeHave) {
  std::vector<VerbsNetDevice> ports{Port("rxe0", V4("198.51.100.1")), Port("rxe1", V4("192.0.2.1"))};
  // The listener's own port is on 203.0.113.0/24, unreachable; its other port shares our rxe0's subnet.
  EXPECT_EQ(ChooseListenerAddress({Addr("203.0.113.2"), Addr("198.51.100.2")}, ports, 24), Addr("198.51.100.2"));
  EXPECT_EQ(ChooseListenerAddress({Addr("192.0.2.5"), Addr("198.51.100.2")}, ports, 24), Addr("192.0.2.5"));
  EXPECT_EQ(ChooseListenerAddress({Addr("203.0.113.2")}, ports, 24), Addr("203.0.113.2"));  // none: the first
}

TEST(SubnetRoute, LabelsAPortWithItsAddress) {
  EXPECT_EQ(PortLabel(Port("rxe1", V4("198.51.100.2"))), "rxe1:1 (198.51.100.2)");
  EXPECT_EQ(PortLabel(Port("mlx5_0", RawGid{}, LinkLayer::kInfiniBand)), "mlx5_0:1");
}

}  // namespace
}  // namespace ncclscope::net::verbs
