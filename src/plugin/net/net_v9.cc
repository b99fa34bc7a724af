// ncclNetPlugin_v9 (NCCL 2.24+): sizes become size_t, makeVDevice appears (NIC fusion); still no
// profiler callback and no finalize. Translates only; shared slots are in shared_entry_points.cc.
#include "plugin/net/adapter_common.h"
#include "plugin/net/shared_entry_points.h"

namespace ncclscope::net::abi {
namespace {

ncclscope_result_t Init(ncclscope_logger_t log) {
  return shared::LegacyInit(9, log, nullptr);
}

ncclscope_result_t Isend(void* sc, void* data, size_t size, int tag, void* mh, void** req) {
  return shared::Isend(sc, data, size, tag, mh, nullptr, req);
}

ncclscope_result_t Irecv(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs, void** req) {
  return shared::Irecv(rc, n, data, sizes, tags, mhs, nullptr, req);
}

}  // namespace
}  // namespace ncclscope::net::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_net_v9_t ncclNetPlugin_v9 = {
    .name = "ncclscope",
    .init = ncclscope::net::abi::Init,
    .devices = ncclscope::net::abi::shared::Devices,
    .getProperties = ncclscope::net::abi::shared::GetPropertiesV9,
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
    .makeVDevice = ncclscope::net::abi::shared::MakeVDeviceV9,
};
