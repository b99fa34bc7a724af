// ncclNetPlugin_v8 (NCCL 2.19+): int sizes, no profiler callback, no finalize. Translates only; the slots
// shared with other versions are in shared_entry_points.cc.
#include "plugin/net/adapter_common.h"
#include "plugin/net/shared_entry_points.h"

namespace ncclscope::net::abi {
namespace {

ncclscope_result_t Init(ncclscope_logger_t log) {
  return shared::LegacyInit(8, log, nullptr);
}

ncclscope_result_t GetProps(int dev, ncclscope_net_properties_v8_t* out) {
  return NetGate("v8.getProperties", [&] {
    const NetProperties* p;
    NCCLSCOPE_RETURN_IF_ERROR(LookUp(dev, &p));
    FillV8Fields(*p, out);
    return Status::Ok();
  });
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

}  // namespace
}  // namespace ncclscope::net::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_net_v8_t ncclNetPlugin_v8 = {
    .name = "ncclscope",
    .init = ncclscope::net::abi::Init,
    .devices = ncclscope::net::abi::shared::Devices,
    .getProperties = ncclscope::net::abi::GetProps,
    .listen = ncclscope::net::abi::shared::LegacyListen,
    .connect = ncclscope::net::abi::shared::LegacyConnect,
    .accept = ncclscope::net::abi::shared::Accept,
    .regMr = ncclscope::net::abi::shared::RegMr,
    .regMrDmaBuf = ncclscope::net::abi::shared::RegMrDmaBuf,
    .deregMr = ncclscope::net::abi::shared::DeregMr,
    .isend = ncclscope::net::abi::Isend,
    .irecv = ncclscope::net::abi::Irecv,
    .iflush = ncclscope::net::abi::shared::Iflush,
    .test = ncclscope::net::abi::shared::Test,
    .closeSend = ncclscope::net::abi::shared::CloseSend,
    .closeRecv = ncclscope::net::abi::shared::CloseRecv,
    .closeListen = ncclscope::net::abi::shared::CloseListen,
    .getDeviceMr = ncclscope::net::abi::shared::GetDeviceMr,
    .irecvConsumed = ncclscope::net::abi::shared::IrecvConsumed,
};
