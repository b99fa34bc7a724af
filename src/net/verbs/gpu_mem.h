// GPU memory on the verbs transport: whether a device can register it, and registering it.
//
// Two kernel paths let an RDMA NIC reach GPU memory (as NCCL's IB transport checks them):
//  - DMA-BUF: ibv_reg_dmabuf_mr (rdma-core >= 34, kernel >= 5.12). Probed once per device with a
//    deliberately invalid fd -1: a kernel without the path answers EOPNOTSUPP or EPROTONOSUPPORT, one
//    with it EBADF (or another errno), so the call tells us without a GPU.
//  - peer memory (GPUDirect RDMA via nvidia-peermem / nv_peer_mem): plain ibv_reg_mr on a device
//    pointer works when the module is loaded; we look for its sysfs entries.
// ptrSupport follows (PtrSupportFor). GPU registrations are never cached: a device pointer's page range
// says nothing about which allocation backs it later, so each RegMr gets its own MR, freed by DeregMr.
//
// None of the GPU paths is exercised here (no GPU on the build or test machines); the probe, the
// decision and the refusal messages are.
// Thread-safety: ProbeGpuMem caches per device name under a mutex; the rest is pure or per-call.
#ifndef NCCLSCOPE_NET_VERBS_GPU_MEM_H_
#define NCCLSCOPE_NET_VERBS_GPU_MEM_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "common/status.h"
#include "net/verbs/ibv_api.h"
#include "net/verbs/verbs_device.h"

namespace ncclscope::net::verbs {

// GpuMemSupport (devices.h) is what one device can do.

// NCCL_PTR_HOST always; NCCL_PTR_CUDA when either GPU path works; NCCL_PTR_DMABUF when DMA-BUF does.
int PtrSupportFor(bool dmabuf, bool peermem);

// The errno of ibv_reg_dmabuf_mr(fd -1): true when it means "the kernel has the DMA-BUF path" (EBADF and
// the like; not EOPNOTSUPP, EPROTONOSUPPORT, or no errno at all).
bool DmaBufErrnoMeansSupported(int err);

// nvidia-peermem (or the legacy nv_peer_mem) loaded, looked up under `sysfs_root` (normally "/sys").
// On true, *where names the entry found; on false, the reason.
bool PeerMemLoaded(const std::string& sysfs_root, std::string* why);

// Probes DMA-BUF on an open device (a throwaway PD).
bool ProbeDmaBuf(const IbvApi& api, ibv_context* ctx, std::string* why);

// Both paths of one open device. Probed once per device name in the process (later discoveries reuse
// the answer), and logged at INFO that first time with DescribeGpuMem.
GpuMemSupport ProbeGpuMem(const IbvApi& api, ibv_context* ctx, const std::string& device_name,
                          const std::string& sysfs_root);

// "rxe0 GPU memory: DMA-BUF no (...), peer memory no (...): ptrSupport HOST".
std::string DescribeGpuMem(const std::string& device_name, const GpuMemSupport& s);

// RegMr/RegMrDmaBuf of either comm: host memory through the cache (AcquireMr; a DMA-BUF fd that comes
// with host memory is not needed and ignored); CUDA memory through
// RegisterGpuMr, refused with InvalidUsage naming the cause when the device has neither GPU path.
Result<MrRef*> RegisterMemory(VerbsDeviceCtx* dev, void* data, size_t size, int type, int dmabuf_fd,
                              uint64_t offset);

// One uncached registration of GPU memory: ibv_reg_dmabuf_mr(offset, size, iova = data, fd) when
// dmabuf_fd >= 0, else ibv_reg_mr on the device pointer (the peer-memory path). MrRef::gpu is set;
// ReleaseMr deregisters it.
Result<MrRef*> RegisterGpuMr(VerbsDeviceCtx* dev, void* data, size_t size, int dmabuf_fd, uint64_t offset);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_GPU_MEM_H_
