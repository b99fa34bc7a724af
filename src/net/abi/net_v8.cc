// ncclNetPlugin_v8 (NCCL 2.19+): int sizes, no profiler callback, no finalize. Translates only.
#include "ncclscope/abi/layout_asserts.h"
#include "common/gate.h"
#include "net/abi/adapter_common.h"

namespace ncclscope::net::abi {
namespace {

ncclscope_result_t Init(ncclscope_logger_t log) {
  SetNcclLogger(log);
  return NetGate("ncclNetPlugin_v8.init", [&] {
    InitArgs a;
    a.abi_version = 8;
    a.logger = log;
    NetContext* ctx;
    return net::Init(a, &ctx);
  });
}

ncclscope_result_t Devices(int* n) { return NetGate("v8.devices", [&] { return net::Devices(n); }); }

ncclscope_result_t GetProps(int dev, ncclscope_net_properties_v8_t* out) {
  return NetGate("v8.getProperties", [&] {
    const NetProperties* p;
    NCCLSCOPE_RETURN_IF_ERROR(LookUp(dev, &p));
    FillV8Fields(*p, out);
    return Status::Ok();
  });
}

ncclscope_result_t Listen(int dev, void* handle, void** lc) {
  return NetGate("v8.listen", [&] { return net::Listen(LegacyContext(), dev, handle, lc); });
}

ncclscope_result_t Connect(int dev, void* handle, void** sc, ncclscope_net_device_handle_t**) {
  return NetGate("v8.connect", [&] { return net::Connect(LegacyContext(), dev, handle, sc); });
}

ncclscope_result_t Accept(void* lc, void** rc, ncclscope_net_device_handle_t**) {
  return NetGate("v8.accept", [&] { return net::Accept(lc, rc); });
}

ncclscope_result_t RegMr(void* comm, void* data, size_t size, int type, void** mh) {
  return NetGate("v8.regMr", [&] { return net::RegMr(comm, data, size, type, -1, 0, mh); });
}

ncclscope_result_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t off, int fd, void** mh) {
  return NetGate("v8.regMrDmaBuf", [&] { return net::RegMr(comm, data, size, type, fd, off, mh); });
}

ncclscope_result_t DeregMr(void* comm, void* mh) {
  return NetGate("v8.deregMr", [&] { return net::DeregMr(comm, mh); });
}

ncclscope_result_t Isend(void* sc, void* data, int size, int tag, void* mh, void** req) {
  return NetGate("v8.isend", [&] {
    if (size < 0) return InternalError("isend with negative size");
    return net::Isend(sc, data, static_cast<size_t>(size), tag, mh, nullptr, req);
  });
}

ncclscope_result_t Irecv(void* rc, int n, void** data, int* sizes, int* tags, void** mhs, void** req) {
  return NetGate("v8.irecv", [&] {
    if (n < 1 || n > kMaxRecvs) return InternalError("irecv with n=" + std::to_string(n));
    size_t wide[kMaxRecvs];
    for (int i = 0; i < n; ++i) wide[i] = sizes[i] < 0 ? 0 : static_cast<size_t>(sizes[i]);
    return net::Irecv(rc, n, data, wide, tags, mhs, nullptr, req);
  });
}

ncclscope_result_t Iflush(void* rc, int n, void** data, int* sizes, void** mhs, void** req) {
  return NetGate("v8.iflush", [&] { return net::Iflush(rc, n, data, sizes, mhs, req); });
}

ncclscope_result_t Test(void* req, int* done, int* sizes) {
  return NetGate("v8.test", [&] { return net::Test(req, done, sizes); });
}

ncclscope_result_t CloseSend(void* c) { return NetGate("v8.closeSend", [&] { return net::CloseSend(c); }); }
ncclscope_result_t CloseRecv(void* c) { return NetGate("v8.closeRecv", [&] { return net::CloseRecv(c); }); }
ncclscope_result_t CloseListen(void* c) { return NetGate("v8.closeListen", [&] { return net::CloseListen(c); }); }

}  // namespace
}  // namespace ncclscope::net::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_net_v8_t ncclNetPlugin_v8 = {
    "ncclscope",
    ncclscope::net::abi::Init,
    ncclscope::net::abi::Devices,
    ncclscope::net::abi::GetProps,
    ncclscope::net::abi::Listen,
    ncclscope::net::abi::Connect,
    ncclscope::net::abi::Accept,
    ncclscope::net::abi::RegMr,
    ncclscope::net::abi::RegMrDmaBuf,
    ncclscope::net::abi::DeregMr,
    ncclscope::net::abi::Isend,
    ncclscope::net::abi::Irecv,
    ncclscope::net::abi::Iflush,
    ncclscope::net::abi::Test,
    ncclscope::net::abi::CloseSend,
    ncclscope::net::abi::CloseRecv,
    ncclscope::net::abi::CloseListen,
    nullptr,  // getDeviceMr: no device offload
    nullptr,  // irecvConsumed: no device offload
};
