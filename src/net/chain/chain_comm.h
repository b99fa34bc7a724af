// The comms of the chain transport: each wraps one comm of the inner plugin and counts what it carries with
// CommAccounting, as our own transports do. Data path (Isend/Irecv/Iflush/Test): no lock, no allocation, no
// copy of data; a request is a slot of a fixed per-comm pool pointing at the inner's request, and the inner's
// pointers (comms, requests, memory handles) are passed back to it, never dereferenced here.
// Threads: NCCL's rules (transport.h): one progress thread per comm posts and tests, so the pool needs no lock.
#ifndef NCCLSCOPE_NET_CHAIN_CHAIN_COMM_H_
#define NCCLSCOPE_NET_CHAIN_CHAIN_COMM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "ncclscope/abi/common.h"
#include "net/chain/inner_plugin.h"
#include "net/comm_accounting.h"
#include "net/transport.h"

namespace ncclscope::net::chain {

class ChainComm;

// A posted isend, irecv or iflush: one pool slot, valid from the post to the Test() that reports it done (or,
// for a receive of a device-offload inner, to NCCL's irecvConsumed of it).
struct ChainRequest final : Request {
  enum class Kind : uint8_t { kSend, kRecv, kFlush };
  Status Test(int* done, int* sizes) override;

  ChainComm* comm = nullptr;
  void* inner = nullptr;
  uint64_t posted_ns = 0;
  size_t bytes = 0;  // a send's size
  int n = 0;         // buffers (receive)
  Kind kind = Kind::kSend;
  bool completed = false;  // done, kept only for irecvConsumed
  void** events = nullptr;  // one per buffer, in the comm's arrays
  size_t* posted = nullptr;  // a receive's posted sizes, one per buffer: what a completion may report at most
  ncclscope_net_sock_descr_v1_t* descr = nullptr;
};

class ChainComm {
 public:
  // `pool`: requests this comm may have in flight; `buffers`: per request. `device_offload`: the device is not
  // HOST, so NCCL hands completed receives to irecvConsumed, which must reach the inner with its own request
  // (a host inner's irecvConsumed is not called: nothing to consume).
  ChainComm(InnerPlugin& inner, void* inner_comm, const std::string& nic, const NetContext* ctx, int pool,
            int buffers, bool device_offload, NetDir dir);
  ~ChainComm();
  ChainComm(const ChainComm&) = delete;
  ChainComm& operator=(const ChainComm&) = delete;

  Status TestRequest(ChainRequest* r, int* done, int* sizes);
  Status Consumed(int n, void* request);

 protected:
  bool HasFreeSlot() const { return nfree_ > 0; }
  ChainRequest* Take();
  void Put(ChainRequest* r);
  // A slot for a request the inner posted (null when none is free).
  ChainRequest* Start(ChainRequest::Kind kind, void* inner_request, size_t bytes, int n);
  void StartEvents(ChainRequest* r, void* const* phandles, const size_t* sizes, int op);
  // A failed inner call: counted and logged once per comm (CommAccounting), returned with the inner's result.
  Status Failed(const char* call, ncclscope_result_t r, NetErrorKind kind);
  Status CloseInner(ncclscope_result_t (InnerPlugin::*close)(void*));
  Status RegMrInner(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle);
  Status DeregMrInner(void* mhandle);
  Status GetDeviceMrInner(void* mhandle, void** dptr_mhandle);

  InnerPlugin& inner_;
  void* inner_comm_;
  const std::string nic_;
  const bool keep_for_consumed_;
  CommAccounting acct_;

 private:
  const int pool_;
  std::unique_ptr<ChainRequest[]> slots_;
  // A receive's completed sizes, each clamped to [0, posted]: an inner's impossible one is counted as an error.
  void CheckReceivedSizes(const ChainRequest& r, int* sizes);

  std::unique_ptr<void*[]> events_;
  std::unique_ptr<size_t[]> posted_;
  std::unique_ptr<ncclscope_net_sock_descr_v1_t[]> descr_;
  std::unique_ptr<int[]> free_;
  int nfree_;
};

class ChainSendComm final : public SendComm, public ChainComm {
 public:
  // NCCL may have NCCL_NET_MAX_REQUESTS receives of up to 8 buffers each in flight: as many sends.
  ChainSendComm(InnerPlugin& inner, void* inner_comm, const std::string& nic, const NetContext* ctx)
      : ChainComm(inner, inner_comm, nic, ctx, kMaxRequests * kMaxRecvs, 1, false, NetDir::kSend) {}
  Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) override {
    return RegMrInner(data, size, type, dmabuf_fd, offset, mhandle);
  }
  Status DeregMr(void* mhandle) override { return DeregMrInner(mhandle); }
  Status GetDeviceMr(void* mhandle, void** dptr_mhandle) override { return GetDeviceMrInner(mhandle, dptr_mhandle); }
  Status Close() override;
  Status Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) override;
};

class ChainRecvComm final : public RecvComm, public ChainComm {
 public:
  // NCCL_NET_MAX_REQUESTS receives, and as many completed ones awaiting irecvConsumed (device offload).
  ChainRecvComm(InnerPlugin& inner, void* inner_comm, const std::string& nic, const NetContext* ctx,
                bool device_offload)
      : ChainComm(inner, inner_comm, nic, ctx, 2 * kMaxRequests, kMaxRecvs, device_offload, NetDir::kRecv) {}
  Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) override {
    return RegMrInner(data, size, type, dmabuf_fd, offset, mhandle);
  }
  Status DeregMr(void* mhandle) override { return DeregMrInner(mhandle); }
  Status GetDeviceMr(void* mhandle, void** dptr_mhandle) override { return GetDeviceMrInner(mhandle, dptr_mhandle); }
  Status Close() override;
  Status Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles, void** phandles,
               bool optional_completion, Request** request) override;
  Status Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) override;
  Status IrecvConsumed(int n, void* request) override { return Consumed(n, request); }
};

// The inner's result as our status (ncclRemoteError stays a remote error), naming the call and the inner.
Status InnerStatus(const InnerPlugin& inner, const std::string& call, ncclscope_result_t r);

}  // namespace ncclscope::net::chain

#endif  // NCCLSCOPE_NET_CHAIN_CHAIN_COMM_H_
