// GPU memory on the verbs transport, on the host (no GPU, no RDMA device): the ptrSupport decision, the
// DMA-BUF probe's errno rule, the peer-memory module lookup over a fake sysfs, the discovery line, the
// refusals naming their cause, and that a GPU registration (through a stub verbs table) bypasses the
// host cache and is deregistered by its one DeregMr.
#include "net/verbs/gpu_mem.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "ncclscope/abi/net.h"
#include "net/verbs/discovery.h"
#include "temp_dir.h"

namespace ncclscope::net::verbs {
namespace {

TEST(GpuMem, PtrSupportDecision) {
  EXPECT_EQ(PtrSupportFor(false, false), NCCLSCOPE_PTR_HOST);
  EXPECT_EQ(PtrSupportFor(false, true), NCCLSCOPE_PTR_HOST | NCCLSCOPE_PTR_CUDA);
  EXPECT_EQ(PtrSupportFor(true, false), NCCLSCOPE_PTR_HOST | NCCLSCOPE_PTR_CUDA | NCCLSCOPE_PTR_DMABUF);
  EXPECT_EQ(PtrSupportFor(true, true), NCCLSCOPE_PTR_HOST | NCCLSCOPE_PTR_CUDA | NCCLSCOPE_PTR_DMABUF);
}

TEST(GpuMem, DmaBufProbeErrno) {
  EXPECT_FALSE(DmaBufErrnoMeansSupported(EOPNOTSUPP));
  EXPECT_FALSE(DmaBufErrnoMeansSupported(EPROTONOSUPPORT));
  EXPECT_TRUE(DmaBufErrnoMeansSupported(EBADF));  // the kernel path exists and rejected fd -1
  EXPECT_TRUE(DmaBufErrnoMeansSupported(EINVAL));
  EXPECT_FALSE(DmaBufErrnoMeansSupported(0));  // failed without saying why: do not advertise CUDA
}

// The probe through a stub table: what ibv_reg_dmabuf_mr(fd -1) sets errno to decides.
int g_probe_errno = 0, g_pds = 0;
ibv_pd g_fake_pd{};
IbvApi ProbeApi() {
  IbvApi a;
  a.alloc_pd = [](ibv_context*) -> ibv_pd* { ++g_pds; return &g_fake_pd; };
  a.dealloc_pd = [](ibv_pd*) { --g_pds; return 0; };
  a.reg_dmabuf_mr = [](ibv_pd*, uint64_t, size_t, uint64_t, int fd, int) -> ibv_mr* {
    EXPECT_EQ(fd, -1);
    errno = g_probe_errno;
    return nullptr;
  };
  return a;
}

TEST(GpuMem, DmaBufProbeThroughTheVerbsTable) {
  IbvApi api = ProbeApi();
  std::string why;
  g_probe_errno = EBADF;
  EXPECT_TRUE(ProbeDmaBuf(api, nullptr, &why));
  EXPECT_EQ(why, std::string("ibv_reg_dmabuf_mr(fd -1): ") + strerror(EBADF));
  g_probe_errno = EOPNOTSUPP;
  EXPECT_FALSE(ProbeDmaBuf(api, nullptr, &why));
  EXPECT_EQ(g_pds, 0);  // the probe's PD is freed
  api.reg_dmabuf_mr = nullptr;  // rdma-core older than the symbol
  EXPECT_FALSE(ProbeDmaBuf(api, nullptr, &why));
  EXPECT_NE(why.find("no ibv_reg_dmabuf_mr"), std::string::npos) << why;
}

TEST(GpuMem, PeerMemModuleFromSysfs) {
  testing::ScopedTempDir root;
  std::string why;
  EXPECT_FALSE(PeerMemLoaded(root.path(), &why));
  EXPECT_EQ(why, "nvidia-peermem not loaded");
  std::filesystem::create_directories(root.path() + "/kernel/mm/memory_peers/nv_mem");
  std::ofstream(root.path() + "/kernel/mm/memory_peers/nv_mem/version") << "1.3\n";
  EXPECT_TRUE(PeerMemLoaded(root.path(), &why));
  EXPECT_NE(why.find("nv_mem/version present"), std::string::npos) << why;
  testing::ScopedTempDir root2;
  std::filesystem::create_directories(root2.path() + "/module/nvidia_peermem");
  EXPECT_TRUE(PeerMemLoaded(root2.path(), &why));
}

VerbsDevice RoceDevice(GpuMemSupport gpu) {
  VerbsDevice d;
  d.name = "mlx5_0";
  d.node_type = 1;
  d.supports_rc = true;
  VerbsPort p;
  p.port_num = 1;
  p.state = 4;
  p.link_layer = LinkLayer::kEthernet;
  p.active_mtu = 5;
  VerbsGid g;
  g.index = 3;
  g.raw = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 1};
  g.type = GidType::kRoceV2;
  p.gids.push_back(g);
  p.gid_tbl_len = 4;
  d.ports.push_back(p);
  d.gpu = std::move(gpu);
  return d;
}

TEST(GpuMem, DiscoveryAdvertisesWhatTheDeviceCanDoAndSaysWhy) {
  GpuMemSupport none{false, false, "ibv_reg_dmabuf_mr(fd -1): Operation not supported", "nvidia-peermem not loaded"};
  DiscoveryReport r = SelectNetDevices({RoceDevice(none)}, DiscoveryOptions{});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].props.ptr_support, NCCLSCOPE_PTR_HOST);
  EXPECT_EQ(DescribeGpuMem("mlx5_0", none),
            "mlx5_0 GPU memory: DMA-BUF no (ibv_reg_dmabuf_mr(fd -1): Operation not supported), peer memory no "
            "(nvidia-peermem not loaded): ptrSupport HOST");

  GpuMemSupport both{true, true, "ibv_reg_dmabuf_mr(fd -1): Bad file descriptor", "/sys/module/nvidia_peermem present"};
  r = SelectNetDevices({RoceDevice(both)}, DiscoveryOptions{});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].props.ptr_support, NCCLSCOPE_PTR_HOST | NCCLSCOPE_PTR_CUDA | NCCLSCOPE_PTR_DMABUF);
  EXPECT_TRUE(r.devices[0].gpu.dmabuf);
  EXPECT_NE(DescribeGpuMem("mlx5_0", both).find("ptrSupport HOST|CUDA|DMABUF"), std::string::npos);
}

