// Entry points whose signature is the same in several ncclNetPlugin_vN tables, written once and placed in
// each table that has that slot: the data path and close calls of every version (v8+), isend/irecv with
// profiler handles (v10+), and the per-communicator ctx calls of v11 and v12. Each only translates and calls
// the version-neutral net API through the net gate. Stateless; thread-safety is the net API's.
#ifndef NCCLSCOPE_PLUGIN_NET_SHARED_ENTRY_POINTS_H_
#define NCCLSCOPE_PLUGIN_NET_SHARED_ENTRY_POINTS_H_

#include "common/gate.h"
#include "ncclscope/abi/layout_asserts.h"
#include "net/api/net_api.h"

namespace ncclscope::net::abi::shared {

// Every version (v8+).
ncclscope_result_t Devices(int* n);
ncclscope_result_t Accept(void* lc, void** rc, ncclscope_net_device_handle_t** dev_comm);
ncclscope_result_t RegMr(void* comm, void* data, size_t size, int type, void** mh);
ncclscope_result_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t off, int fd, void** mh);
ncclscope_result_t DeregMr(void* comm, void* mh);
// Device offload, passed to a wrapped plugin that offers it (NCCL calls irecvConsumed whenever the entry is
// set: a no-op for our own transports).
ncclscope_result_t GetDeviceMr(void* comm, void* mh, void** dptr_mh);
ncclscope_result_t IrecvConsumed(void* rc, int n, void* req);
ncclscope_result_t Iflush(void* rc, int n, void** data, int* sizes, void** mhs, void** req);
ncclscope_result_t Test(void* req, int* done, int* sizes);
ncclscope_result_t CloseSend(void* c);
ncclscope_result_t CloseRecv(void* c);
ncclscope_result_t CloseListen(void* c);
// makeVDevice (v9+): NIC fusion; v9-v11 pass up to 4 devices, v12 up to 8.
ncclscope_result_t MakeVDeviceV9(int* d, ncclscope_net_vdevice_props_v9_t* props);
ncclscope_result_t MakeVDeviceV12(int* d, ncclscope_net_vdevice_props_v12_t* props);

// v8-v10: init once per load (prof is NULL before v10), no ctx; listen and connect use the process-wide
// legacy context. v9 and v10 share their properties struct.
ncclscope_result_t LegacyInit(int abi_version, ncclscope_logger_t log, ncclscope_profiler_callback_t prof);
ncclscope_result_t GetPropertiesV9(int dev, ncclscope_net_properties_v9_t* out);
ncclscope_result_t LegacyListen(int dev, void* handle, void** lc);
ncclscope_result_t LegacyConnect(int dev, void* handle, void** sc, ncclscope_net_device_handle_t** dev_comm);

// v10+: sizes are size_t and every request carries a profiler handle.
ncclscope_result_t Isend(void* sc, void* data, size_t size, int tag, void* mh, void* ph, void** req);
ncclscope_result_t Irecv(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs, void** phs, void** req);

// v11 and v12: per-communicator ctx.
ncclscope_result_t InitPerComm(int abi_version, void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* cfg,
                               ncclscope_logger_t log, ncclscope_profiler_callback_t prof);
ncclscope_result_t Finalize(void* ctx);
ncclscope_result_t SetNetAttr(void* ctx, ncclscope_net_attr_t* attr);
ncclscope_result_t Listen(void* ctx, int dev, void* handle, void** lc);
ncclscope_result_t Connect(void* ctx, int dev, void* handle, void** sc, ncclscope_net_device_handle_t** dev_comm);

}  // namespace ncclscope::net::abi::shared

#endif  // NCCLSCOPE_PLUGIN_NET_SHARED_ENTRY_POINTS_H_
