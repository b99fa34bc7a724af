// Which NICs a rank uses, and the PCI distances that infer it where NCCL's own transport carries the data. This
// host has no GPU and no PCI NIC, so the PCI tree is a sysfs tree laid out in a temporary folder as the kernel lays
// out a two-socket GPU server's (devices/pci<root>/<bridges…>/<function>, class/infiniband/<dev>/device and
// bus/pci/devices/<addr> as links into it): a fake of a topology that cannot be had here. The guest tier reads
// real rxe devices, which have no PCI function (rdma2_lossy_link_counters).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/process_identity.h"
#include "gtest/gtest.h"
#include "host_nics/pci_distance.h"
#include "host_nics/rank_nics.h"

namespace ncclscope {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// GPU0 and GPU1 share a PCIe switch with mlx5_0 under socket 0's first root port; mlx5_1 hangs off another root
// port of the same host bridge; mlx5_4 off a second host bridge of socket 0; GPU2 and mlx5_2 share a switch on
// socket 1; GPU3 sits two switches down, mlx5_3 (whose port is down) one; rxe0 has no PCI function.
class PciTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclscope-pcitree-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    Function("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", 0, kNvidia, kGpuClass);  // GPU0
    Function("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0", 0, kNvidia, kGpuClass);  // GPU1
    Nic("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", 0, true);
    Nic("mlx5_1", "pci0000:00/0000:00:02.0/0000:06:00.0", 0, true);
    Nic("mlx5_4", "pci0000:40/0000:40:01.0/0000:41:00.0", 0, true);
    Function("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0", 1, kNvidia, kGpuClass);  // GPU2
    Nic("mlx5_2", "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:84:00.0", 1, true);
    const std::string sw = "pci0000:80/0000:80:02.0/0000:91:00.0/0000:92:00.0";
    Function(sw + "/0000:93:00.0/0000:94:00.0/0000:95:00.0", 1, kNvidia, kGpuClass);  // GPU3
    Nic("mlx5_3", "pci0000:80/0000:80:02.0/0000:91:00.0/0000:97:00.0/0000:98:00.0", 1, false);  // port down
    Function("pci0000:80/0000:80:03.0/0000:a0:00.0", 1, kNvidia, "0x068000");  // an NVSwitch: not a GPU
    Write(root_ / "class/infiniband/rxe0/ports/1/state", "4: ACTIVE");  // soft-RoCE: no PCI function
  }
  void TearDown() override { fs::remove_all(root_); }

  static constexpr const char* kNvidia = "0x10de";
  static constexpr const char* kGpuClass = "0x030200";

  fs::path Function(const std::string& path, int numa, const std::string& vendor, const std::string& cls) {
    const fs::path dir = root_ / "devices" / path;
    Write(dir / "numa_node", std::to_string(numa));
    Write(dir / "vendor", vendor);
    Write(dir / "class", cls);
    fs::create_directories(root_ / "bus/pci/devices");
    fs::create_directory_symlink(dir, root_ / "bus/pci/devices" / dir.filename());
    return dir;
  }
  void Nic(const std::string& name, const std::string& path, int numa, bool active) {
    const fs::path dir = Function(path, numa, "0x15b3", "0x020700");
    const fs::path dev = root_ / "class/infiniband" / name;
    fs::create_directories(dev / "ports/1");
    fs::create_directory_symlink(dir, dev / "device");
    Write(dev / "ports/1/state", active ? "4: ACTIVE" : "1: DOWN");
  }
  SysfsDeviceLocation Gpu(const std::string& addr) const { return PciFunctionLocation(root_, addr); }
  std::vector<RdmaPort> Ports() const { return ReadRdmaPorts(root_, /*counters=*/false); }
  const RdmaPort& Port(const std::vector<RdmaPort>& ports, const std::string& device) const {
    for (const RdmaPort& p : ports) {
      if (p.device == device) return p;
    }
    static const RdmaPort none;
    return none;
  }
  // The PCI NICs' ports.
  RankNicInputs Inputs() const {
    RankNicInputs in;
    for (RdmaPort& p : Ports()) {
      if (p.device != "rxe0") in.ports.push_back(std::move(p));
    }
    return in;
  }
  static std::string Label(const RankNics& n) {
    return std::string(NicMappingName(n.mapping)) + " " + RankNicsLabel(n);
  }

  fs::path root_;
};

