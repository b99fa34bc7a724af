#include "net/verbs/fused_comm.h"

#include <algorithm>
#include <string>

namespace ncclscope::net::verbs {
namespace {

constexpr size_t kShareAlign = 4096;

FusedReq* FreeReq(FusedReq* reqs, int n) {
  for (int i = 0; i < n; ++i) {
    if (!reqs[i].used) return &reqs[i];
  }
  return nullptr;
}

// Starts or resumes the member-by-member post of one message; false when no request is free.
bool Begin(PendingPost* p, FusedReq* pool, int pool_size, const void* key, int nparts, int nbufs) {
  if (p->req != nullptr) return true;
  FusedReq* r = FreeReq(pool, pool_size);
  if (r == nullptr) return false;
  *r = FusedReq{};
  r->nparts = nparts;
  r->nbufs = nbufs;
  r->used = true;  // taken now: an iflush between two tries of this post must not get it
  *p = PendingPost{r, 0, key};
  return true;
}

}  // namespace

size_t FusedShare(size_t size, int n, int k, size_t* offset) {
  const size_t share = ((size + n - 1) / n + kShareAlign - 1) / kShareAlign * kShareAlign;
  *offset = std::min(size, share * static_cast<size_t>(k));
  return std::min(share, size - *offset);
}

Status FusedReq::Test(int* done, int* out_sizes) {
  *done = 0;
  for (int k = 0; k < nparts; ++k) {
    if (done_mask & (1u << k)) continue;
    int d = 0;
    int part_sizes[kMaxRecvs] = {};
    NCCLSCOPE_RETURN_IF_ERROR(part[k]->Test(&d, part_sizes));
    if (!d) continue;
    done_mask |= 1u << k;
    for (int i = 0; i < nbufs; ++i) sizes[i] += part_sizes[i];
  }
  if (done_mask != (1u << nparts) - 1) return Status::Ok();
  *done = 1;
  if (out_sizes != nullptr) std::copy(sizes, sizes + nbufs, out_sizes);
  used = false;
  return Status::Ok();
}


Status FusedSendComm::Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) {
  *request = nullptr;
  const int n = static_cast<int>(members_.size());
  if (pending_.req != nullptr && pending_.key != data) {
    return InternalError("fused isend: a new message (tag " + std::to_string(tag) +
                         ") while the previous one is half posted");
  }
  if (!Begin(&pending_, reqs_, VerbsSendComm::kSendReqs, data, n, 1)) return Status::Ok();
  FusedReq* r = pending_.req;
  const auto* mr = static_cast<const FusedMr*>(mhandle);
  for (int k = 0; k < n; ++k) {
    if (pending_.posted & (1u << k)) continue;
    size_t off = 0;
    const size_t len = FusedShare(size, n, k, &off);
    Request* part = nullptr;
    NCCLSCOPE_RETURN_IF_ERROR(members_[k]->IsendAt(static_cast<char*>(data) + off, len, tag,
                                                   mr != nullptr ? mr->member[k] : nullptr, phandle, off, &part));
    if (part == nullptr) return Status::Ok();  // no clear-to-send on this member yet: NCCL retries
    r->part[k] = part;
    pending_.posted |= 1u << k;
  }
  pending_ = PendingPost{};
  *request = r;
  return Status::Ok();
}


Status FusedRecvComm::Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
                            void** phandles, bool optional_completion, Request** request) {
  *request = nullptr;
  const int nm = static_cast<int>(members_.size());
  if (n < 1 || n > kMaxRecvs) return InvalidArgument("fused irecv of " + std::to_string(n) + " buffers");
  if (pending_.req != nullptr && pending_.key != data[0]) {
    return InternalError("fused irecv: a new receive while the previous one is half posted");
  }
  if (!Begin(&pending_, reqs_, kMaxRequests * 2, data[0], nm, n)) return Status::Ok();
  FusedReq* r = pending_.req;
  for (int k = 0; k < nm; ++k) {
    if (pending_.posted & (1u << k)) continue;
    void* member_mh[kMaxRecvs];
    for (int i = 0; i < n; ++i) {
      member_mh[i] = mhandles != nullptr && mhandles[i] != nullptr ? static_cast<FusedMr*>(mhandles[i])->member[k]
                                                                    : nullptr;
    }
    Request* part = nullptr;
    NCCLSCOPE_RETURN_IF_ERROR(
        members_[k]->Irecv(n, data, sizes, tags, member_mh, phandles, optional_completion, &part));
    if (part == nullptr) return Status::Ok();  // this member's receives are all in flight: NCCL retries
    r->part[k] = part;
    pending_.posted |= 1u << k;
  }
  pending_ = PendingPost{};
  *request = r;
  return Status::Ok();
}

Status FusedRecvComm::Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) {
  *request = nullptr;
  FusedReq* r = nullptr;
  for (int k = 0; k < static_cast<int>(members_.size()); ++k) {
    void* member_mh[kMaxRecvs];
    for (int i = 0; i < n && i < kMaxRecvs; ++i) {
      member_mh[i] = mhandles != nullptr && mhandles[i] != nullptr ? static_cast<FusedMr*>(mhandles[i])->member[k]
                                                                    : nullptr;
    }
    Request* part = nullptr;
    NCCLSCOPE_RETURN_IF_ERROR(members_[k]->Iflush(n, data, sizes, member_mh, &part));
    if (part == nullptr) continue;  // nothing to flush on this member
    if (r == nullptr) {
      r = FreeReq(reqs_, kMaxRequests * 2);
      if (r == nullptr) return InternalError("fused iflush: no free request");
      *r = FusedReq{};
      r->nbufs = 1;
    }
    r->part[r->nparts++] = part;
  }
  if (r != nullptr) {
    r->used = true;
    *request = r;
  }
  return Status::Ok();
}

}  // namespace ncclscope::net::verbs
