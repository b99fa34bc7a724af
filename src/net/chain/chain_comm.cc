#include "net/chain/chain_comm.h"

#include "common/clock.h"

namespace ncclscope::net::chain {

Status InnerStatus(const InnerPlugin& inner, const std::string& call, ncclscope_result_t r) {
  StatusCode code = StatusCode::kInternal;
  switch (r) {
    case NCCLSCOPE_SYSTEM_ERROR: code = StatusCode::kSystem; break;
    case NCCLSCOPE_INVALID_ARGUMENT: code = StatusCode::kInvalidArgument; break;
    case NCCLSCOPE_INVALID_USAGE: code = StatusCode::kInvalidUsage; break;
    case NCCLSCOPE_REMOTE_ERROR: code = StatusCode::kRemote; break;
    default: break;
  }
  return Status(code, call + " failed in the wrapped plugin '" + inner.name() + "' (" + inner.path() + "): " +
                          ResultName(r));
}

ChainComm::ChainComm(InnerPlugin& inner, void* inner_comm, const std::string& nic, const NetContext* ctx,
                     int pool, int buffers, bool device_offload, NetDir dir)
    : inner_(inner),
      inner_comm_(inner_comm),
      nic_(nic),
      keep_for_consumed_(device_offload && inner.has_irecv_consumed()),
      acct_(nic, ctx, "chain", NCCLSCOPE_NET_PLUGIN_TYPE_SOCK | 1, dir),
      pool_(pool),
      slots_(new ChainRequest[pool]),
      events_(new void*[static_cast<size_t>(pool) * buffers]()),
      posted_(new size_t[static_cast<size_t>(pool) * buffers]()),
      descr_(new ncclscope_net_sock_descr_v1_t[static_cast<size_t>(pool) * buffers]()),
      free_(new int[pool]),
      nfree_(pool) {
  for (int i = 0; i < pool; ++i) {
    slots_[i].comm = this;
    slots_[i].events = &events_[static_cast<size_t>(i) * buffers];
    slots_[i].posted = &posted_[static_cast<size_t>(i) * buffers];
    slots_[i].descr = &descr_[static_cast<size_t>(i) * buffers];
    free_[i] = pool - 1 - i;
  }
}

ChainComm::~ChainComm() = default;

ChainRequest* ChainComm::Take() { return nfree_ == 0 ? nullptr : &slots_[free_[--nfree_]]; }

void ChainComm::Put(ChainRequest* r) {
  r->inner = nullptr;
  r->completed = false;
  free_[nfree_++] = static_cast<int>(r - slots_.get());
}

ChainRequest* ChainComm::Start(ChainRequest::Kind kind, void* inner_request, size_t bytes, int n) {
  ChainRequest* r = Take();
  if (r == nullptr) return nullptr;
  r->kind = kind;
  r->inner = inner_request;
  r->bytes = bytes;
  r->n = n;
  r->posted_ns = MonotonicNs();
  if (kind != ChainRequest::Kind::kFlush) acct_.Posted(r->posted_ns);
  return r;
}

void ChainComm::StartEvents(ChainRequest* r, void* const* phandles, const size_t* sizes, int op) {
  if (!acct_.events().on() || phandles == nullptr) return;  // no profiler, or a call outside the proxy
  for (int i = 0; i < r->n; ++i) {
    r->descr[i].type = NCCLSCOPE_NET_SOCK_DESCR_TYPE;
    r->descr[i].sock.fd = -1;  // the inner's connection is not ours to see
    r->descr[i].sock.op = op;
    r->descr[i].sock.length = sizes[i];
    acct_.events().Start(phandles[i], &r->events[i], &r->descr[i]);
  }
}

Status ChainComm::Failed(const char* call, ncclscope_result_t r, NetErrorKind kind) {
  // The peer is the inner's to name (its handle is opaque to us): its own log line precedes this one.
  Status s = InnerStatus(inner_, std::string(call) + " on NIC " + nic_, r);
  acct_.Fail(s, kind);
  return s;
}

Status ChainComm::TestRequest(ChainRequest* r, int* done, int* sizes) {
  int local[kMaxRecvs];
  int* out = sizes != nullptr ? sizes : local;
  const ncclscope_result_t res = inner_.Test(r->inner, done, out);
  const bool recv = r->kind == ChainRequest::Kind::kRecv;
  if (res != NCCLSCOPE_SUCCESS) {
    const bool send = r->kind == ChainRequest::Kind::kSend;
    return Failed(send ? "test of a send" : recv ? "test of a receive" : "test of a flush", res,
                  send ? NetErrorKind::kSend : NetErrorKind::kRecv);
  }
  if (!*done) return Status::Ok();
  const uint64_t now = MonotonicNs();
  if (r->kind == ChainRequest::Kind::kSend) {
    acct_.Sent(r->bytes, r->posted_ns, now);
  } else if (recv) {
    CheckReceivedSizes(*r, out);
    uint64_t bytes = 0;
    for (int i = 0; i < r->n; ++i) bytes += out[i] > 0 ? static_cast<uint64_t>(out[i]) : 0;
    acct_.Received(bytes, static_cast<uint64_t>(r->n), r->posted_ns, now);
  }
  if (acct_.events().on()) {
    for (int i = 0; i < r->n; ++i) acct_.events().Stop(&r->events[i]);
  }
  if (recv && keep_for_consumed_) {
    r->completed = true;  // NCCL hands it to irecvConsumed later: the inner's request must still be found
  } else {
    Put(r);
  }
  return Status::Ok();
}

void ChainComm::CheckReceivedSizes(const ChainRequest& r, int* sizes) {
  for (int i = 0; i < r.n; ++i) {
    const size_t posted = r.posted[i];
    if (sizes[i] >= 0 && static_cast<size_t>(sizes[i]) <= posted) continue;
    const int reported = sizes[i];
    // NCCL gets the clamped size too: more than the buffer holds would send it past the buffer's end.
    sizes[i] = reported < 0 ? 0 : static_cast<int>(posted);
    acct_.Implausible(NetErrorKind::kProtocol, [&] {
      return inner_.who() + " reported " + std::to_string(reported) + " bytes received into a buffer of " +
             std::to_string(posted) + " posted (buffer " + std::to_string(i) + " of " + std::to_string(r.n) +
             ", NIC " + nic_ + "); impossible, clamped to " + std::to_string(sizes[i]);
    });
  }
}

Status ChainComm::Consumed(int n, void* request) {
  auto* r = static_cast<ChainRequest*>(static_cast<Request*>(request));
  if (!keep_for_consumed_ || r < slots_.get() || r >= slots_.get() + pool_ || !r->completed) {
    return Status::Ok();  // a host inner: nothing kept, nothing to consume
  }
  const ncclscope_result_t res = inner_.IrecvConsumed(inner_comm_, n, r->inner);
  Put(r);
  return res == NCCLSCOPE_SUCCESS ? Status::Ok() : Failed("irecvConsumed", res, NetErrorKind::kRecv);
}

Status ChainComm::CloseInner(ncclscope_result_t (InnerPlugin::*close)(void*)) {
  for (int s = 0; s < pool_; ++s) {
    ChainRequest& r = slots_[s];
    if (r.inner == nullptr || r.completed) continue;
    if (r.kind != ChainRequest::Kind::kFlush) acct_.Abandoned();
    for (int i = 0; i < r.n; ++i) acct_.events().Stop(&r.events[i]);
  }
  const ncclscope_result_t res = (inner_.*close)(inner_comm_);
  return res == NCCLSCOPE_SUCCESS ? Status::Ok() : InnerStatus(inner_, "close", res);
}

Status ChainComm::RegMrInner(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) {
  const ncclscope_result_t res = dmabuf_fd >= 0
                                     ? inner_.RegMrDmaBuf(inner_comm_, data, size, type, offset, dmabuf_fd, mhandle)
                                     : inner_.RegMr(inner_comm_, data, size, type, mhandle);
  return res == NCCLSCOPE_SUCCESS ? Status::Ok()
                                  : InnerStatus(inner_, dmabuf_fd >= 0 ? "regMrDmaBuf" : "regMr", res);
}

Status ChainComm::DeregMrInner(void* mhandle) {
  const ncclscope_result_t res = inner_.DeregMr(inner_comm_, mhandle);
  return res == NCCLSCOPE_SUCCESS ? Status::Ok() : InnerStatus(inner_, "deregMr", res);
}

Status ChainComm::GetDeviceMrInner(void* mhandle, void** dptr_mhandle) {
  const ncclscope_result_t res = inner_.GetDeviceMr(inner_comm_, mhandle, dptr_mhandle);
  return res == NCCLSCOPE_SUCCESS ? Status::Ok() : InnerStatus(inner_, "getDeviceMr", res);
}

Status ChainRequest::Test(int* done, int* sizes) { return comm->TestRequest(this, done, sizes); }

Status ChainSendComm::Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) {
  *request = nullptr;
  if (acct_.failed()) return acct_.error();
  if (!HasFreeSlot()) return Status::Ok();  // NCCL posts again later
  void* inner_request = nullptr;
  const ncclscope_result_t res = inner_.Isend(inner_comm_, data, size, tag, mhandle, phandle, &inner_request);
  if (res != NCCLSCOPE_SUCCESS) return Failed("isend", res, NetErrorKind::kSend);
  if (inner_request == nullptr) return Status::Ok();  // the inner cannot post yet
  ChainRequest* r = Start(ChainRequest::Kind::kSend, inner_request, size, 1);
  void* phandles[1] = {phandle};
  StartEvents(r, phandles, &size, 0);
  *request = r;
  return Status::Ok();
}

