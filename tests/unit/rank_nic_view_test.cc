// What both exporters say of this rank's NICs (nic_view/rank_nic_view.h): the interfaces a rank uses, and its TCP
// retransmissions per NIC, ncclscope's own connections and the process's others together.
#include "nic_view/rank_nic_view.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace ncclscope {
namespace {

TEST(RankNicViewTest, NetdevsOfNamesEachInterfaceOnceInOrder) {
  RankNics nics;
  nics.nics = {{"mlx5_0", 1, "ens1", std::nullopt}, {"mlx5_1", 1, "ens1", std::nullopt},
               {"", 0, "eth0", std::nullopt}, {"mlx5_2", 1, "", std::nullopt}};  // native IB: no interface
  EXPECT_EQ(NetdevsOf(nics), (std::vector<std::string>{"ens1", "eth0"}));
}

TEST(RankNicViewTest, TcpRetransmitsAddOursToTheProcessOthersPerNic) {
  // A real loopback connection nobody registered: the walk of the process's descriptors finds it on lo.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const int peer = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(peer, 0);
  NicTcpInfo a, a_again, b;
  a.nic = a_again.nic = "view-test-a";
  a.retransmits = 5;
  a_again.retransmits = 2;
  b.nic = "view-test-b";
  const std::map<std::string, uint64_t> by_nic = TcpRetransmitsByNic({a, a_again, b});
  EXPECT_EQ(by_nic.at("view-test-a"), 7u);
  EXPECT_EQ(by_nic.at("view-test-b"), 0u);
  EXPECT_EQ(by_nic.count("lo"), 1u) << "the process's other connections count too";
  for (int fd : {client, peer, listener}) ::close(fd);
}

}  // namespace
}  // namespace ncclscope
