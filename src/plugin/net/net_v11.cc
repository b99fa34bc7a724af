// ncclNetPlugin_v11: per-communicator init returning a ctx (with the comm id used for per-communicator
// accounting and a runtime reference), finalize, setNetAttr.
// Translates only; every slot but init and getProperties is shared (shared_entry_points.cc).
#include "plugin/net/adapter_common.h"
#include "plugin/net/shared_entry_points.h"

namespace ncclscope::net::abi {
namespace {

ncclscope_result_t Init(void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* cfg, ncclscope_logger_t log,
                        ncclscope_profiler_callback_t prof) {
  return shared::InitPerComm(11, ctx, comm_id, cfg, log, prof);
}

ncclscope_result_t GetProps(int dev, ncclscope_net_properties_v11_t* out) {
  return NetGate("v11.getProperties", [&] {
    const NetProperties* p;
    NCCLSCOPE_RETURN_IF_ERROR(LookUp(dev, &p));
    FillV8Fields(*p, out);
    FillV9Fields<ncclscope_net_properties_v11_t, NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V9>(*p, out);
    out->maxMultiRequestSize = p->max_multi_request_size;
    return Status::Ok();
  });
}

}  // namespace
}  // namespace ncclscope::net::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_net_v11_t ncclNetPlugin_v11 = {
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
    .makeVDevice = ncclscope::net::abi::shared::MakeVDeviceV9,
    .finalize = ncclscope::net::abi::shared::Finalize,
    .setNetAttr = ncclscope::net::abi::shared::SetNetAttr,
};
