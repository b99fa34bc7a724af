// The receiving half of a verbs connection: Irecv posts n receive WRs per QP (for the sender's
// WRITE_WITH_IMMs) and then writes n clear-to-send entries into the sender's FIFO with one RDMA WRITE;
// Test polls the CQ and completes a receive when all n x nqps immediates arrived, with the sizes the
// immediates carried (one buffer) or the sender wrote into our size table (several; verbs_comm.h).
// Iflush: a receive into GPU memory is flushed with one loopback RDMA READ (gpu_flush.h); host memory needs
// none (null request).
// Thread-safety: as VerbsSendComm (send_comm.h).
#ifndef NCCLSCOPE_NET_VERBS_RECV_COMM_H_
#define NCCLSCOPE_NET_VERBS_RECV_COMM_H_

#include <atomic>
#include <memory>

#include "ncclscope/abi/net.h"
#include "net/transport.h"
#include "net/verbs/gpu_flush.h"
#include "net/verbs/verbs_comm.h"

namespace ncclscope::net::verbs {

class VerbsRecvComm final : public RecvComm, public VerbsComm {
 public:
  using VerbsComm::VerbsComm;
  // Control block: the size table (what the peer writes) then the clear-to-send staging slots.
  static constexpr size_t kSizeTableBytes = sizeof(uint32_t) * kMaxRequests * kMaxRecvs;
  static constexpr size_t kCtrlBytes = kSizeTableBytes + sizeof(CtsSlot) * kMaxRequests;

  Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) override;
  Status DeregMr(void* mhandle) override;
  Status Close() override;
  Status Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles, void** phandles,
               bool optional_completion, Request** request) override;
  Status Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) override;

 private:
  struct Req final : Request {
    VerbsRecvComm* comm = nullptr;
    bool used = false;
    int n = 0;
    int remaining = 0;  // immediates still to arrive: n x nqps
    int slot = 0;
    uint64_t single_bytes = 0;  // n == 1: the shares' lengths the immediates carried
    uint64_t start_ns = 0;
    MrRef* owned[kMaxRecvs] = {};
    void* events[kMaxRecvs] = {};
    ncclscope_net_ib_descr_v1_t descr[kMaxRecvs] = {};
    Status Test(int* done, int* sizes) override { return comm->TestReq(this, done, sizes); }
  };
  struct FlushReq final : Request {
    VerbsRecvComm* comm = nullptr;
    bool used = false;
    bool done = false;  // its READ completed
    Status Test(int* done, int*) override { return comm->TestFlush(this, done); }
  };
  Status TestReq(Req* r, int* done, int* sizes);
  Status TestFlush(FlushReq* r, int* done);
  // Builds the loopback QP at the first GPU registration (service thread).
  Status EnsureFlush();
  Status Poll(int* found);
  void Release(Req* r);
  uint32_t* size_table() { return reinterpret_cast<uint32_t*>(ctrl_); }
  CtsSlot* staging() { return reinterpret_cast<CtsSlot*>(ctrl_ + kSizeTableBytes); }

  Req reqs_[kMaxRequests];
  uint32_t posted_ = 0;  // receives posted; the next one is seq posted_ + 1 in slot posted_ % kMaxRequests

  // GPU flush: owned here, published to the progress thread through flush_ once connected.
  std::unique_ptr<GpuFlush> flush_owner_;
  std::atomic<GpuFlush*> flush_{nullptr};
  std::atomic<bool> force_flush_{false};  // NCCLSCOPE_IB_FORCE_FLUSH: flush host receives too (tests)
  FlushReq flush_reqs_[GpuFlush::kMaxFlushes];
  uint32_t flushes_posted_ = 0;
};

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_RECV_COMM_H_
