// Process-wide verbs resources of one chosen port: the opened device context and its protection domain
// (opened at the first listen/connect on the device, kept for the life of the process: comms come and go
// far more often than devices, and NCCL may register memory on any comm of the device), and the
// registration cache of that PD.
//
// The cache makes regIsGlobal true in fact: a registration is keyed by its page-aligned range; a later
// RegMr of a range inside a registered one (from any comm of the device) takes a reference on the same
// ibv_mr instead of pinning the pages again, and the MR is deregistered when its last reference goes.
// Thread-safety: OpenVerbsDevice and the cache take a mutex (service thread, or the data path only for
// buffers posted without a registration, which NCCL never does).
#ifndef NCCLSCOPE_NET_VERBS_VERBS_DEVICE_H_
#define NCCLSCOPE_NET_VERBS_VERBS_DEVICE_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "common/status.h"
#include "net/verbs/async_events.h"
#include "net/verbs/discovery.h"
#include "net/verbs/ibv_api.h"

namespace ncclscope::net::verbs {

struct VerbsDeviceCtx;

// One reference on a cached registration; the mhandle NCCL holds.
struct MrRef {
  ibv_mr* mr = nullptr;
  uintptr_t start = 0;  // page-aligned range the MR covers
  uintptr_t end = 0;
  int refs = 0;
  VerbsDeviceCtx* dev = nullptr;
  bool gpu = false;  // GPU memory (gpu_mem.h): never in the cache, one owner, needs Iflush
};

struct VerbsDeviceCtx {
  const IbvApi* api = nullptr;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  VerbsNetDevice info;
  AsyncEventState events;  // its event thread, fatal generation and QP registry (async_events.h)
};

// The context of chosen port `info` (opened once per device name and port, with its async event thread).
Result<VerbsDeviceCtx*> OpenVerbsDevice(const VerbsNetDevice& info);

// Registers [data, data+size) for local write and remote read/write, or takes a reference on a cached
// registration covering it. size 0 registers one page (so every buffer has keys).
Result<MrRef*> AcquireMr(VerbsDeviceCtx* dev, void* data, size_t size);
// Drops one reference; the last one deregisters. A GPU registration (not cached) is deregistered at once.
Status ReleaseMr(MrRef* ref);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_VERBS_DEVICE_H_
