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
    "ncclscope",
    ncclscope::net::abi::Init,
    ncclscope::net::abi::shared::Devices,
    ncclscope::net::abi::shared::GetPropertiesV9,
    ncclscope::net::abi::shared::LegacyListen,
    ncclscope::net::abi::shared::LegacyConnect,
    ncclscope::net::abi::shared::Accept,
    ncclscope::net::abi::shared::RegMr,
    ncclscope::net::abi::shared::RegMrDmaBuf,
    ncclscope::net::abi::shared::DeregMr,
    ncclscope::net::abi::Isend,
    ncclscope::net::abi::Irecv,
    ncclscope::net::abi::shared::Iflush,
    ncclscope::net::abi::shared::Test,
    ncclscope::net::abi::shared::CloseSend,
    ncclscope::net::abi::shared::CloseRecv,
    ncclscope::net::abi::shared::CloseListen,
    nullptr,  // getDeviceMr: no device offload
    nullptr,  // irecvConsumed: no device offload
    ncclscope::net::abi::shared::MakeVDeviceV9,
};
