// ncclNetPlugin_v12 (NCCL 2.30+): the v11 table with v12 properties (8 devices per vNIC, rail and
// plane ids). As v11: per-communicator init returning a ctx (with the comm id used for
// per-communicator accounting and a runtime reference), finalize, setNetAttr. Translates only.
#include "ncclscope/abi/layout_asserts.h"
#include "common/gate.h"
#include "net/abi/adapter_common.h"

namespace ncclscope::net::abi {
namespace {

ncclscope_result_t Init(void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* cfg, ncclscope_logger_t log,
                        ncclscope_profiler_callback_t prof) {
  SetNcclLogger(log);
  return NetGate("ncclNetPlugin_v12.init", [&] {
    InitArgs a;
    a.abi_version = 12;
    a.per_comm = true;
    a.comm_id = comm_id;
    a.traffic_class = cfg != nullptr ? cfg->trafficClass : NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF;  // copied now
    a.logger = log;
    a.profiler_cb = prof;
    NetContext* c = nullptr;
    Status s = net::Init(a, &c);
    *ctx = c;
    return s;
  });
}

ncclscope_result_t Finalize(void* ctx) {
  return NetGate("v12.finalize", [&] { return net::Finalize(static_cast<NetContext*>(ctx)); });
}

ncclscope_result_t SetNetAttr(void* ctx, ncclscope_net_attr_t* attr) {
  return NetGate("v12.setNetAttr", [&] {
    if (attr == nullptr) return Status::Ok();
    NetAttr a;
    a.send_max_flows_per_peer = attr->sendCommAttr.maxFlowsPerPeer;
    a.recv_max_flows_per_peer = attr->recvCommAttr.maxFlowsPerPeer;
    a.op = attr->op;
    a.algo = attr->algo;
    a.proto = attr->proto;
    return net::SetNetAttr(static_cast<NetContext*>(ctx), a);
  });
}

ncclscope_result_t Devices(int* n) { return NetGate("v12.devices", [&] { return net::Devices(n); }); }

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

ncclscope_result_t Listen(void* ctx, int dev, void* handle, void** lc) {
  return NetGate("v12.listen", [&] { return net::Listen(static_cast<NetContext*>(ctx), dev, handle, lc); });
}

ncclscope_result_t Connect(void* ctx, int dev, void* handle, void** sc, ncclscope_net_device_handle_t**) {
  return NetGate("v12.connect", [&] { return net::Connect(static_cast<NetContext*>(ctx), dev, handle, sc); });
}

ncclscope_result_t Accept(void* lc, void** rc, ncclscope_net_device_handle_t**) {
  return NetGate("v12.accept", [&] { return net::Accept(lc, rc); });
}

ncclscope_result_t RegMr(void* comm, void* data, size_t size, int type, void** mh) {
  return NetGate("v12.regMr", [&] { return net::RegMr(comm, data, size, type, -1, 0, mh); });
}

ncclscope_result_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t off, int fd, void** mh) {
  return NetGate("v12.regMrDmaBuf", [&] { return net::RegMr(comm, data, size, type, fd, off, mh); });
}

ncclscope_result_t DeregMr(void* comm, void* mh) {
  return NetGate("v12.deregMr", [&] { return net::DeregMr(comm, mh); });
}

ncclscope_result_t Isend(void* sc, void* data, size_t size, int tag, void* mh, void* ph, void** req) {
  return NetGate("v12.isend", [&] { return net::Isend(sc, data, size, tag, mh, ph, req); });
}

ncclscope_result_t Irecv(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs, void** phs,
                         void** req) {
  return NetGate("v12.irecv", [&] { return net::Irecv(rc, n, data, sizes, tags, mhs, phs, req); });
}

ncclscope_result_t Iflush(void* rc, int n, void** data, int* sizes, void** mhs, void** req) {
  return NetGate("v12.iflush", [&] { return net::Iflush(rc, n, data, sizes, mhs, req); });
}

ncclscope_result_t Test(void* req, int* done, int* sizes) {
  return NetGate("v12.test", [&] { return net::Test(req, done, sizes); });
}

ncclscope_result_t CloseSend(void* c) { return NetGate("v12.closeSend", [&] { return net::CloseSend(c); }); }
ncclscope_result_t CloseRecv(void* c) { return NetGate("v12.closeRecv", [&] { return net::CloseRecv(c); }); }
ncclscope_result_t CloseListen(void* c) { return NetGate("v12.closeListen", [&] { return net::CloseListen(c); }); }

}  // namespace
}  // namespace ncclscope::net::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_net_v12_t ncclNetPlugin_v12 = {
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
    nullptr,  // makeVDevice: no NIC fusion
    ncclscope::net::abi::Finalize,
    ncclscope::net::abi::SetNetAttr,
};
