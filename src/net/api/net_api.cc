#include "net/api/net_api.h"

#include <atomic>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/build_role.h"
#include "common/inner_call.h"
#include "common/log.h"
#include "common/params.h"
#include "common/runtime.h"
#include "common/tsan_lock.h"
#include "net/api/legacy_hold.h"
#include "net/api/record_calls.h"
#include "net/transport.h"
#include "net/api/transport_registry.h"

namespace ncclscope::net {
namespace {

ABSL_CONST_INIT absl::Mutex init_mu(absl::kConstInit);
std::atomic<Transport*> transport{nullptr};
NetContext* legacy_ctx ABSL_GUARDED_BY(init_mu) = nullptr;  // created once, never freed (legacy ABIs have no finalize)

Transport* Current() { return transport.load(std::memory_order_acquire); }

Status NeedInit() { return InternalError("net call before a successful init"); }

}  // namespace

NetContext* LegacyContext() {
  AnnotatedLock lock(&init_mu);
  return legacy_ctx;
}

static Status InitImpl(const InitArgs& args, NetContext** ctx) {
  *ctx = nullptr;
  // Called back from a plugin we wrap, on a thread that already holds init_mu: taking it again never returns.
  NCCLSCOPE_RETURN_IF_ERROR(RefuseReentry("net init"));
  SetNcclLogger(args.logger);
  AnnotatedLock lock(&init_mu);
  if (args.per_comm) Runtime::Instance().Acquire("net ctx");
  auto release = [&] {
    if (args.per_comm) Runtime::Instance().Release("net ctx (init failed)");
  };
  const char* fixed = FixedTransport();
  Result<TransportChoice> choice =
      ChooseTransport(BuiltinTransports(), fixed != nullptr ? fixed : Params().Str(ParamId::kTransport),
                      ChoiceInputs{.ib_disabled = Params().Bool(ParamId::kIbDisable)});
  if (!choice.ok()) {
    release();
    return Status(choice.status().code(), "net init: " + choice.status().message());
  }
  Transport* t = &choice->entry->get();
  // Devices are discovered once per process: later comms' service threads read them concurrently.
  Status opened = Current() == t ? Status::Ok() : t->Open();
  if (!opened.ok()) {
    release();
    return Status(opened.code(), "net init (" + std::string(t->name()) + "): " + opened.message());
  }
  transport.store(t, std::memory_order_release);
  NetContext* c = nullptr;
  if (args.per_comm || legacy_ctx == nullptr) {  // a new context (legacy ABIs: the one process-wide context)
    c = new NetContext();
    c->legacy = !args.per_comm;
    c->comm_id = args.comm_id;
    c->traffic_class = args.traffic_class;
    c->profiler_cb = args.profiler_cb;
    c->logger = args.logger;
    // The transport attaches to it: a wrapped plugin inits its own context here.
    Status attached = t->Attach(c);
    if (!attached.ok()) {
      delete c;
      release();
      return Status(attached.code(), "net init (" + std::string(t->name()) + "): " + attached.message());
    }
  }
  std::string devs;
  for (int i = 0; i < t->device_count(); ++i) {
    devs += (i ? "," : "") + t->properties(i).name;
  }
  NCCLSCOPE_INFO(subsys::kInit | subsys::kNet,
                 "net plugin (ncclNet v%d): transport %s (%s), %d device(s): %s, comm 0x%llx",
                 args.abi_version, t->name(),
                 fixed != nullptr ? "fixed by this build: an inner test plugin" : choice->reason.c_str(),
                 t->device_count(), devs.c_str(),
                 static_cast<unsigned long long>(args.comm_id));
  if (args.per_comm) {
    *ctx = c;
  } else {
    if (legacy_ctx == nullptr) legacy_ctx = c;
    if (args.profiler_cb != nullptr) legacy_ctx->profiler_cb = args.profiler_cb;
    *ctx = legacy_ctx;
    LegacyHold::Instance().OnInit();  // no finalize: held until the last legacy object closes
  }
  return Status::Ok();
}

static Status FinalizeImpl(NetContext* ctx) {
  if (ctx == nullptr || ctx->legacy) return Status::Ok();
  if (Transport* t = Current()) t->Detach(ctx);
  delete ctx;
  Runtime::Instance().Release("net ctx");
  return Status::Ok();
}

static Status DevicesImpl(int* ndev) {
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  *ndev = t->device_count();
  return Status::Ok();
}

static Status GetPropertiesImpl(int dev, const NetProperties** props) {
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  if (dev < 0 || dev >= t->device_count()) {
    return InvalidArgument("getProperties: device " + std::to_string(dev) + " of " +
                           std::to_string(t->device_count()));
  }
  *props = &t->properties(dev);
  return Status::Ok();
}

static Status MakeVDeviceImpl(const int* devs, int n, int* vdev) {
  NCCLSCOPE_RETURN_IF_ERROR(RefuseReentry("net makeVDevice"));  // a wrapped plugin's would recurse without end
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  for (int i = 0; i < n; ++i) {
    if (devs[i] < 0 || devs[i] >= t->device_count()) {
      return InvalidArgument("makeVDevice: device " + std::to_string(devs[i]) + " of " +
                             std::to_string(t->device_count()));
    }
  }
  return t->MakeVDevice(devs, n, vdev);
}

static Status ListenImpl(NetContext* ctx, int dev, void* handle, void** listen_comm) {
  *listen_comm = nullptr;
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  ListenComm* l = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(t->Listen(ctx, dev, handle, &l));
  *listen_comm = l;
  return Status::Ok();
}

static Status ConnectImpl(NetContext* ctx, int dev, void* handle, void** send_comm,
                          ncclscope_net_device_handle_t** dev_comm) {
  *send_comm = nullptr;
  Transport* t = Current();
  if (t == nullptr) return NeedInit();
  SendComm* s = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(t->Connect(ctx, dev, handle, &s, dev_comm));
  *send_comm = s != nullptr ? static_cast<Comm*>(s) : nullptr;
  return Status::Ok();
}

static Status AcceptImpl(void* listen_comm, void** recv_comm, ncclscope_net_device_handle_t** dev_comm) {
  *recv_comm = nullptr;
  RecvComm* r = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(static_cast<ListenComm*>(listen_comm)->Accept(&r, dev_comm));
  *recv_comm = r != nullptr ? static_cast<Comm*>(r) : nullptr;
  return Status::Ok();
}

static Status RegMrImpl(void* comm, void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) {
  return static_cast<Comm*>(comm)->RegMr(data, size, type, dmabuf_fd, offset, mhandle);
}

static Status DeregMrImpl(void* comm, void* mhandle) { return static_cast<Comm*>(comm)->DeregMr(mhandle); }

static Status GetDeviceMrImpl(void* comm, void* mhandle, void** dptr_mhandle) {
  return static_cast<Comm*>(comm)->GetDeviceMr(mhandle, dptr_mhandle);
}

static Status IsendImpl(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  Request* r = nullptr;
  Status s = static_cast<SendComm*>(static_cast<Comm*>(send_comm))->Isend(data, size, tag, mhandle, phandle, &r);
  *request = r;
  return s;
}

static Status IrecvImpl(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
             void** phandles, void** request) {
  bool optional = *request == reinterpret_cast<void*>(NCCLSCOPE_NET_OPTIONAL_RECV_COMPLETION);
  Request* r = nullptr;
  Status s = static_cast<RecvComm*>(static_cast<Comm*>(recv_comm))
                 ->Irecv(n, data, sizes, tags, mhandles, phandles, optional, &r);
  *request = r;
  return s;
}

static Status IflushImpl(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  Request* r = nullptr;
  Status s = static_cast<RecvComm*>(static_cast<Comm*>(recv_comm))->Iflush(n, data, sizes, mhandles, &r);
  *request = r;
  return s;
}

static Status TestImpl(void* request, int* done, int* sizes) {
  if (request == nullptr) return InternalError("test on a null request");
  return static_cast<Request*>(request)->Test(done, sizes);
}

static Status CloseSendImpl(void* send_comm) {
  if (send_comm == nullptr) return Status::Ok();
  return static_cast<Comm*>(send_comm)->Close();
}

static Status CloseRecvImpl(void* recv_comm) {
  if (recv_comm == nullptr) return Status::Ok();
  return static_cast<Comm*>(recv_comm)->Close();
}

static Status CloseListenImpl(void* listen_comm) {
  if (listen_comm == nullptr) return Status::Ok();
  return static_cast<ListenComm*>(listen_comm)->Close();
}

static Status SetNetAttrImpl(NetContext* ctx, const NetAttr& attr, const ncclscope_net_attr_t& raw) {
  if (ctx == nullptr) return Status::Ok();
  if (Transport* t = Current()) t->SetNetAttr(ctx, raw);
  ctx->attrs.send_max_flows_per_peer.store(attr.send_max_flows_per_peer, std::memory_order_relaxed);
  ctx->attrs.recv_max_flows_per_peer.store(attr.recv_max_flows_per_peer, std::memory_order_relaxed);
  ctx->attrs.op_mask.store(attr.op, std::memory_order_relaxed);
  ctx->attrs.algo_mask.store(attr.algo, std::memory_order_relaxed);
  ctx->attrs.proto_mask.store(attr.proto, std::memory_order_relaxed);
  return Status::Ok();
}

// The API proper: each call, then its line in the recording when NCCLSCOPE_RECORD_DIR is set.
// Calls that free their object are recorded first (its address may be handed out again at once).
using record::Recorder;

Status Init(const InitArgs& args, NetContext** ctx) {
  Status s = InitImpl(args, ctx);
  if (Recorder* r = Recorder::Get()) RecordInit(r, args, *ctx, s);
  return s;
}

Status Finalize(NetContext* ctx) {
  if (Recorder* r = Recorder::Get()) RecordFinalize(r, ctx);
  return FinalizeImpl(ctx);
}

Status Devices(int* ndev) {
  Status s = DevicesImpl(ndev);
  if (Recorder* r = Recorder::Get()) {
    r->Write("net.devices", [&](record::Line& l) { l.Int("ndev", s.ok() ? *ndev : -1).Int("status", int(s.code())); });
  }
  return s;
}

Status GetProperties(int dev, const NetProperties** props) {
  Status s = GetPropertiesImpl(dev, props);
  if (Recorder* r = Recorder::Get()) RecordProperties(r, dev, s.ok() ? *props : nullptr, s);
  return s;
}

Status MakeVDevice(const int* devs, int n, int* vdev) {
  Status s = MakeVDeviceImpl(devs, n, vdev);
  if (Recorder* r = Recorder::Get()) {
    r->Write("net.makeVDevice", [&](record::Line& l) {
      l.Int("ndevs", n).Int("vdev", s.ok() ? *vdev : -1).Int("status", int(s.code()));
    });
  }
  return s;
}

Status Listen(NetContext* ctx, int dev, void* handle, void** listen_comm) {
  Status s = ListenImpl(ctx, dev, handle, listen_comm);
  if (s.ok() && ctx != nullptr && ctx->legacy) LegacyHold::Instance().OnOpen(*listen_comm);
  if (Recorder* r = Recorder::Get()) RecordListen(r, ctx, dev, *listen_comm, s);
  return s;
}

Status Connect(NetContext* ctx, int dev, void* handle, void** send_comm, ncclscope_net_device_handle_t** dev_comm) {
  Status s = ConnectImpl(ctx, dev, handle, send_comm, dev_comm);
  if (s.ok() && ctx != nullptr && ctx->legacy) LegacyHold::Instance().OnOpen(*send_comm);
  if (Recorder* r = Recorder::Get()) RecordConnect(r, "net.connect", handle, dev, *send_comm, s);
  return s;
}

Status Accept(void* listen_comm, void** recv_comm, ncclscope_net_device_handle_t** dev_comm) {
  Status s = AcceptImpl(listen_comm, recv_comm, dev_comm);
  if (s.ok() && *recv_comm != nullptr && LegacyHold::Instance().IsOpen(listen_comm)) {
    LegacyHold::Instance().OnOpen(*recv_comm);
  }
  if (Recorder* r = Recorder::Get()) RecordConnect(r, "net.accept", listen_comm, -1, *recv_comm, s);
  return s;
}

Status RegMr(void* comm, void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) {
  Status s = RegMrImpl(comm, data, size, type, dmabuf_fd, offset, mhandle);
  if (Recorder* r = Recorder::Get()) RecordRegMr(r, comm, size, type, dmabuf_fd, s.ok() ? *mhandle : nullptr, s);
  return s;
}

Status DeregMr(void* comm, void* mhandle) {
  if (Recorder* r = Recorder::Get()) RecordSimple(r, "net.deregMr", mhandle, Status::Ok());
  return DeregMrImpl(comm, mhandle);
}

Status GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) {
  Status s = GetDeviceMrImpl(comm, mhandle, dptr_mhandle);
  if (Recorder* r = Recorder::Get()) RecordSimple(r, "net.getDeviceMr", mhandle, s);
  return s;
}