// A verbs table whose reg/dereg calls only count: enough for the registration bookkeeping.
int g_regs = 0, g_deregs = 0, g_dmabuf_regs = 0;
ibv_mr g_fake_mr{};
IbvApi CountingApi() {
  IbvApi a;
  a.reg_mr = [](ibv_pd*, void*, size_t, int) -> ibv_mr* { ++g_regs; return &g_fake_mr; };
  a.reg_dmabuf_mr = [](ibv_pd*, uint64_t, size_t, uint64_t, int, int) -> ibv_mr* {
    ++g_dmabuf_regs;
    return &g_fake_mr;
  };
  a.dereg_mr = [](ibv_mr*) { ++g_deregs; return 0; };
  return a;
}

// Heap-allocated: a device context holds its event state (atomics, a mutex) and cannot move.
std::unique_ptr<VerbsDeviceCtx> FakeDevice(const IbvApi* api, GpuMemSupport gpu) {
  auto d = std::make_unique<VerbsDeviceCtx>();
  d->api = api;
  d->info.device_name = "mlx5_0";
  d->info.port_num = 1;
  d->info.gpu = std::move(gpu);
  return d;
}

TEST(GpuMem, CudaMemoryRefusedWithTheCauseWhenNoPathWorks) {
  IbvApi api = CountingApi();
  std::unique_ptr<VerbsDeviceCtx> dev =
      FakeDevice(&api, {false, false, "libibverbs has no ibv_reg_dmabuf_mr", "nvidia-peermem not loaded"});
  g_regs = g_deregs = g_dmabuf_regs = 0;
  char buf[64];
  Result<MrRef*> r = RegisterMemory(dev.get(), buf, sizeof(buf), NCCLSCOPE_PTR_CUDA, -1, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidUsage);
  EXPECT_NE(r.status().message().find("mlx5_0:1"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("nvidia-peermem not loaded"), std::string::npos) << r.status().message();
  r = RegisterMemory(dev.get(), buf, sizeof(buf), NCCLSCOPE_PTR_CUDA, 5, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no DMA-BUF support"), std::string::npos) << r.status().message();
  r = RegisterMemory(dev.get(), buf, sizeof(buf), 3, -1, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("memory type 3"), std::string::npos) << r.status().message();
  EXPECT_EQ(g_regs + g_dmabuf_regs, 0);
}

TEST(GpuMem, GpuRegistrationsAreUncachedAndFreedByTheirDeregMr) {
  IbvApi api = CountingApi();
  std::unique_ptr<VerbsDeviceCtx> dev = FakeDevice(&api, {true, true, "ok", "ok"});
  g_regs = g_deregs = g_dmabuf_regs = 0;
  char buf[64];
  Result<MrRef*> a = RegisterMemory(dev.get(), buf, sizeof(buf), NCCLSCOPE_PTR_CUDA, -1, 0);
  Result<MrRef*> b = RegisterMemory(dev.get(), buf, sizeof(buf), NCCLSCOPE_PTR_CUDA, -1, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);  // the same range twice: two MRs, no sharing
  EXPECT_TRUE((*a)->gpu);
  EXPECT_EQ(g_regs, 2);
  Result<MrRef*> c = RegisterMemory(dev.get(), buf, sizeof(buf), NCCLSCOPE_PTR_CUDA, 7, 4096);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(g_dmabuf_regs, 1);
  EXPECT_TRUE(ReleaseMr(*a).ok());
  EXPECT_TRUE(ReleaseMr(*b).ok());
  EXPECT_TRUE(ReleaseMr(*c).ok());
  EXPECT_EQ(g_deregs, 3);
}

}  // namespace
}  // namespace ncclscope::net::verbs
