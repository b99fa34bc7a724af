// The version-neutral net plugin: what every ncclNetPlugin_vN adapter calls after translating its
// arguments. It runs the transport ladder at init, keeps the chosen transport, and forwards comm calls
// to the transport's objects (handed to NCCL as Comm*, ListenComm* and Request* pointers).
// Thread-safety: Init/Finalize are serialised by NCCL's net mutex (and guarded by our own lock);
// everything else follows the transport's contract (transport.h).
#ifndef NCCLSCOPE_NET_API_NET_API_H_
#define NCCLSCOPE_NET_API_NET_API_H_

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "ncclscope/abi/common.h"
#include "ncclscope/abi/net.h"
#include "net/net_types.h"

namespace ncclscope::net {

struct InitArgs {
  int abi_version = 0;       // 8..12, for the log line
  bool per_comm = false;     // v11+: a context per communicator, with a runtime reference (legacy: LegacyHold)
  uint64_t comm_id = 0;
  int traffic_class = -1;
  ncclscope_logger_t logger = nullptr;
  ncclscope_profiler_callback_t profiler_cb = nullptr;
};

// v11+: *ctx is a new context (release it with Finalize). Legacy: *ctx is the process-wide legacy one.
Status Init(const InitArgs& args, NetContext** ctx);
Status Finalize(NetContext* ctx);
// The context the legacy adapters pass to Listen/Connect (valid after a legacy Init).
NetContext* LegacyContext();

Status Devices(int* ndev);
// Points at transport-owned storage that lives as long as the process (names stay valid for NCCL).
Status GetProperties(int dev, const NetProperties** props);
// NIC fusion (makeVDevice): a new device index after the existing ones, carrying `n` devices' traffic.
Status MakeVDevice(const int* devs, int n, int* vdev);
Status Listen(NetContext* ctx, int dev, void* handle, void** listen_comm);
// `dev_comm`: NCCL's device-offload handle slot (may be null), filled only by a wrapped plugin that offers it.
Status Connect(NetContext* ctx, int dev, void* handle, void** send_comm, ncclscope_net_device_handle_t** dev_comm);
Status Accept(void* listen_comm, void** recv_comm, ncclscope_net_device_handle_t** dev_comm);
Status RegMr(void* comm, void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle);
Status DeregMr(void* comm, void* mhandle);
Status GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle);
Status IrecvConsumed(void* recv_comm, int n, void* request);
Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
Status Irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
             void** phandles, void** request);
Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
Status Test(void* request, int* done, int* sizes);
Status CloseSend(void* send_comm);
Status CloseRecv(void* recv_comm);
Status CloseListen(void* listen_comm);
struct NetAttr {
  int32_t send_max_flows_per_peer = -1;
  int32_t recv_max_flows_per_peer = -1;
  uint32_t op = 0xFFFFFFFFu, algo = 0xFFFFFFFFu, proto = 0xFFFFFFFFu;
};
// `raw` is NCCL's struct, handed to the transport as given (a wrapped plugin passes it on).
Status SetNetAttr(NetContext* ctx, const NetAttr& attr, const ncclscope_net_attr_t& raw);

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_API_NET_API_H_
