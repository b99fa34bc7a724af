#include "net/net_api.h"

#include <atomic>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/params.h"
#include "common/runtime.h"
#include "net/tcp/tcp_transport.h"
#include "net/transport.h"
#include "net/transport_select.h"

namespace ncclscope::net {
namespace {

ABSL_CONST_INIT absl::Mutex init_mu(absl::kConstInit);
std::atomic<Transport*> transport{nullptr};
NetContext* legacy_ctx = nullptr;  // created once, never freed (legacy ABIs have no finalize)

Transport* Current() { return transport.load(std::memory_order_acquire); }

Status NeedInit() { return InternalError("net call before a successful init"); }

}  // namespace

NetContext* LegacyContext() {
  absl::MutexLock lock(&init_mu);
  return legacy_ctx;
}

Status Init(const InitArgs& args, NetContext** ctx) {
  SetNcclLogger(args.logger);
  *ctx = nullptr;
  absl::MutexLock lock(&init_mu);
  if (args.per_comm) Runtime::Instance().Acquire("net ctx");
  auto release = [&] {
    if (args.per_comm) Runtime::Instance().Release("net ctx (init failed)");
  };
  Result<TransportChoice> choice = ChooseTransport(Params().Str(ParamId::kTransport));
  if (!choice.ok()) {
    release();
    return Status(choice.status().code(), "ncclscope net init: " + choice.status().message());
  }
  Transport* t = &tcp::GetTcpTransport();
  // Devices are discovered once per process: later comms' service threads read them concurrently.
  Status opened = Current() == t ? Status::Ok() : t->Open();
  if (!opened.ok()) {
    release();
    return Status(opened.code(), "ncclscope net init (" + std::string(t->name()) + "): " + opened.message());
  }
  transport.store(t, std::memory_order_release);
  std::string devs;
  for (int i = 0; i < t->device_count(); ++i) {
    devs += (i ? "," : "") + t->properties(i).name;
  }
  NCCLSCOPE_INFO(subsys::kInit | subsys::kNet,
                 "ncclscope net plugin (ncclNet v%d): transport %s (%s), %d device(s): %s, comm 0x%llx",
                 args.abi_version, t->name(), choice->reason.c_str(), t->device_count(), devs.c_str(),
                 static_cast<unsigned long long>(args.comm_id));
  if (args.per_comm) {
    auto* c = new NetContext();
    c->comm_id = args.comm_id;
    c->traffic_class = args.traffic_class;
    c->profiler_cb = args.profiler_cb;
    *ctx = c;
  } else {
    if (legacy_ctx == nullptr) {
      legacy_ctx = new NetContext();
      legacy_ctx->legacy = true;
    }
    if (args.profiler_cb != nullptr) legacy_ctx->profiler_cb = args.profiler_cb;
    *ctx = legacy_ctx;
  }
  return Status::Ok();
}

Status Finalize(NetContext* ctx) {
  if (ctx == nullptr || ctx->legacy) return Status::Ok();
  delete ctx;
  Runtime::Instance().Release("net ctx");
  return Status::Ok();
}

Status Devices(int* ndev) {
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  *ndev = t->device_count();
  return Status::Ok();
}

Status GetProperties(int dev, const NetProperties** props) {
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  if (dev < 0 || dev >= t->device_count()) {
    return InvalidArgument("getProperties: device " + std::to_string(dev) + " of " +
                           std::to_string(t->device_count()));
  }
  *props = &t->properties(dev);
  return Status::Ok();
}

Status Listen(NetContext* ctx, int dev, void* handle, void** listen_comm) {
  *listen_comm = nullptr;
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  ListenComm* l = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(t->Listen(ctx, dev, handle, &l));
  *listen_comm = l;
  return Status::Ok();
}

Status Connect(NetContext* ctx, int dev, void* handle, void** send_comm) {
  *send_comm = nullptr;
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  SendComm* s = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(t->Connect(ctx, dev, handle, &s));
  *send_comm = s != nullptr ? static_cast<Comm*>(s) : nullptr;
  return Status::Ok();
}

Status Accept(void* listen_comm, void** recv_comm) {
  *recv_comm = nullptr;
  RecvComm* r = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(static_cast<ListenComm*>(listen_comm)->Accept(&r));
  *recv_comm = r != nullptr ? static_cast<Comm*>(r) : nullptr;
  return Status::Ok();
}

Status RegMr(void* comm, void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) {
  return static_cast<Comm*>(comm)->RegMr(data, size, type, dmabuf_fd, offset, mhandle);
}

Status DeregMr(void* comm, void* mhandle) { return static_cast<Comm*>(comm)->DeregMr(mhandle); }

Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  Request* r = nullptr;
  Status s = static_cast<SendComm*>(static_cast<Comm*>(send_comm))->Isend(data, size, tag, mhandle, phandle, &r);
  *request = r;
  return s;
}

Status Irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
             void** phandles, void** request) {
  bool optional = *request == reinterpret_cast<void*>(NCCLSCOPE_NET_OPTIONAL_RECV_COMPLETION);
  Request* r = nullptr;
  Status s = static_cast<RecvComm*>(static_cast<Comm*>(recv_comm))
                 ->Irecv(n, data, sizes, tags, mhandles, phandles, optional, &r);
  *request = r;
  return s;
}

Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  Request* r = nullptr;
  Status s = static_cast<RecvComm*>(static_cast<Comm*>(recv_comm))->Iflush(n, data, sizes, mhandles, &r);
  *request = r;
  return s;
}

Status Test(void* request, int* done, int* sizes) {
  if (request == nullptr) return InternalError("test on a null request");
  return static_cast<Request*>(request)->Test(done, sizes);
}

Status CloseSend(void* send_comm) {
  if (send_comm == nullptr) return Status::Ok();
  return static_cast<Comm*>(send_comm)->Close();
}

Status CloseRecv(void* recv_comm) {
  if (recv_comm == nullptr) return Status::Ok();
  return static_cast<Comm*>(recv_comm)->Close();
}

Status CloseListen(void* listen_comm) {
  if (listen_comm == nullptr) return Status::Ok();
  return static_cast<ListenComm*>(listen_comm)->Close();
}

Status SetNetAttr(NetContext* ctx, const NetAttr& attr) {
  if (ctx == nullptr) return Status::Ok();
  ctx->attrs.send_max_flows_per_peer.store(attr.send_max_flows_per_peer, std::memory_order_relaxed);
  ctx->attrs.recv_max_flows_per_peer.store(attr.recv_max_flows_per_peer, std::memory_order_relaxed);
  ctx->attrs.op_mask.store(attr.op, std::memory_order_relaxed);
  ctx->attrs.algo_mask.store(attr.algo, std::memory_order_relaxed);
  ctx->attrs.proto_mask.store(attr.proto, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace ncclscope::net
