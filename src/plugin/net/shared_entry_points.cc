#include "plugin/net/shared_entry_points.h"

#include "common/build_role.h"
#include "plugin/net/adapter_common.h"
#include "plugin/services/plugin_services.h"

namespace ncclscope::net::abi::shared {

ncclscope_result_t Devices(int* n) { return NetGate("net.devices", [&] { return net::Devices(n); }); }

ncclscope_result_t Accept(void* lc, void** rc, ncclscope_net_device_handle_t** dev_comm) {
  return NetGate("net.accept", [&] { return net::Accept(lc, rc, dev_comm); });
}

ncclscope_result_t RegMr(void* comm, void* data, size_t size, int type, void** mh) {
  return NetGate("net.regMr", [&] { return net::RegMr(comm, data, size, type, -1, 0, mh); });
}

ncclscope_result_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t off, int fd, void** mh) {
  return NetGate("net.regMrDmaBuf", [&] { return net::RegMr(comm, data, size, type, fd, off, mh); });
}

ncclscope_result_t DeregMr(void* comm, void* mh) {
  return NetGate("net.deregMr", [&] { return net::DeregMr(comm, mh); });
}

ncclscope_result_t GetDeviceMr(void* comm, void* mh, void** dptr_mh) {
  return NetGate("net.getDeviceMr", [&] { return net::GetDeviceMr(comm, mh, dptr_mh); });
}

ncclscope_result_t IrecvConsumed(void* rc, int n, void* req) {
  return NetGate("net.irecvConsumed", [&] { return net::IrecvConsumed(rc, n, req); });
}

ncclscope_result_t Iflush(void* rc, int n, void** data, int* sizes, void** mhs, void** req) {
  return NetGate("net.iflush", [&] { return net::Iflush(rc, n, data, sizes, mhs, req); });
}

ncclscope_result_t Test(void* req, int* done, int* sizes) {
  return NetGate("net.test", [&] { return net::Test(req, done, sizes); });
}

ncclscope_result_t CloseSend(void* c) { return NetGate("net.closeSend", [&] { return net::CloseSend(c); }); }
ncclscope_result_t CloseRecv(void* c) { return NetGate("net.closeRecv", [&] { return net::CloseRecv(c); }); }
ncclscope_result_t CloseListen(void* c) { return NetGate("net.closeListen", [&] { return net::CloseListen(c); }); }

namespace {
template <class VProps, int K>
ncclscope_result_t MakeVDevice(int* d, VProps* props) {
  return NetGate("net.makeVDevice", [&] {
    if (props == nullptr || props->ndevs < 1 || props->ndevs > K) {
      return InvalidArgument("makeVDevice: " + std::to_string(props == nullptr ? -1 : props->ndevs) +
                             " devices (1 to " + std::to_string(K) + " for this table version)");
    }
    return net::MakeVDevice(props->devs, props->ndevs, d);
  });
}
}  // namespace

ncclscope_result_t MakeVDeviceV9(int* d, ncclscope_net_vdevice_props_v9_t* props) {
  return MakeVDevice<ncclscope_net_vdevice_props_v9_t, NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V9>(d, props);
}
ncclscope_result_t MakeVDeviceV12(int* d, ncclscope_net_vdevice_props_v12_t* props) {
  return MakeVDevice<ncclscope_net_vdevice_props_v12_t, NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V12>(d, props);
}

ncclscope_result_t LegacyInit(int abi_version, ncclscope_logger_t log, ncclscope_profiler_callback_t prof) {
  SetNcclLogger(log);
  const std::string entry = "ncclNetPlugin_v" + std::to_string(abi_version) + ".init";
  return NetGate(entry.c_str(), [&] {
    if (FixedTransport() == nullptr) InstallPluginServices();  // this may be the process's first call into the plugin
    InitArgs a;
    a.abi_version = abi_version;
    a.logger = log;
    a.profiler_cb = prof;
    NetContext* ctx;
    return net::Init(a, &ctx);
  });
}

ncclscope_result_t GetPropertiesV9(int dev, ncclscope_net_properties_v9_t* out) {
  return NetGate("net.getProperties", [&] {
    const NetProperties* p;
    NCCLSCOPE_RETURN_IF_ERROR(LookUp(dev, &p));
    FillV8Fields(*p, out);
    FillV9Fields<ncclscope_net_properties_v9_t, NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V9>(*p, out);
    return Status::Ok();
  });
}

ncclscope_result_t LegacyListen(int dev, void* handle, void** lc) {
  return NetGate("net.listen", [&] { return net::Listen(LegacyContext(), dev, handle, lc); });
}

ncclscope_result_t LegacyConnect(int dev, void* handle, void** sc, ncclscope_net_device_handle_t** dev_comm) {
  return NetGate("net.connect", [&] { return net::Connect(LegacyContext(), dev, handle, sc, dev_comm); });
}

ncclscope_result_t Isend(void* sc, void* data, size_t size, int tag, void* mh, void* ph, void** req) {
  return NetGate("net.isend", [&] { return net::Isend(sc, data, size, tag, mh, ph, req); });
}

ncclscope_result_t Irecv(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs, void** phs,
                         void** req) {
  return NetGate("net.irecv", [&] { return net::Irecv(rc, n, data, sizes, tags, mhs, phs, req); });
}

ncclscope_result_t InitPerComm(int abi_version, void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* cfg,
                               ncclscope_logger_t log, ncclscope_profiler_callback_t prof) {
  SetNcclLogger(log);
  return NetGate(abi_version == 12 ? "ncclNetPlugin_v12.init" : "ncclNetPlugin_v11.init", [&] {
    if (FixedTransport() == nullptr) InstallPluginServices();  // this may be the process's first call into the plugin
    InitArgs a;
    a.abi_version = abi_version;
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
  return NetGate("net.finalize", [&] { return net::Finalize(static_cast<NetContext*>(ctx)); });
}

ncclscope_result_t SetNetAttr(void* ctx, ncclscope_net_attr_t* attr) {
  return NetGate("net.setNetAttr", [&] {
    if (attr == nullptr) return Status::Ok();
    NetAttr a;
    a.send_max_flows_per_peer = attr->sendCommAttr.maxFlowsPerPeer;
    a.recv_max_flows_per_peer = attr->recvCommAttr.maxFlowsPerPeer;
    a.op = attr->op;
    a.algo = attr->algo;
    a.proto = attr->proto;
    return net::SetNetAttr(static_cast<NetContext*>(ctx), a, *attr);
  });
}

ncclscope_result_t Listen(void* ctx, int dev, void* handle, void** lc) {
  return NetGate("net.listen", [&] { return net::Listen(static_cast<NetContext*>(ctx), dev, handle, lc); });
}

ncclscope_result_t Connect(void* ctx, int dev, void* handle, void** sc, ncclscope_net_device_handle_t** dev_comm) {
  return NetGate("net.connect",
                 [&] { return net::Connect(static_cast<NetContext*>(ctx), dev, handle, sc, dev_comm); });
}

}  // namespace ncclscope::net::abi::shared
