#include "net/verbs/verbs_device.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/params.h"
#include "common/tsan_lock.h"

namespace ncclscope::net::verbs {
namespace {

ABSL_CONST_INIT absl::Mutex mu(absl::kConstInit);
// Never freed: -z nodelete, NCCL threads may use devices until exit. Few entries (one per port).
std::vector<VerbsDeviceCtx*>* devices ABSL_GUARDED_BY(mu) = nullptr;
// Live registrations of every device; a linear scan is fine for the tens NCCL makes per device.
std::vector<MrRef*>* cache ABSL_GUARDED_BY(mu) = nullptr;

}  // namespace

Result<VerbsDeviceCtx*> OpenVerbsDevice(const VerbsNetDevice& info) {
  Result<const IbvApi*> api = LoadIbvApi();
  if (!api.ok()) return api.status();
  AnnotatedLock lock(&mu);
  if (devices == nullptr) devices = new std::vector<VerbsDeviceCtx*>();
  for (VerbsDeviceCtx* d : *devices) {
    if (d->info.device_name == info.device_name && d->info.port_num == info.port_num) return d;
  }
  int n = 0;
  ibv_device** list = (*api)->get_device_list(&n);
  if (list == nullptr) return SystemError("ibv_get_device_list failed: " + std::string(strerror(errno)));
  ibv_context* ctx = nullptr;
  for (int i = 0; i < n; ++i) {
    if (info.device_name == (*api)->get_device_name(list[i])) ctx = (*api)->open_device(list[i]);
  }
  (*api)->free_device_list(list);
  if (ctx == nullptr) return SystemError("cannot open RDMA device " + info.device_name);
  ibv_pd* pd = (*api)->alloc_pd(ctx);
  if (pd == nullptr) {
    (*api)->close_device(ctx);
    return SystemError("ibv_alloc_pd on " + info.device_name + " failed: " + strerror(errno));
  }
  auto* d = new VerbsDeviceCtx{*api, ctx, pd, info};
  devices->push_back(d);
  d->events.port_down_timeout_ns = static_cast<uint64_t>(Params().Int(ParamId::kIbPortDownTimeout)) * 1000000000ull;
  StartAsyncEventThread(d);
  return d;
}

Result<MrRef*> AcquireMr(VerbsDeviceCtx* dev, void* data, size_t size) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + (size == 0 ? 1 : size) + page - 1) & ~(page - 1);
  AnnotatedLock lock(&mu);
  if (cache == nullptr) cache = new std::vector<MrRef*>();
  for (MrRef* r : *cache) {
    if (r->dev == dev && r->start <= start && end <= r->end) {
      ++r->refs;
      return r;
    }
  }
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_mr* mr = dev->api->reg_mr(dev->pd, reinterpret_cast<void*>(start), end - start, kAccess);
  if (mr == nullptr) {
    int err = errno;
    return SystemError("ibv_reg_mr of " + std::to_string(end - start) + " bytes on " + dev->info.device_name +
                       " failed: " + strerror(err) +
                       (err == ENOMEM || err == EPERM ? " (raise `ulimit -l`, the locked-memory limit)" : ""));
  }
  auto* r = new MrRef{mr, start, end, 1, dev};
  cache->push_back(r);
  return r;
}

Status ReleaseMr(MrRef* ref) {
  if (ref == nullptr) return Status::Ok();
  AnnotatedLock lock(&mu);
  if (--ref->refs > 0) return Status::Ok();
  if (!ref->gpu) std::erase(*cache, ref);
  int rc = ref->dev->api->dereg_mr(ref->mr);
  std::string name = ref->dev->info.device_name;
  delete ref;
  if (rc != 0) return SystemError("ibv_dereg_mr on " + name + " failed: " + strerror(rc));
  return Status::Ok();
}

}  // namespace ncclscope::net::verbs