Status ChainSendComm::Close() {
  Status s = CloseInner(&InnerPlugin::CloseSend);
  delete this;
  return s;
}

Status ChainRecvComm::Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
                            void** phandles, bool optional_completion, Request** request) {
  *request = nullptr;
  if (acct_.failed()) return acct_.error();
  if (n < 1 || n > kMaxRecvs) return InternalError("irecv with n=" + std::to_string(n));
  if (!HasFreeSlot()) return Status::Ok();  // NCCL posts again later
  void* inner_request = optional_completion ? reinterpret_cast<void*>(NCCLSCOPE_NET_OPTIONAL_RECV_COMPLETION) : nullptr;
  const ncclscope_result_t res = inner_.Irecv(inner_comm_, n, data, sizes, tags, mhandles, phandles, &inner_request);
  if (res != NCCLSCOPE_SUCCESS) return Failed("irecv", res, NetErrorKind::kRecv);
  if (inner_request == nullptr) return Status::Ok();
  ChainRequest* r = Start(ChainRequest::Kind::kRecv, inner_request, 0, n);
  for (int i = 0; i < n; ++i) r->posted[i] = sizes[i];
  StartEvents(r, phandles, sizes, 1);
  *request = r;
  return Status::Ok();
}

Status ChainRecvComm::Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) {
  *request = nullptr;
  void* inner_request = nullptr;
  const ncclscope_result_t res =
      inner_.Iflush(inner_comm_, n, data, const_cast<int*>(sizes), mhandles, &inner_request);
  if (res != NCCLSCOPE_SUCCESS) return Failed("iflush", res, NetErrorKind::kRecv);
  if (inner_request == nullptr) return Status::Ok();  // complete already
  ChainRequest* r = Start(ChainRequest::Kind::kFlush, inner_request, 0, 0);
  if (r == nullptr) {
    // Every slot is held (receives kept for irecvConsumed): a flush cannot be deferred (NULL means done), so
    // it is completed here. Rare, bounded by the inner's flush.
    for (int done = 0; !done;) {
      const ncclscope_result_t t = inner_.Test(inner_request, &done, nullptr);
      if (t != NCCLSCOPE_SUCCESS) return Failed("test of a flush", t, NetErrorKind::kRecv);
    }
    return Status::Ok();
  }
  *request = r;
  return Status::Ok();
}

Status ChainRecvComm::Close() {
  Status s = CloseInner(&InnerPlugin::CloseRecv);
  delete this;
  return s;
}

}  // namespace ncclscope::net::chain