TEST_F(PciTree, DistancesReadAsNvidiaSmiTopoDoes) {
  const std::vector<RdmaPort> ports = Ports();
  const SysfsDeviceLocation gpu0 = Gpu("0000:03:00.0"), gpu3 = Gpu("0000:95:00.0");
  ASSERT_EQ(Port(ports, "mlx5_0").location.pci, "0000:04:00.0");
  auto between = [&](const SysfsDeviceLocation& g, const char* nic) {
    const std::optional<PciDistance> d = PciDistanceBetween(g, Port(ports, nic).location);
    return d ? std::string(PciPathTypeName(d->type)) + "/" + std::to_string(d->hops) : "none";
  };
  EXPECT_EQ(between(gpu0, "mlx5_0"), "PIX/4");  // one switch
  EXPECT_EQ(between(gpu0, "mlx5_1"), "PHB/6");  // another root port of the host bridge
  EXPECT_EQ(between(gpu0, "mlx5_4"), "NODE/8");  // another host bridge, the same socket
  EXPECT_EQ(between(gpu0, "mlx5_2"), "SYS/10");   // the other socket
  EXPECT_EQ(between(gpu3, "mlx5_3"), "PXB/6");   // two switches: 4 links down to the GPU, 2 to the NIC
  EXPECT_EQ(between(gpu0, "rxe0"), "none");
}

TEST_F(PciTree, GpusAreNvidiasDisplayAnd3dControllers) {
  std::vector<std::string> found;
  for (const SysfsDeviceLocation& g : ReadHostGpus(root_)) found.push_back(g.pci);
  EXPECT_EQ(found, (std::vector<std::string>{"0000:03:00.0", "0000:05:00.0", "0000:83:00.0", "0000:95:00.0"}));
}

TEST_F(PciTree, EachPortNamesTheGpusItIsNearest) {
  const std::vector<RdmaPort> ports = Ports();
  const std::vector<std::vector<std::string>> nearest = GpusNearestEachPort(ports, ReadHostGpus(root_));
  ASSERT_EQ(nearest.size(), ports.size());
  std::map<std::string, std::vector<std::string>> by_device;
  for (size_t i = 0; i < ports.size(); ++i) by_device[ports[i].device] = nearest[i];
  EXPECT_EQ(by_device["mlx5_0"], (std::vector<std::string>{"0000:03:00.0", "0000:05:00.0"}));
  EXPECT_EQ(by_device["mlx5_2"], (std::vector<std::string>{"0000:83:00.0", "0000:95:00.0"}));  // mlx5_3 is down
  EXPECT_TRUE(by_device["mlx5_1"].empty());
  EXPECT_TRUE(by_device["rxe0"].empty());
}

TEST_F(PciTree, WhereNcclsOwnTransportCarriesTheNicNearestTheGpuIsInferred) {
  RankNicInputs in = Inputs();
  in.gpu = Gpu("0000:03:00.0");
  EXPECT_EQ(Label(InferRankNics(in)), "nearest_gpu mlx5_0:1");
  EXPECT_EQ(InferRankNics(in).nics[0].from_gpu->type, PciPathType::kPix);
  in.ib_hca = HcaFilter::Parse("^=mlx5_0");  // NCCL_IB_HCA leaves it out: the next nearest
  EXPECT_EQ(Label(InferRankNics(in)), "nearest_gpu mlx5_1:1");
  in.ib_hca = HcaFilter();
  in.gpu = Gpu("0000:95:00.0");  // its switch's NIC is down: the other NIC of its socket
  EXPECT_EQ(Label(InferRankNics(in)), "nearest_gpu mlx5_2:1");
}

