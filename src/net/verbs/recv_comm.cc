#include "net/verbs/recv_comm.h"

#include <arpa/inet.h>

#include <atomic>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/params.h"
#include "net/verbs/gpu_mem.h"

namespace ncclscope::net::verbs {
namespace {

constexpr uint64_t kCtsWrFlag = uint64_t{1} << 32;  // wr_id of a clear-to-send WRITE (ignored on success)

}  // namespace

Status VerbsRecvComm::RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) {
  *mhandle = nullptr;
  Result<MrRef*> r = RegisterMemory(dev_, data, size, type, dmabuf_fd, offset);
  if (!r.ok()) return r.status();
  const bool force = Params().Bool(ParamId::kIbForceFlush);
  if ((*r)->gpu || force) {
    Status s = EnsureFlush();
    if (!s.ok()) {
      ReleaseMr(*r);
      return s;
    }
    if (force) force_flush_.store(true, std::memory_order_relaxed);
  }
  *mhandle = *r;
  return Status::Ok();
}

Status VerbsRecvComm::EnsureFlush() {
  if (flush_owner_ != nullptr) return Status::Ok();
  Result<std::unique_ptr<GpuFlush>> f = GpuFlush::Create(dev_, cfg_);
  if (!f.ok()) return f.status();
  flush_owner_ = std::move(f.value());
  for (FlushReq& r : flush_reqs_) r.comm = this;
  flush_.store(flush_owner_.get(), std::memory_order_release);
  NCCLSCOPE_INFO(subsys::kNet, "NET/verbs: GPU flush ready on %s:%d (loopback QP %u, receives from %s)",
                 dev_->info.device_name.c_str(), dev_->info.port_num, flush_owner_->qp_num(), peer_.c_str());
  return Status::Ok();
}

// NCCL calls this after a receive into memory its kernels will read. The READ goes to the last non-empty
// buffer that needs it (GPU memory, or any with the test knob); no such buffer: no flush (null request).
Status VerbsRecvComm::Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) {
  *request = nullptr;
  if (acct_.failed()) return acct_.error();
  GpuFlush* f = flush_.load(std::memory_order_acquire);
  if (f == nullptr || mhandles == nullptr) return Status::Ok();  // no GPU registration on this comm
  const bool force = force_flush_.load(std::memory_order_relaxed);
  int last = -1;
  for (int i = 0; i < n; ++i) {
    const MrRef* mr = static_cast<const MrRef*>(mhandles[i]);
    if (mr != nullptr && sizes[i] > 0 && (mr->gpu || force)) last = i;
  }
  if (last < 0) return Status::Ok();
  const uint32_t slot = flushes_posted_ % GpuFlush::kMaxFlushes;
  FlushReq& r = flush_reqs_[slot];
  if (r.used) {
    return Fail("more than " + std::to_string(GpuFlush::kMaxFlushes) + " GPU flushes in flight",
                NetErrorKind::kProtocol);
  }
  const MrRef* mr = static_cast<const MrRef*>(mhandles[last]);
  int rc = f->Post(reinterpret_cast<uint64_t>(data[last]), mr->mr->rkey, slot);
  if (rc != 0) {
    return Fail("ibv_post_send (GPU flush READ) on loopback QP " + std::to_string(f->qp_num()) + " failed: " +
                    strerror(rc),
                NetErrorKind::kRecv);
  }
  ++flushes_posted_;
  r.used = true;
  r.done = false;
  *request = &r;
  return Status::Ok();
}

Status VerbsRecvComm::TestFlush(FlushReq* r, int* done) {
  *done = 0;
  if (acct_.failed()) return acct_.error();
  if (!r->done) {
    ibv_wc wc[8];
    int k = flush_.load(std::memory_order_relaxed)->Poll(8, wc);
    if (k < 0) return Fail("ibv_poll_cq (GPU flush) failed", NetErrorKind::kRecv);
    for (int i = 0; i < k; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return FailWc(wc[i], "GPU flush (loopback RDMA read)");
      if (wc[i].wr_id < static_cast<uint64_t>(GpuFlush::kMaxFlushes)) flush_reqs_[wc[i].wr_id].done = true;
    }
    if (!r->done) return Status::Ok();
  }
  *done = 1;
  r->used = false;
  r->done = false;
  return Status::Ok();
}

Status VerbsRecvComm::DeregMr(void* mhandle) { return ReleaseMr(static_cast<MrRef*>(mhandle)); }

void VerbsRecvComm::Release(Req* r) {
  for (int i = 0; i < r->n; ++i) {
    acct_.events().Stop(&r->events[i]);
    if (r->owned[i] != nullptr) ReleaseMr(r->owned[i]);
    r->owned[i] = nullptr;
  }
  r->used = false;
}

Status VerbsRecvComm::Close() {
  for (Req& r : reqs_) {
    if (!r.used) continue;
    acct_.Abandoned();
    Release(&r);
  }
  delete this;
  return Status::Ok();
}

