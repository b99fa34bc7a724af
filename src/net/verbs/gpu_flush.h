// The GPU flush of a verbs receive comm. Data the NIC wrote into GPU memory may still sit in PCIe
// write buffers when the completion arrives; NCCL's kernels would read stale bytes. A READ issued by the
// same NIC behind those writes (PCIe orders a read after earlier writes on the path) drains them, which
// is what NCCL's IB transport does: one RDMA READ of a few bytes from the last received buffer into a
// host scratch word, on a loopback RC QP (this device, our own GID and QP number as the destination).
//
// GpuFlush owns that QP, its CQ and the registered scratch word. It is created by the recv comm at its
// first GPU registration, so host-only jobs never build it (NCCLSCOPE_IB_FORCE_FLUSH=1 builds it at any
// registration, to test the machinery on hosts without a GPU).
// Thread-safety: Create and the destructor on the service thread; Post and Poll on the comm's progress
// thread only.
#ifndef NCCLSCOPE_NET_VERBS_GPU_FLUSH_H_
#define NCCLSCOPE_NET_VERBS_GPU_FLUSH_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

#include "common/status.h"
#include "net/verbs/verbs_comm.h"
#include "net/verbs/verbs_device.h"

namespace ncclscope::net::verbs {

class GpuFlush {
 public:
  // Flushes in flight at once (one per receive request of the comm).
  static constexpr int kMaxFlushes = kMaxRequests;

  // Creates the CQ, the QP (connected to itself, in RTS) and the scratch word.
  static Result<std::unique_ptr<GpuFlush>> Create(VerbsDeviceCtx* dev, const VerbsConfig& cfg);
  ~GpuFlush();
  GpuFlush(const GpuFlush&) = delete;
  GpuFlush& operator=(const GpuFlush&) = delete;

  // Posts a signaled 1-byte RDMA READ of (addr, rkey) into the scratch word. Returns 0 or an errno.
  int Post(uint64_t addr, uint32_t rkey, uint64_t wr_id);
  // ibv_poll_cq on the flush CQ.
  int Poll(int n, ibv_wc* wc) { return ibv_poll_cq(cq_, n, wc); }
  uint32_t qp_num() const { return qp_->qp_num; }

 private:
  explicit GpuFlush(VerbsDeviceCtx* dev) : dev_(dev) {}
  Status Connect(const VerbsConfig& cfg);

  VerbsDeviceCtx* dev_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* scratch_mr_ = nullptr;
  alignas(64) uint64_t scratch_[8] = {};
};

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_GPU_FLUSH_H_
