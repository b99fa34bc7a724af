// In-process unit tests of the net half's pure parts: NCCL_SOCKET_IFNAME matching, the slicing rule
// both ends must agree on, the transport ladder (with a fake sysfs root), and the properties every ABI
// version reports (every field written, from one internal struct).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstring>
#include <string>

#include "common/params.h"
#include "harness.h"
#include "socket/interfaces.h"
#include "net/tcp/wire.h"
#include "net/api/transport_registry.h"
#include "net/verbs/verbs_probe.h"

namespace ncclscope {
namespace {

TEST(InterfaceFilter, NcclSocketIfnameSyntax) {
  using sock::InterfaceMatches;
  EXPECT_TRUE(InterfaceMatches("", "eth0", false));
  EXPECT_FALSE(InterfaceMatches("", "lo", true));  // loopback only when asked
  EXPECT_FALSE(InterfaceMatches("", "docker0", false));
  EXPECT_TRUE(InterfaceMatches("eth", "eth1", false));
  EXPECT_FALSE(InterfaceMatches("eth", "ib0", false));
  EXPECT_TRUE(InterfaceMatches("ib,eth", "ib0", false));
  EXPECT_TRUE(InterfaceMatches("=eth0", "eth0", false));
  EXPECT_FALSE(InterfaceMatches("=eth0", "eth01", false));
  EXPECT_FALSE(InterfaceMatches("^eth", "eth0", false));
  EXPECT_TRUE(InterfaceMatches("^eth", "ib0", false));
  EXPECT_FALSE(InterfaceMatches("^eth", "lo", true));
  EXPECT_TRUE(InterfaceMatches("lo", "lo", true));
  EXPECT_FALSE(InterfaceMatches("^=eth0", "eth0", false));
  EXPECT_TRUE(InterfaceMatches("^=eth0", "eth01", false));
}

TEST(InterfaceDiscovery, LoopbackOnlyWhenNamed) {
  auto lo = sock::DiscoverInterfaces("lo");
  ASSERT_EQ(lo.size(), 1u);
  EXPECT_EQ(lo[0].name, "lo");
  EXPECT_TRUE(lo[0].pci_path.empty());
  for (const auto& i : sock::DiscoverInterfaces("")) EXPECT_FALSE(i.loopback) << i.name;
  EXPECT_TRUE(sock::DiscoverInterfaces("=nosuchif0").empty());
}

TEST(Slicing, CoversEveryByteOnceAndRotatesSockets) {
  const uint64_t sizes[] = {0, 1, 4095, 4096, 65536, 65537, 1 << 20, (64u << 20) + 3, 1ull << 30};
  for (int nsocks = 1; nsocks <= 8; ++nsocks) {
    for (uint64_t size : sizes) {
      int n = net::tcp::NumSlices(size, nsocks, 64 * 1024);
      ASSERT_GE(n, 1);
      ASSERT_LE(n, nsocks);
      uint64_t next = 0;
      for (int i = 0; i < n; ++i) {
        uint64_t off, len;
        net::tcp::SliceRange(size, n, i, &off, &len);
        EXPECT_EQ(off, next) << size << "/" << nsocks;
        next = off + len;
      }
      EXPECT_EQ(next, size);
    }
  }
  EXPECT_EQ(net::tcp::NumSlices(1000, 4, 64 * 1024), 1);  // small messages use one socket
  EXPECT_NE(net::tcp::SocketOfSlice(0, 0, 4), net::tcp::SocketOfSlice(1, 0, 4));
}

class Ladder : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclscope-fake-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    mkdir((root_ + "/class").c_str(), 0755);
    mkdir((root_ + "/class/infiniband").c_str(), 0755);
    net::verbs::SetSysfsRootForTest(root_);
  }
  void TearDown() override {
    net::verbs::SetSysfsRootForTest("");
    std::string cmd = "rm -rf " + root_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  void AddFakeVerbsDevice() { mkdir((root_ + "/class/infiniband/mlx5_0").c_str(), 0755); }
  std::string root_;
};

TEST_F(Ladder, AutoWithoutRdmaPicksTcp) {
  auto c = net::ChooseTransport("auto", false);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_STREQ(c->entry->name, "tcp");
  EXPECT_NE(c->reason.find("no RDMA device"), std::string::npos);
}

TEST_F(Ladder, AutoWithRdmaDeclinesSoNcclUsesItsOwnIb) {
  AddFakeVerbsDevice();
  EXPECT_EQ(net::verbs::ListVerbsDeviceNames(), std::vector<std::string>{"mlx5_0"});
  auto c = net::ChooseTransport("auto", false);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("1 RDMA device(s): mlx5_0"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("declining, so that NCCL's own IB transport carries the data"),
            std::string::npos);
  EXPECT_NE(c.status().message().find("NCCLSCOPE_TRANSPORT=ib"), std::string::npos);
  EXPECT_NE(c.status().message().find("NCCLSCOPE_TRANSPORT=tcp"), std::string::npos);
}

TEST_F(Ladder, AutoWithIbDisabledTakesTcpEvenWithRdma) {
  AddFakeVerbsDevice();
  auto c = net::ChooseTransport("auto", /*ib_disabled=*/true);
  ASSERT_TRUE(c.ok());
  EXPECT_STREQ(c->entry->name, "tcp");
  EXPECT_NE(c->reason.find("NCCL_IB_DISABLE"), std::string::npos);
}

TEST_F(Ladder, UserOverrideTcpWinsOverRdmaHardware) {
  AddFakeVerbsDevice();
  auto c = net::ChooseTransport("tcp", false);
  ASSERT_TRUE(c.ok());
  EXPECT_STREQ(c->entry->name, "tcp");
}

TEST_F(Ladder, IbRequestWithoutUsableDeviceFailsClearly) {
  auto c = net::ChooseTransport("ib", false);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no RDMA device is usable"), std::string::npos) << c.status().message();
  AddFakeVerbsDevice();  // present in sysfs, but libibverbs cannot open a fake device
  c = net::ChooseTransport("ib", false);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("mlx5_0"), std::string::npos) << c.status().message();
  c = net::ChooseTransport("ib", true);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("NCCL_IB_DISABLE"), std::string::npos);
}