TEST_F(PciTree, WithoutTheGpuOnlyTheEnvironmentNarrowsIt) {
  RankNicInputs in = Inputs();
  EXPECT_EQ(Label(InferRankNics(in)), "host mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_4:1");
  in.ib_hca = HcaFilter::Parse("mlx5_2,mlx5_4:1");
  EXPECT_EQ(Label(InferRankNics(in)), "ib_hca mlx5_2:1,mlx5_4:1");
  in.gpu = Gpu("0000:03:00.0");
  EXPECT_EQ(Label(InferRankNics(in)), "nearest_gpu mlx5_4:1");
  in.ports = Ports();  // with soft-RoCE's rxe0 among them, which has no place on the PCI tree to compare
  in.ib_hca = HcaFilter();
  EXPECT_EQ(Label(InferRankNics(in)), "host mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_4:1,rxe0:1");
}

TEST_F(PciTree, CarriedTrafficIsExactAndComesFirst) {
  RankNicInputs in = Inputs();
  in.gpu = Gpu("0000:03:00.0");
  in.carried = {"mlx5_2"};
  EXPECT_EQ(Label(InferRankNics(in)), "exact mlx5_2:1");
  in.carried = {"mlx5_0+mlx5_1", "mlx5_0"};  // a fused device, and a member again: each port once
  EXPECT_EQ(Label(InferRankNics(in)), "exact mlx5_0:1,mlx5_1:1");
  in.carried = {"eth7"};  // the TCP transport's interface, no RDMA port over it
  EXPECT_EQ(Label(InferRankNics(in)), "exact eth7");
}

TEST_F(PciTree, NcclIbQpEventsNameTheNthPortNcclIbHcaLeaves) {
  RankNicInputs in = Inputs();
  in.ib_hca = HcaFilter::Parse("=mlx5_0,mlx5_2");
  in.nccl_ib_devices = {1};
  EXPECT_EQ(Label(InferRankNics(in)), "nccl_ib_qp mlx5_2:1");
  in.nccl_ib_devices = {7};  // beyond the list: fall back to the inference
  EXPECT_EQ(Label(InferRankNics(in)), "ib_hca mlx5_0:1,mlx5_2:1");
}

TEST(RankNicsTest, NoActiveRdmaPortMeansNcclsSocketTransport) {
  RankNicInputs in;
  Netdev up, down, other;
  up.name = "eth0", up.up = true;
  down.name = "eth1";
  other.name = "ens5", other.up = true;
  in.netdevs = {up, down, other};
  EXPECT_EQ(std::string(NicMappingName(InferRankNics(in).mapping)), "host");
  EXPECT_EQ(RankNicsLabel(InferRankNics(in)), "eth0,ens5");
  in.socket_ifname = HcaFilter::Parse("eth");
  EXPECT_EQ(RankNicsLabel(InferRankNics(in)), "eth0");
  EXPECT_EQ(std::string(NicMappingName(InferRankNics(in).mapping)), "socket_ifname");
  in.ports.resize(1);
  in.ports[0].device = "mlx5_0", in.ports[0].port = 1, in.ports[0].active = true;
  in.ib_disabled = true;  // NCCL_IB_DISABLE=1: the socket transport despite the port
  EXPECT_EQ(RankNicsLabel(InferRankNics(in)), "eth0");
}

TEST(RankNicsTest, PciBusIdsAreSpelledAsSysfsSpellsThem) {
  EXPECT_EQ(NormalizePciBusId("00000000:17:00.0"), "0000:17:00.0");  // NVML
  EXPECT_EQ(NormalizePciBusId("0000:AB:1F.7"), "0000:ab:1f.7");      // CUDA, upper case
  EXPECT_EQ(NormalizePciBusId("0000:17:00.0x"), "");
  EXPECT_EQ(NormalizePciBusId("junk"), "");
}

}  // namespace
}  // namespace ncclscope
