// The cluster's own net plugin, run inside ncclscope (NCCLSCOPE_NET_CHAIN): loaded RTLD_LOCAL, its newest
// ncclNetPlugin_vN table (v8..v12) picked, and every entry offered in one version-neutral shape, so that the
// chain transport above it is written once. What the inner's version lacks is filled as NCCL fills it for an
// old plugin (nccl-abi.md: maxP2pBytes 1 GiB, maxCollBytes 512 MiB, vProps {1, dev}, rail/plane -1), or
// reported absent (the Has* flags). Results are the inner's own ncclResult_t codes, for the messages.
// Thread-safety: the inner's, which follows NCCL's rules (nccl-abi.md); this class adds no state after load.
#ifndef NCCLSCOPE_NET_CHAIN_INNER_PLUGIN_H_
#define NCCLSCOPE_NET_CHAIN_INNER_PLUGIN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "ncclscope/abi/net.h"
#include "net/net_types.h"

namespace ncclscope::net::chain {

class InnerPlugin {
 public:
  virtual ~InnerPlugin() = default;

  int version() const { return version_; }
  const std::string& name() const { return name_; }  // the table's name ("AWS Libfabric")
  const std::string& path() const { return path_; }   // the file it was loaded from
  const std::string& who() const { return who_; }     // "the wrapped net plugin 'NAME' (PATH)", for messages
  bool per_comm() const { return version_ >= 11; }     // init per communicator, with a ctx
  bool has_make_vdevice() const { return has_make_vdevice_; }
  bool has_irecv_consumed() const { return has_irecv_consumed_; }

  // v11+: *ctx is the inner's new context. v8-v10: once per process; ctx and comm_id are not used.
  virtual ncclscope_result_t Init(void** ctx, uint64_t comm_id, int traffic_class, ncclscope_logger_t logger,
                                  ncclscope_profiler_callback_t prof) = 0;
  virtual ncclscope_result_t Finalize(void* ctx) = 0;  // v11+; a no-op before
  virtual ncclscope_result_t Devices(int* ndev) = 0;
  virtual ncclscope_result_t GetProperties(int dev, NetProperties* out) = 0;
  virtual ncclscope_result_t MakeVDevice(const int* devs, int n, int* vdev) = 0;
  virtual ncclscope_result_t SetNetAttr(void* ctx, ncclscope_net_attr_t* attr) = 0;  // v11+ with the entry
  virtual ncclscope_result_t Listen(void* ctx, int dev, void* handle, void** listen_comm) = 0;
  virtual ncclscope_result_t Connect(void* ctx, int traffic_class, int dev, void* handle, void** send_comm,
                                     ncclscope_net_device_handle_t** dev_comm) = 0;
  virtual ncclscope_result_t Accept(void* listen_comm, void** recv_comm,
                                    ncclscope_net_device_handle_t** dev_comm) = 0;
  virtual ncclscope_result_t RegMr(void* comm, void* data, size_t size, int type, void** mhandle) = 0;
  virtual ncclscope_result_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                         void** mhandle) = 0;
  virtual ncclscope_result_t DeregMr(void* comm, void* mhandle) = 0;
  virtual ncclscope_result_t Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                                   void* phandle, void** request) = 0;
  // `*request` on entry carries NCCL's optional-completion hint (0x1) for v9+ inners.
  virtual ncclscope_result_t Irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags,
                                   void** mhandles, void** phandles, void** request) = 0;
  virtual ncclscope_result_t Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                                    void** request) = 0;
  virtual ncclscope_result_t Test(void* request, int* done, int* sizes) = 0;
  virtual ncclscope_result_t CloseSend(void* send_comm) = 0;
  virtual ncclscope_result_t CloseRecv(void* recv_comm) = 0;
  virtual ncclscope_result_t CloseListen(void* listen_comm) = 0;
  virtual ncclscope_result_t GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) = 0;
  virtual ncclscope_result_t IrecvConsumed(void* recv_comm, int n, void* request) = 0;

 protected:
  int version_ = 0;
  std::string name_, path_, who_;
  bool has_make_vdevice_ = false, has_irecv_consumed_ = false;
};

// Loads `value` as NCCL resolves NCCL_NET_PLUGIN (no '/': libnccl-net-VALUE.so first, then as given) and picks
// its newest table from v12 down to v8. Fails naming what was tried, or the tables it has when none is new
// enough, or that it is ncclscope itself (or points into it), or
// that it called back into ncclscope while it loaded. Never unloaded (its threads may outlive a finalize).
Result<std::unique_ptr<InnerPlugin>> LoadInnerPlugin(const std::string& value);

// "ncclSystemError (2)": an inner's result for the messages.
std::string ResultName(ncclscope_result_t r);

}  // namespace ncclscope::net::chain

#endif  // NCCLSCOPE_NET_CHAIN_INNER_PLUGIN_H_
