#include "net/verbs/send_comm.h"

#include <arpa/inet.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>

#include "common/clock.h"
#include "net/verbs/gpu_mem.h"

namespace ncclscope::net::verbs {
namespace {

// FIFO entries are written by the NIC behind the compiler's back: copy one out once its seq matches, and
// keep the copy only if its check proves every byte of it landed (CtsCheck).
bool SnapshotEntry(const CtsEntry& landing, uint32_t seq, CtsEntry* copy) {
  if (std::atomic_ref<const uint32_t>(landing.seq).load(std::memory_order_acquire) != seq) return false;
  std::memcpy(copy, &landing, sizeof *copy);
  return copy->seq == seq && copy->check == CtsCheck(*copy);
}

}  // namespace

Status VerbsSendComm::RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) {
  *mhandle = nullptr;
  Result<MrRef*> r = RegisterMemory(dev_, data, size, type, dmabuf_fd, offset);
  if (!r.ok()) return r.status();
  *mhandle = *r;
  return Status::Ok();
}

Status VerbsSendComm::DeregMr(void* mhandle) { return ReleaseMr(static_cast<MrRef*>(mhandle)); }

Status VerbsSendComm::Close() {
  for (Req& r : reqs_) {
    if (!r.used) continue;
    acct_.Abandoned();
    acct_.events().Stop(&r.event);
    ReleaseMr(r.owned);
  }
  delete this;
  return Status::Ok();
}

// No clear-to-send yet: a sender whose receiver died would otherwise retry isend forever, since nothing it
// posted can fail. While idle, the liveness socket is checked (one recv every kLivenessCheckNs at most).
Status VerbsSendComm::AwaitClearToSend() {
  const int gone = PeerGone();
  return gone == 0 ? Status::Ok() : FailPeerGone(gone);
}

Status VerbsSendComm::Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) {
  return IsendAt(data, size, tag, mhandle, phandle, 0, request);
}

Status VerbsSendComm::IsendAt(void* data, size_t size, int tag, void* mhandle, void* phandle, size_t remote_offset,
                              Request** request) {
  *request = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(Healthy());
  const uint32_t seq = next_seq_;
  const int fslot = static_cast<int>((seq - 1) % kMaxRequests);
  const CtsSlot& s = fifo()[fslot];
  CtsEntry got[kMaxRecvs];
  if (!SnapshotEntry(s.e[0], seq, &got[0])) return AwaitClearToSend();
  const int n = got[0].n;
  if (n < 1 || n > kMaxRecvs) {
    return Fail("malformed clear-to-send (" + std::to_string(n) + " buffers)", NetErrorKind::kProtocol);
  }
  for (int i = 1; i < n; ++i) {
    if (!SnapshotEntry(s.e[i], seq, &got[i])) return Status::Ok();  // the rest of the WRITE has not landed yet
  }
  int idx = -1;
  for (int i = 0; i < n; ++i) {
    if (!(used_mask_ & (1u << i)) && got[i].tag == tag) {
      idx = i;
      break;
    }
  }
  if (idx < 0) return AwaitClearToSend();  // the oldest receive does not expect this tag (yet)
  CtsEntry e = got[idx];
  if (size > 0 && remote_offset > 0) {  // a fused device's share: written at its place in the receiver's buffer
    if (remote_offset > e.size) {
      return Fail("share at offset " + std::to_string(remote_offset) + " (tag " + std::to_string(tag) +
                      ") is past the receiver's buffer of " + std::to_string(e.size) + " bytes: truncation",
                  NetErrorKind::kTruncated);
    }
    e.addr += remote_offset;
    e.size -= remote_offset;
  }
  if (size > static_cast<size_t>(INT32_MAX)) {  // test() reports sizes as int; maxP2pBytes is 1 GiB
    return Fail("message of " + std::to_string(size) + " bytes (tag " + std::to_string(tag) +
                    ") exceeds the verbs transport's limit of 2 GiB - 1",
                NetErrorKind::kProtocol);
  }
  if (size > e.size) {
    return Fail("message of " + std::to_string(size) + " bytes (tag " + std::to_string(tag) +
                    ") does not fit the receiver's buffer of " + std::to_string(e.size) + " bytes: truncation",
                NetErrorKind::kTruncated);
  }
  int rslot = -1;
  for (int k = 0; k < kSendReqs; ++k) {
    int i = (free_hint_ + k) % kSendReqs;
    if (!reqs_[i].used) {
      rslot = i;
      free_hint_ = (i + 1) % kSendReqs;
      break;
    }
  }
  if (rslot < 0) return Status::Ok();
  Req& r = reqs_[rslot];
  MrRef* mr = static_cast<MrRef*>(mhandle);
  MrRef* owned = nullptr;
  const bool single = n == 1;
  const bool inline_data = single && size <= max_inline_;  // copied into the WR: no registration needed
  if (mr == nullptr && size > 0 && !inline_data) {
    Result<MrRef*> got = AcquireMr(dev_, data, size);
    if (!got.ok()) return Fail(got.status().message(), NetErrorKind::kResource);
    mr = owned = *got;
  }
  const Status posted = single ? PostSingle(data, size, mr, e, seq, rslot, inline_data)
                                : PostWithSizeWord(data, size, mr, e, seq, idx, rslot);
  if (!posted.ok()) {
    ReleaseMr(owned);
    return posted;
  }
  used_mask_ |= 1u << idx;
  if (std::popcount(used_mask_) == n) {
    used_mask_ = 0;
    ++next_seq_;
  }
  r.comm = this;
  r.used = true;
  r.remaining = DataQpCount();
  r.size = size;
  r.owned = owned;
  r.start_ns = MonotonicNs();
  acct_.Posted(r.start_ns);
  ProfStart(phandle, &r.event, &r.descr, static_cast<uint64_t>(rslot), IBV_WR_RDMA_WRITE,
            qps_[FirstDataQp(seq)]->qp_num, size);
  *request = &r;
  return Status::Ok();
}

