// The sysfs readers over a fake tree in a temporary directory: PCI path through the device link (and
// none for a virtual device), NUMA node, GID types and netdevs, the GID table, and the PCI path NCCL
// reports (functions and VFs merged).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "net/verbs/devices.h"
#include "net/verbs/gid_select.h"

namespace ncclscope::net::verbs {
namespace {

namespace fs = std::filesystem;

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclscope-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    // mlx5_0: a PCI function with a NUMA node and a RoCE port.
    pci_ = root_ + "/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1";
    fs::create_directories(pci_);
    Write(pci_ + "/numa_node", "1\n");
    std::string dev = root_ + "/class/infiniband/mlx5_0";
    fs::create_directories(dev);
    fs::create_directory_symlink(pci_, dev + "/device");
    std::string port = dev + "/ports/1";
    Write(port + "/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
    Write(port + "/gids/1", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
    Write(port + "/gids/2", "0000:0000:0000:0000:0000:ffff:c633:6401\n");
    Write(port + "/gids/3", "0000:0000:0000:0000:0000:ffff:c633:6401\n");
    Write(port + "/gids/4", "0000:0000:0000:0000:0000:0000:0000:0000\n");
    Write(port + "/gid_attrs/types/0", "IB/RoCE v1\n");
    Write(port + "/gid_attrs/types/1", "RoCE v2\n");
    Write(port + "/gid_attrs/types/2", "IB/RoCE v1\n");
    Write(port + "/gid_attrs/types/3", "RoCE v2\n");
    for (int i = 0; i < 4; ++i) Write(port + "/gid_attrs/ndevs/" + std::to_string(i), "eth0\n");
    // rxe0: a virtual device without a device link (and no gid_attrs for index 0).
    fs::create_directories(root_ + "/class/infiniband/rxe0/ports/1/gids");
    Write(root_ + "/class/infiniband/rxe0/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  static void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }

  std::string root_;
  std::string pci_;
};

TEST_F(FakeSysfs, PciPathFollowsTheDeviceLink) {
  EXPECT_EQ(SysfsPciPath(root_, "mlx5_0"), fs::canonical(pci_).string());
  EXPECT_EQ(SysfsPciPath(root_, "rxe0"), "");
  EXPECT_EQ(SysfsPciPath(root_, "nosuch"), "");
}

TEST_F(FakeSysfs, NumaNode) {
  EXPECT_EQ(SysfsNumaNode(root_, "mlx5_0"), 1);
  EXPECT_EQ(SysfsNumaNode(root_, "rxe0"), -1);
}

TEST_F(FakeSysfs, GidTypesAndNetdevs) {
  EXPECT_EQ(SysfsGidType(root_, "mlx5_0", 1, 0), GidType::kIbOrRoceV1);
  EXPECT_EQ(SysfsGidType(root_, "mlx5_0", 1, 1), GidType::kRoceV2);
  EXPECT_EQ(SysfsGidType(root_, "mlx5_0", 1, 9), GidType::kUnknown);
  EXPECT_EQ(SysfsGidType(root_, "rxe0", 1, 0), GidType::kUnknown);
  EXPECT_EQ(SysfsGidNetdev(root_, "mlx5_0", 1, 3), "eth0");
  EXPECT_EQ(SysfsGidNetdev(root_, "mlx5_0", 1, 7), "");
}

TEST_F(FakeSysfs, GidTableDropsZeroEntries) {
  std::vector<VerbsGid> gids = SysfsGids(root_, "mlx5_0", 1, 1024);
  ASSERT_EQ(gids.size(), 4u);
  EXPECT_EQ(GidToString(gids[3].raw), "::ffff:198.51.100.1");
  EXPECT_EQ(gids[3].type, GidType::kRoceV2);
  EXPECT_EQ(gids[3].netdev, "eth0");
  EXPECT_EQ(GidToString(gids[0].raw), "fe80::5054:ff:fe12:3456");
  // The table from sysfs feeds the same GID choice as the verbs one.
  VerbsPort port;
  port.link_layer = LinkLayer::kEthernet;
  port.gids = gids;
  EXPECT_EQ(SelectGid(port, GidPolicy{}).index, 3);
}

TEST(NcclPciPath, MergesFunctionsAndVirtualFunctions) {
  EXPECT_EQ(NcclPciPath("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1"),
            "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0");
  EXPECT_EQ(NcclPciPath("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:02.5"),
            "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0");
  const std::string virtio = "/sys/devices/pci0000:00/0000:00:03.0/virtio0";
  EXPECT_EQ(NcclPciPath(virtio), virtio);  // not a PCI function: left alone
  EXPECT_EQ(NcclPciPath(""), "");
}

}  // namespace
}  // namespace ncclscope::net::verbs