// Called for every consumed receive where NCCL sees the entry; not recorded (a host transport's no-op).
Status IrecvConsumed(void* recv_comm, int n, void* request) {
  return static_cast<RecvComm*>(static_cast<Comm*>(recv_comm))->IrecvConsumed(n, request);
}

Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  Status s = IsendImpl(send_comm, data, size, tag, mhandle, phandle, request);
  if (Recorder* r = Recorder::Get()) RecordIsend(r, send_comm, size, tag, mhandle, phandle, *request, s);
  return s;
}

Status Irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
             void** phandles, void** request) {
  const bool optional = *request == reinterpret_cast<void*>(NCCLSCOPE_NET_OPTIONAL_RECV_COMPLETION);
  Status s = IrecvImpl(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
  if (Recorder* r = Recorder::Get()) RecordIrecv(r, recv_comm, n, sizes, tags, phandles, optional, *request, s);
  return s;
}

Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  Status s = IflushImpl(recv_comm, n, data, sizes, mhandles, request);
  if (Recorder* r = Recorder::Get()) RecordIflush(r, recv_comm, n, sizes, *request, s);
  return s;
}

Status Test(void* request, int* done, int* sizes) {
  Status s = TestImpl(request, done, sizes);
  if (Recorder* r = Recorder::Get()) RecordTest(r, request, s.ok() && *done, sizes, s);
  return s;
}