// One receive buffer: each QP's share is a single WRITE_WITH_IMM whose immediate is the share's length; the
// receiver adds them up. One packet for a small message (inline: no DMA read of our buffer).
Status VerbsSendComm::PostSingle(void* data, size_t size, MrRef* mr, const CtsEntry& e, uint32_t seq, int rslot,
                                 bool inline_data) {
  const size_t chunk = ShareBytes(size);
  for (int k = 0; k < DataQpCount(); ++k) {
    const size_t off = std::min(size, chunk * k), len = std::min(size - off, chunk);
    ibv_sge sge{reinterpret_cast<uint64_t>(data) + off, static_cast<uint32_t>(len), mr ? mr->mr->lkey : 0};
    ibv_send_wr w{};
    w.wr_id = static_cast<uint64_t>(rslot);
    w.sg_list = &sge;
    w.num_sge = len > 0 ? 1 : 0;
    w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    w.send_flags = IBV_SEND_SIGNALED | (inline_data ? IBV_SEND_INLINE : 0);
    w.imm_data = htonl(static_cast<uint32_t>(len));
    w.wr.rdma.remote_addr = e.addr + off;
    w.wr.rdma.rkey = e.rkey;
    NCCLSCOPE_RETURN_IF_ERROR(Post(FirstDataQp(seq) + k, &w));
  }
  return Status::Ok();
}

// Several receive buffers: each QP's share is an RDMA WRITE, then a 4-byte
// WRITE_WITH_IMM of the size into the receiver's size table; the immediate names the buffer.
Status VerbsSendComm::PostWithSizeWord(void* data, size_t size, MrRef* mr, const CtsEntry& e, uint32_t seq, int idx,
                                       int rslot) {
  size_words()[rslot] = static_cast<uint32_t>(size);
  const size_t chunk = ShareBytes(size);
  const uint64_t fslot = (seq - 1) % kMaxRequests;
  const uint64_t size_addr = remote_addr_ + (fslot * kMaxRecvs + idx) * sizeof(uint32_t);
  for (int k = 0; k < DataQpCount(); ++k) {
    const size_t off = std::min(size, chunk * k), len = std::min(size - off, chunk);
    ibv_sge dsge{reinterpret_cast<uint64_t>(data) + off, static_cast<uint32_t>(len), mr ? mr->mr->lkey : 0};
    ibv_sge isge{reinterpret_cast<uint64_t>(&size_words()[rslot]), sizeof(uint32_t), ctrl_mr_->lkey};
    ibv_send_wr imm{};
    imm.wr_id = static_cast<uint64_t>(rslot);
    imm.sg_list = &isge;
    imm.num_sge = 1;
    imm.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    imm.send_flags = IBV_SEND_SIGNALED;
    imm.imm_data = htonl(static_cast<uint32_t>(idx));
    imm.wr.rdma.remote_addr = size_addr;
    imm.wr.rdma.rkey = remote_rkey_;
    ibv_send_wr dw{};
    dw.wr_id = static_cast<uint64_t>(rslot);
    dw.sg_list = &dsge;
    dw.num_sge = 1;
    dw.opcode = IBV_WR_RDMA_WRITE;
    dw.wr.rdma.remote_addr = e.addr + off;
    dw.wr.rdma.rkey = e.rkey;
    dw.next = &imm;
    NCCLSCOPE_RETURN_IF_ERROR(Post(FirstDataQp(seq) + k, len > 0 ? &dw : &imm));
  }
  return Status::Ok();
}

Status VerbsSendComm::Post(int q, ibv_send_wr* wr) {
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qps_[q], wr, &bad);
  if (rc == 0) return Status::Ok();
  return Fail("ibv_post_send on QP " + std::to_string(qps_[q]->qp_num) + " failed: " + strerror(rc),
              NetErrorKind::kSend);
}

Status VerbsSendComm::Poll(int* found) {
  ibv_wc wc[16];
  int n = ibv_poll_cq(cq_, 16, wc);
  *found = n;
  if (n < 0) return Fail("ibv_poll_cq failed", NetErrorKind::kSend);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) return FailWc(wc[i], "RDMA write");
    if (wc[i].wr_id < static_cast<uint64_t>(kSendReqs)) --reqs_[wc[i].wr_id].remaining;
  }
  return Status::Ok();
}

Status VerbsSendComm::TestReq(Req* r, int* done, int* sizes) {
  *done = 0;
  NCCLSCOPE_RETURN_IF_ERROR(Healthy());
  bool pending = false;
  NCCLSCOPE_RETURN_IF_ERROR(AwaitCompletions(r->remaining, [this](int* found) { return Poll(found); }, &pending));
  if (pending) return Status::Ok();
  const uint64_t now = MonotonicNs();
  NoteProgress(now);
  *done = 1;
  if (sizes != nullptr) sizes[0] = static_cast<int>(r->size);
  acct_.Sent(r->size, r->start_ns, now);
  acct_.events().Stop(&r->event);
  if (r->owned != nullptr) ReleaseMr(r->owned);
  r->owned = nullptr;
  r->used = false;
  return Status::Ok();
}

}  // namespace ncclscope::net::verbs