Status VerbsRecvComm::Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
                            void** phandles, bool, Request** request) {
  *request = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(Healthy());
  if (n < 1 || n > kMaxRecvs) return InvalidArgument("irecv of " + std::to_string(n) + " buffers (1..8)");
  const int slot = static_cast<int>(posted_ % kMaxRequests);
  Req& r = reqs_[slot];
  if (r.used) return Status::Ok();  // kMaxRequests receives in flight
  const uint32_t seq = posted_ + 1;
  CtsSlot& cts = staging()[slot];
  for (int i = 0; i < n; ++i) {
    MrRef* mr = mhandles != nullptr ? static_cast<MrRef*>(mhandles[i]) : nullptr;
    r.owned[i] = nullptr;
    if (mr == nullptr && sizes[i] > 0) {
      Result<MrRef*> got = AcquireMr(dev_, data[i], sizes[i]);
      if (!got.ok()) {
        for (int j = 0; j < i; ++j) ReleaseMr(r.owned[j]);
        return Fail(got.status().message(), NetErrorKind::kResource);
      }
      mr = r.owned[i] = *got;
    }
    CtsEntry& e = cts.e[i];
    e = CtsEntry{reinterpret_cast<uint64_t>(data[i]), sizes[i], mr != nullptr ? mr->mr->rkey : 0, tags[i],
                 static_cast<uint8_t>(n), static_cast<uint8_t>(i), 0, seq};
    e.check = CtsCheck(e);
    size_table()[slot * kMaxRecvs + i] = 0;
  }
  // Receive WRs first: the sender's immediates may follow the clear-to-send at once.
  ibv_recv_wr rws[kMaxRecvs];
  for (int q = FirstDataQp(seq); q < FirstDataQp(seq) + DataQpCount(); ++q) {
    for (int i = 0; i < n; ++i) {
      rws[i] = ibv_recv_wr{};
      rws[i].wr_id = static_cast<uint64_t>(slot);
      rws[i].next = i + 1 < n ? &rws[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_recv(qps_[q], rws, &bad);
    if (rc != 0) {
      return Fail("ibv_post_recv on QP " + std::to_string(qps_[q]->qp_num) + " failed: " + strerror(rc),
                  NetErrorKind::kRecv);
    }
  }
  ibv_sge sge{reinterpret_cast<uint64_t>(&cts), static_cast<uint32_t>(n * sizeof(CtsEntry)), ctrl_mr_->lkey};
  ibv_send_wr w{};
  w.wr_id = kCtsWrFlag | static_cast<uint64_t>(slot);
  w.sg_list = &sge;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;  // unsignaled WRs would pile up in the send queue
  w.wr.rdma.remote_addr = remote_addr_ + static_cast<uint64_t>(slot) * sizeof(CtsSlot);
  w.wr.rdma.rkey = remote_rkey_;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qps_[0], &w, &bad);
  if (rc != 0) {
    return Fail("ibv_post_send (clear-to-send) on QP " + std::to_string(qps_[0]->qp_num) + " failed: " +
                    strerror(rc),
                NetErrorKind::kRecv);
  }
  ++posted_;
  r.comm = this;
  r.used = true;
  r.n = n;
  r.slot = slot;
  r.remaining = n * DataQpCount();
  r.single_bytes = 0;
  r.start_ns = MonotonicNs();
  acct_.Posted(r.start_ns);
  for (int i = 0; i < n; ++i) {
    ProfStart(phandles != nullptr ? phandles[i] : nullptr, &r.events[i], &r.descr[i], static_cast<uint64_t>(slot),
              IBV_WR_RDMA_WRITE_WITH_IMM, qps_[FirstDataQp(seq)]->qp_num, sizes[i]);
  }
  *request = &r;
  return Status::Ok();
}

Status VerbsRecvComm::Poll(int* found) {
  ibv_wc wc[16];
  int n = ibv_poll_cq(cq_, 16, wc);
  *found = n;
  if (n < 0) return Fail("ibv_poll_cq failed", NetErrorKind::kRecv);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      return FailWc(wc[i], (wc[i].wr_id & kCtsWrFlag) ? "clear-to-send write" : "receive");
    }
    if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc[i].wr_id < static_cast<uint64_t>(kMaxRequests)) {
      Req& r = reqs_[wc[i].wr_id];
      --r.remaining;
      if (r.n == 1) r.single_bytes += ntohl(wc[i].imm_data);  // a share's length (send_comm.cc PostSingle)
    }
  }
  return Status::Ok();
}

Status VerbsRecvComm::TestReq(Req* r, int* done, int* sizes) {
  *done = 0;
  NCCLSCOPE_RETURN_IF_ERROR(Healthy());
  bool pending = false;
  NCCLSCOPE_RETURN_IF_ERROR(AwaitCompletions(r->remaining, [this](int* found) { return Poll(found); }, &pending));
  if (pending) return Status::Ok();
  const uint64_t now = MonotonicNs();
  NoteProgress(now);
  uint64_t bytes = 0;
  for (int i = 0; i < r->n; ++i) {
    const uint32_t got =
        r->n == 1 ? static_cast<uint32_t>(r->single_bytes)
                  : std::atomic_ref<uint32_t>(size_table()[r->slot * kMaxRecvs + i]).load(std::memory_order_acquire);
    bytes += got;
    if (sizes != nullptr) sizes[i] = static_cast<int>(got);
  }
  *done = 1;
  acct_.Received(bytes, static_cast<uint64_t>(r->n), r->start_ns, now);
  Release(r);
  return Status::Ok();
}

}  // namespace ncclscope::net::verbs
