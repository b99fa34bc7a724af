// ncclNetPlugin_v10 (NCCL 2.26+): init takes the profiler callback, connect a config, isend/irecv
// profiler handles; still no finalize (no runtime reference is held). Translates only; shared slots are in
// shared_entry_points.cc.
#include "plugin/net/adapter_common.h"
#include "plugin/net/shared_entry_points.h"

namespace ncclscope::net::abi {
namespace {

ncclscope_result_t Init(ncclscope_logger_t log, ncclscope_profiler_callback_t prof) {
  return shared::LegacyInit(10, log, prof);
}

// The v10 config (traffic class) has no effect on TCP; it is accepted and ignored.
ncclscope_result_t Connect(int dev, ncclscope_net_comm_config_t*, void* handle, void** sc,
                           ncclscope_net_device_handle_t** dev_comm) {
  return shared::LegacyConnect(dev, handle, sc, dev_comm);
}

}  // namespace
}  // namespace ncclscope::net::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_net_v10_t ncclNetPlugin_v10 = {
    .name = "ncclscope",
    .init = ncclscope::net::abi::Init,
    .devices = ncclscope::net::abi::shared::Devices,
    .getProperties = ncclscope::net::abi::shared::GetPropertiesV9,
    .listen = ncclscope::net::abi::shared::LegacyListen,
    .connect = ncclscope::net::abi::Connect,
    .accept = ncclscope::net::abi::shared::Accept,
    .regMr = ncclscope::net::abi::shared::RegMr,
    .regMrDmaBuf = ncclscope::net::abi::shared::RegMrDmaBuf,
    .deregMr = ncclscope::net::abi::shared::DeregMr,
    .isend = ncclscope::net::abi::shared::Isend,
    .irecv = ncclscope::net::abi::shared::Irecv,
    .iflush = ncclscope::net::abi::shared::Iflush,
    .test = ncclscope::net::abi::shared::Test,
    .closeSend = ncclscope::net::abi::shared::CloseSend,
    .closeRecv = ncclscope::net::abi::shared::CloseRecv,
    .closeListen = ncclscope::net::abi::shared::CloseListen,
    .getDeviceMr = ncclscope::net::abi::shared::GetDeviceMr,
    .irecvConsumed = ncclscope::net::abi::shared::IrecvConsumed,
    .makeVDevice = ncclscope::net::abi::shared::MakeVDeviceV9,
};
