// The sending half of a verbs connection: Isend waits for the receiver's clear-to-send in its FIFO
// (RDMA-written by the receiver into our control block), matches the tag within the oldest pending
// multi-receive and RDMA WRITEs the data straight into the receiver's buffer (split over the QPs). A
// single-buffer receive gets one WRITE_WITH_IMM per QP carrying the share's length; a multi-receive gets a
// data WRITE and then a WRITE_WITH_IMM of the size into the receiver's size table (verbs_comm.h).
// Thread-safety: Isend/Test on NCCL's progress thread, RegMr/DeregMr/Close on its service thread; the
// data path takes no lock and allocates nothing (a buffer posted without a registration is registered
// on the spot, through the cache's mutex: NCCL never does that, the conformance tests do).
#ifndef NCCLSCOPE_NET_VERBS_SEND_COMM_H_
#define NCCLSCOPE_NET_VERBS_SEND_COMM_H_

#include "ncclscope/abi/net.h"
#include "net/transport.h"
#include "net/verbs/verbs_comm.h"

namespace ncclscope::net::verbs {

class VerbsSendComm final : public SendComm, public VerbsComm {
 public:
  using VerbsComm::VerbsComm;
  // Control block: the FIFO (what the peer writes) then our size words (what WRITE_WITH_IMM sends).
  // Sends in flight: one per buffer of every multi-receive the receiver may have posted (as NCCL's IB
  // transport allows; a caller may post them all before testing any).
  static constexpr int kSendReqs = kMaxRequests * kMaxRecvs;
  static constexpr size_t kCtrlBytes = sizeof(CtsSlot) * kMaxRequests + sizeof(uint32_t) * kSendReqs;

  Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) override;
  Status DeregMr(void* mhandle) override;
  Status Close() override;
  Status Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) override;
  // Isend whose bytes land `remote_offset` bytes into the receiver's buffer (a fused device's share,
  // fused_comm.h); the receiver's test() reports `size` for it.
  Status IsendAt(void* data, size_t size, int tag, void* mhandle, void* phandle, size_t remote_offset,
                 Request** request);

 private:
  struct Req final : Request {
    VerbsSendComm* comm = nullptr;
    bool used = false;
    int remaining = 0;  // immediates still to complete, one per QP
    size_t size = 0;
    uint64_t start_ns = 0;
    MrRef* owned = nullptr;  // registered by Isend itself (no mhandle)
    void* event = nullptr;
    ncclscope_net_ib_descr_v1_t descr{};
    Status Test(int* done, int* sizes) override { return comm->TestReq(this, done, sizes); }
  };
  Status TestReq(Req* r, int* done, int* sizes);
  Status Poll(int* found);
  Status AwaitClearToSend();
  Status PostSingle(void* data, size_t size, MrRef* mr, const CtsEntry& e, uint32_t seq, int rslot,
                    bool inline_data);
  Status PostWithSizeWord(void* data, size_t size, MrRef* mr, const CtsEntry& e, uint32_t seq, int idx, int rslot);
  Status Post(int q, ibv_send_wr* wr);
  // Each data QP's share of a message, in 128-byte multiples so only the last share is ragged.
  size_t ShareBytes(size_t size) const {
    const size_t n = static_cast<size_t>(DataQpCount());
    return ((size + n - 1) / n + 127) & ~size_t{127};
  }
  CtsSlot* fifo() { return reinterpret_cast<CtsSlot*>(ctrl_); }
  uint32_t* size_words() { return reinterpret_cast<uint32_t*>(ctrl_ + sizeof(CtsSlot) * kMaxRequests); }

  Req reqs_[kSendReqs];
  int free_hint_ = 0;  // where the search for a free request starts
  uint32_t next_seq_ = 1;  // the receiver's seq k+1 lives in slot k % kMaxRequests (0 = never written)
  uint32_t used_mask_ = 0; // entries of the current slot already matched
};

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_SEND_COMM_H_
