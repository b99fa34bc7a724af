#include "net/verbs/gpu_mem.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/tsan_lock.h"
#include "ncclscope/abi/net.h"

namespace ncclscope::net::verbs {
namespace {

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

ABSL_CONST_INIT absl::Mutex probe_mu(absl::kConstInit);
// Device name -> answer; never freed (a handful of entries, read at every discovery).
std::map<std::string, GpuMemSupport>* probed ABSL_GUARDED_BY(probe_mu) = nullptr;

std::string Hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string PtrSupportName(int bits) {
  std::string s = "HOST";
  if (bits & NCCLSCOPE_PTR_CUDA) s += "|CUDA";
  if (bits & NCCLSCOPE_PTR_DMABUF) s += "|DMABUF";
  return s;
}

}  // namespace

int PtrSupportFor(bool dmabuf, bool peermem) {
  int bits = NCCLSCOPE_PTR_HOST;
  if (dmabuf || peermem) bits |= NCCLSCOPE_PTR_CUDA;
  if (dmabuf) bits |= NCCLSCOPE_PTR_DMABUF;
  return bits;
}

// errno 0 (a failure that set nothing) is taken as "no": advertising CUDA wrongly is the costlier mistake.
bool DmaBufErrnoMeansSupported(int err) { return err != 0 && err != EOPNOTSUPP && err != EPROTONOSUPPORT; }

bool PeerMemLoaded(const std::string& sysfs_root, std::string* why) {
  // nvidia-peermem (current drivers), nv_peer_mem's legacy "nv_mem"/"nv_mem_nc" peer-memory clients.
  static constexpr const char* kEntries[] = {"/module/nvidia_peermem", "/kernel/mm/memory_peers/nv_mem/version",
                                             "/kernel/mm/memory_peers/nv_mem_nc/version"};
  for (const char* e : kEntries) {
    std::string path = sysfs_root + e;
    if (access(path.c_str(), F_OK) == 0) {
      *why = path + " present";
      return true;
    }
  }
  *why = "nvidia-peermem not loaded";
  return false;
}

bool ProbeDmaBuf(const IbvApi& api, ibv_context* ctx, std::string* why) {
  if (api.reg_dmabuf_mr == nullptr) {
    *why = "libibverbs has no ibv_reg_dmabuf_mr (rdma-core < 34)";
    return false;
  }
  ibv_pd* pd = api.alloc_pd(ctx);
  if (pd == nullptr) {
    *why = std::string("ibv_alloc_pd for the probe failed: ") + strerror(errno);
    return false;
  }
  errno = 0;
  ibv_mr* mr = api.reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
  const int err = errno;
  bool ok = false;
  if (mr != nullptr) {  // no kernel should accept fd -1; if one does, the path plainly exists
    api.dereg_mr(mr);
    ok = true;
    *why = "ibv_reg_dmabuf_mr(fd -1) succeeded";
  } else {
    ok = DmaBufErrnoMeansSupported(err);
    *why = std::string("ibv_reg_dmabuf_mr(fd -1): ") + (err != 0 ? strerror(err) : "failed without errno");
  }
  api.dealloc_pd(pd);
  return ok;
}

GpuMemSupport ProbeGpuMem(const IbvApi& api, ibv_context* ctx, const std::string& device_name,
                          const std::string& sysfs_root) {
  AnnotatedLock lock(&probe_mu);
  if (probed == nullptr) probed = new std::map<std::string, GpuMemSupport>();
  auto it = probed->find(device_name);
  if (it != probed->end()) return it->second;
  GpuMemSupport s;
  s.dmabuf = ProbeDmaBuf(api, ctx, &s.dmabuf_why);
  s.peermem = PeerMemLoaded(sysfs_root, &s.peermem_why);
  (*probed)[device_name] = s;
  NCCLSCOPE_INFO(subsys::kNet, "NET/verbs: %s", DescribeGpuMem(device_name, s).c_str());
  return s;
}

std::string DescribeGpuMem(const std::string& device_name, const GpuMemSupport& s) {
  return device_name + " GPU memory: DMA-BUF " + (s.dmabuf ? "yes" : "no") + " (" + s.dmabuf_why + "), peer memory " +
         (s.peermem ? "yes" : "no") + " (" + s.peermem_why + "): ptrSupport " +
         PtrSupportName(PtrSupportFor(s.dmabuf, s.peermem));
}

Result<MrRef*> RegisterMemory(VerbsDeviceCtx* dev, void* data, size_t size, int type, int dmabuf_fd,
                              uint64_t offset) {
  // Host memory is mapped here: its virtual address registers it, whatever fd comes with it.
  if (type == NCCLSCOPE_PTR_HOST) return AcquireMr(dev, data, size);
  if (type != NCCLSCOPE_PTR_CUDA) {
    return InvalidUsage("verbs RegMr: memory type " + std::to_string(type) + " is neither host (1) nor CUDA (2)");
  }
  const GpuMemSupport& g = dev->info.gpu;
  const std::string where = " on " + dev->info.device_name + ":" + std::to_string(dev->info.port_num);
  if (dmabuf_fd >= 0 && !g.dmabuf) {
    return InvalidUsage("verbs RegMrDmaBuf of CUDA memory" + where + ": the device has no DMA-BUF support (" +
                        g.dmabuf_why + "), ptrSupport does not include NCCL_PTR_DMABUF");
  }
  if (dmabuf_fd < 0 && !g.peermem && !g.dmabuf) {
    return InvalidUsage("verbs RegMr of CUDA memory" + where + ": no GPUDirect path (DMA-BUF: " + g.dmabuf_why +
                        "; peer memory: " + g.peermem_why + "), ptrSupport is NCCL_PTR_HOST only");
  }
  return RegisterGpuMr(dev, data, size, dmabuf_fd, offset);
}

Result<MrRef*> RegisterGpuMr(VerbsDeviceCtx* dev, void* data, size_t size, int dmabuf_fd, uint64_t offset) {
  const uint64_t addr = reinterpret_cast<uint64_t>(data);
  const size_t len = size == 0 ? 1 : size;  // every buffer gets keys, as with host memory
  ibv_mr* mr = nullptr;
  const char* how = nullptr;
  if (dmabuf_fd >= 0) {
    how = "ibv_reg_dmabuf_mr";
    if (dev->api->reg_dmabuf_mr != nullptr) {
      mr = dev->api->reg_dmabuf_mr(dev->pd, offset, len, addr, dmabuf_fd, kAccess);
    } else {
      errno = EOPNOTSUPP;
    }
  } else {
    how = "ibv_reg_mr (peer memory)";
    mr = dev->api->reg_mr(dev->pd, data, len, kAccess);
  }
  if (mr == nullptr) {
    const int err = errno;
    return SystemError(std::string(how) + " of " + std::to_string(len) + " bytes of GPU memory at 0x" +
                       Hex(addr) +
                       (dmabuf_fd >= 0
                            ? " (dmabuf fd " + std::to_string(dmabuf_fd) + ", offset " + std::to_string(offset) + ")"
                            : "") +
                       " on " + dev->info.device_name + " failed: " + strerror(err) +
                       (dmabuf_fd < 0 ? " (is nvidia-peermem loaded for this GPU?)" : ""));
  }
  return new MrRef{mr, addr, addr + len, 1, dev, true};
}

}  // namespace ncclscope::net::verbs