Status CloseSend(void* send_comm) {
  if (Recorder* r = Recorder::Get()) RecordSimple(r, "net.closeSend", send_comm, Status::Ok());
  const bool legacy = LegacyHold::Instance().Forget(send_comm);
  Status s = CloseSendImpl(send_comm);
  if (legacy) LegacyHold::Instance().AfterClose();
  return s;
}

Status CloseRecv(void* recv_comm) {
  if (Recorder* r = Recorder::Get()) RecordSimple(r, "net.closeRecv", recv_comm, Status::Ok());
  const bool legacy = LegacyHold::Instance().Forget(recv_comm);
  Status s = CloseRecvImpl(recv_comm);
  if (legacy) LegacyHold::Instance().AfterClose();
  return s;
}

Status CloseListen(void* listen_comm) {
  if (Recorder* r = Recorder::Get()) RecordSimple(r, "net.closeListen", listen_comm, Status::Ok());
  const bool legacy = LegacyHold::Instance().Forget(listen_comm);
  Status s = CloseListenImpl(listen_comm);
  if (legacy) LegacyHold::Instance().AfterClose();
  return s;
}

Status SetNetAttr(NetContext* ctx, const NetAttr& attr, const ncclscope_net_attr_t& raw) {
  if (Recorder* r = Recorder::Get()) {
    r->Write("net.setNetAttr", [&](record::Line& l) {
      l.Ref("ctx", ctx).Int("sendMaxFlowsPerPeer", attr.send_max_flows_per_peer);
      l.Int("recvMaxFlowsPerPeer", attr.recv_max_flows_per_peer).Hex("op", attr.op).Hex("algo", attr.algo);
      l.Hex("proto", attr.proto);
    });
  }
  return SetNetAttrImpl(ctx, attr, raw);
}

}  // namespace ncclscope::net