// Every version's init through the linked tables: auto + fake RDMA fails init; the ladder line and
// the device list appear; properties are fully written for every version.
TEST(NetInit, LadderAndPropertiesThroughEveryTable) {
  using namespace testing;
  for (int v = 8; v <= 12; ++v) {
    pid_t pid = Spawn(
        [v] {
          setenv("NCCLSCOPE_TRANSPORT", "auto", 1);
          ReloadParams();
          char tmpl[] = "/tmp/ncclscope-fake-sysfs-XXXXXX";
          CHILD_CHECK(mkdtemp(tmpl) != nullptr);
          std::string root = tmpl;
          mkdir((root + "/class").c_str(), 0755);
          mkdir((root + "/class/infiniband").c_str(), 0755);
          mkdir((root + "/class/infiniband/rxe0").c_str(), 0755);
          net::verbs::SetSysfsRootForTest(root);
          std::string err;
          auto net = PluginNet::Open(v, TableSource::kLinked, &err);
          CHILD_CHECK(net != nullptr);
          CHILD_CHECK(net->Init(1, CaptureLogger, nullptr) == NCCLSCOPE_INTERNAL_ERROR);
          CHILD_CHECK(LastWarning().find("RDMA device") != std::string::npos);
          net::verbs::SetSysfsRootForTest(root + "/none");
          // No interface matches: init fails with a clear line.
          setenv("NCCLSCOPE_SOCKET_IFNAME", "=nosuchif0", 1);
          ReloadParams();
          CHILD_CHECK(net->Init(1, CaptureLogger, nullptr) == NCCLSCOPE_SYSTEM_ERROR);
          CHILD_CHECK(LastWarning().find("no usable network interface") != std::string::npos);
          setenv("NCCLSCOPE_SOCKET_IFNAME", "lo", 1);
          ReloadParams();
          CHILD_CHECK(net->Init(1, CaptureLogger, nullptr) == 0);
          int n = 0;
          CHILD_CHECK(net->Devices(&n) == 0 && n == 1);
          PropsView p;
          CHILD_CHECK(net->Props(0, &p) == 0);
          CHILD_CHECK(p.name == "lo" && !p.has_pci);
          CHILD_CHECK(p.ptr_support == NCCLSCOPE_PTR_HOST && p.max_recvs == 8 && p.max_comms > 0);
          CHILD_CHECK(p.speed > 0 && p.net_device_type == NCCLSCOPE_NET_DEVICE_HOST);
          if (v >= 9) CHILD_CHECK(p.vdevs == 1 && p.max_p2p > 0 && p.max_p2p <= (1ull << 40));
          if (v >= 12) CHILD_CHECK(p.rail == -1 && p.plane == -1);
          CHILD_CHECK(net->Props(5, &p) != 0);
          CHILD_CHECK(net->Finalize() == 0);
          return 0;
        },
        {{"NCCLSCOPE_PROM_PORT", "-1"}});
    EXPECT_EQ(Reap(pid, 30), 0) << "v" << v;
  }
}

}  // namespace
}  // namespace ncclscope
