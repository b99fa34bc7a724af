// ncclNetPlugin_v12: per-communicator init returning a ctx (with the comm id used for per-communicator
// accounting and a runtime reference), finalize, setNetAttr, with v12 properties (8 devices per vNIC, rail and plane ids).
// Translates only; every slot but init and getProperties is shared (shared_entry_points.cc).
#include "plugin/net/adapter_common.h"
#include "plugin/net/shared_entry_points.h"

namespace ncclscope::net::abi {
namespace {

ncclscope_result_t Init(void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* cfg, ncclscope_logger_t log,
                        ncclscope_profiler_callback_t prof) {
  return shared::InitPerComm(12, ctx, comm_id, cfg, log, prof);
}

ncclscope_result_t GetProps(int dev, ncclscope_net_properties_v12_t* out) {
  return NetGate("v12.getProperties", [&] {
    const NetProperties* p;
    NCCLSCOPE_RETURN_IF_ERROR(LookUp(dev, &p));
    FillV8Fields(*p, out);
    FillV9Fields<ncclscope_net_properties_v12_t, NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V12>(*p, out);
    out->maxMultiRequestSize = p->max_multi_request_size;
    out->railId = static_cast<int16_t>(p->rail_id);
    out->planeId = static_cast<int16_t>(p->plane_id);
    return Status::Ok();
  });
}

}  // namespace
}  // namespace ncclscope::net::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_net_v12_t ncclNetPlugin_v12 = {
    .name = "ncclscope",
    .init = ncclscope::net::abi::Init,
    .devices = ncclscope::net::abi::shared::Devices,
    .getProperties = ncclscope::net::abi::GetProps,
    .listen = ncclscope::net::abi::shared::Listen,
    .connect = ncclscope::net::abi::shared::Connect,
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
    .makeVDevice = ncclscope::net::abi::shared::MakeVDeviceV12,
    .finalize = ncclscope::net::abi::shared::Finalize,
    .setNetAttr = ncclscope::net::abi::shared::SetNetAttr,
};
