// A fused device's connection (makeVDevice): one verbs connection per member port, and every message
// split across them. The receiver posts each receive on every member with the whole buffer; the sender
// cuts a message into one share per member (4 KiB-aligned, in member order, the last ones possibly
// empty) and writes share k through member k at its offset in the receiver's buffer (IsendAt). A
// receive completes when every member's has, its size the sum of the shares. Each member counts its own
// bytes on its own NIC. NCCL retries an isend or irecv that returned no request with the same
// arguments, so a half-posted message (a member without clear-to-send yet) is finished on the retry.
// Thread-safety: as any comm (transport.h); the data path allocates nothing (fixed request pools).
#ifndef NCCLSCOPE_NET_VERBS_FUSED_COMM_H_
#define NCCLSCOPE_NET_VERBS_FUSED_COMM_H_

#include <vector>

#include "net/transport.h"
#include "net/verbs/recv_comm.h"
#include "net/verbs/send_comm.h"

namespace ncclscope::net::verbs {

// One registration per member, behind the one mhandle NCCL holds.
struct FusedMr {
  void* member[kMaxDevsPerVNic] = {};
};

// The bytes of a `size`-byte message that member k of n carries, at offset *offset.
size_t FusedShare(size_t size, int n, int k, size_t* offset);

// The requests of one fused message: done when every member's is.
struct FusedReq final : Request {
  Request* part[kMaxDevsPerVNic] = {};
  unsigned done_mask = 0;
  int nparts = 0;
  int nbufs = 1;
  int sizes[kMaxRecvs] = {};
  bool used = false;
  Status Test(int* done, int* sizes) override;
};

// What an isend/irecv being posted member by member has done so far.
struct PendingPost {
  FusedReq* req = nullptr;
  unsigned posted = 0;
  const void* key = nullptr;  // the first buffer: a retry must name the same message
};

// What both sides do to every member alike: registrations (one FusedMr per NCCL mhandle) and close.
template <class Base, class Member>
class FusedComm : public Base {
 public:
  explicit FusedComm(std::vector<Member*> members) : members_(std::move(members)) {}
  Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) override {
    auto* f = new FusedMr;
    for (size_t k = 0; k < members_.size(); ++k) {
      Status s = members_[k]->RegMr(data, size, type, dmabuf_fd, offset, &f->member[k]);
      if (!s.ok()) {
        for (size_t j = 0; j < k; ++j) members_[j]->DeregMr(f->member[j]);
        delete f;
        return s;
      }
    }
    *mhandle = f;
    return Status::Ok();
  }
  Status DeregMr(void* mhandle) override {
    auto* f = static_cast<FusedMr*>(mhandle);
    Status first = Status::Ok();
    for (size_t k = 0; k < members_.size(); ++k) {
      Status s = members_[k]->DeregMr(f->member[k]);
      if (first.ok()) first = s;
    }
    delete f;
    return first;
  }
  Status Close() override {
    Status first = Status::Ok();
    for (Member* m : members_) {
      Status s = m->Close();
      if (first.ok()) first = s;
    }
    delete this;
    return first;
  }

 protected:
  std::vector<Member*> members_;
};

class FusedSendComm final : public FusedComm<SendComm, VerbsSendComm> {
 public:
  using FusedComm::FusedComm;
  Status Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) override;

 private:
  FusedReq reqs_[VerbsSendComm::kSendReqs];
  PendingPost pending_;
};

class FusedRecvComm final : public FusedComm<RecvComm, VerbsRecvComm> {
 public:
  using FusedComm::FusedComm;
  Status Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles, void** phandles,
               bool optional_completion, Request** request) override;
  Status Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) override;

 private:
  FusedReq reqs_[2 * kMaxRequests];  // receives and flushes
  PendingPost pending_;
};

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_FUSED_COMM_H_
