// The transport interface: what each transport (net/tcp, net/verbs) implements.
// It is shaped by what verbs needs: a receiver-driven clear-to-send (irecv advertises buffers, isend
// may answer "not yet" with a null request until one arrives), registration handles on every comm,
// and completion discovered only by polling a Request in Test(). Nothing here sees NCCL's structs.
//
// Thread-safety (NCCL's rules): a Transport's device queries are reentrant; Listen/Connect/
// Accept/RegMr/DeregMr/Close run on NCCL's service thread; Isend/Irecv/Iflush/Test on one progress
// thread per comm, and a Request is tested only by the thread that posted it. RegMr/DeregMr may run
// concurrently with the data path of the same comm. Isend/Irecv/Test take no lock and allocate nothing.
#ifndef NCCLSCOPE_NET_TRANSPORT_H_
#define NCCLSCOPE_NET_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "ncclscope/abi/net.h"
#include "net/net_types.h"

namespace ncclscope::net {

// What a transport sees on this host, without opening anything for use (transport_registry.h).
struct TransportProbe {
  int present = 0;     // devices seen
  int usable = 0;      // devices the transport could carry data over
  std::string detail;  // what was seen, for the init log line ("2 RDMA device(s): rxe0, rxe1")
};

// A posted isend/irecv/iflush; owned by its comm, valid until Test() reports done.
class Request {
 public:
  virtual ~Request() = default;
  // done=1 when complete; `sizes` (may be null) receives one int per buffer. An error names the peer.
  virtual Status Test(int* done, int* sizes) = 0;
};

class Comm {
 public:
  virtual ~Comm() = default;
  // `type` is NCCL_PTR_HOST/CUDA; `dmabuf_fd` < 0 when not a DMA-BUF registration.
  virtual Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) = 0;
  virtual Status DeregMr(void* mhandle) = 0;
  // Releases everything (joins helper threads); pending requests die with the comm.
  virtual Status Close() = 0;
  // Device offload (a non-HOST netDeviceType): only a wrapped plugin that offers it has it.
  virtual Status GetDeviceMr(void* /*mhandle*/, void** /*dptr_mhandle*/) {
    return InternalError("getDeviceMr: this transport has no device offload");
  }
};

class SendComm : public Comm {
 public:
  // *request = nullptr means "cannot post yet" (no clear-to-send from the receiver, or queue full).
  virtual Status Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) = 0;
};

class RecvComm : public Comm {
 public:
  // n buffers under one request; tags choose a buffer within the oldest pending multi-receive.
  // `optional_completion` is NCCL's hint that the data carries its own arrival flags.
  virtual Status Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
                       void** phandles, bool optional_completion, Request** request) = 0;
  // Host-memory transports complete at once (*request = nullptr).
  virtual Status Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) = 0;
  // NCCL's "the GPU has consumed this completed receive" (device offload); a no-op for host transports.
  // `request` was completed by Test() already: it is an identifier here, never dereferenced by NCCL's rules.
  virtual Status IrecvConsumed(int /*n*/, void* /*request*/) { return Status::Ok(); }
};

class ListenComm {
 public:
  virtual ~ListenComm() = default;
  // *recv_comm = nullptr means "not yet"; never blocks. `dev_comm` (may be null) is NCCL's device-offload
  // handle slot, which only a wrapped plugin fills.
  virtual Status Accept(RecvComm** recv_comm, ncclscope_net_device_handle_t** dev_comm) = 0;
  virtual Status Close() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Discovers devices; fails (with a message for the log) when there are none.
  virtual Status Open() = 0;
  virtual int device_count() const = 0;
  virtual const NetProperties& properties(int dev) const = 0;
  // NIC fusion: appends a device that carries the traffic of `devs` (valid, n >= 1) and returns its index;
  // device_count() grows by one. Called on NCCL's init thread before any listen or connect.
  virtual Status MakeVDevice(const int* devs, int n, int* vdev) = 0;
  // Writes the handle (kHandleBytes) and returns a listen comm synchronously (never null on success).
  virtual Status Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) = 0;
  // Non-blocking: *send_comm = nullptr means "call again with the same handle". `dev_comm` as in Accept.
  virtual Status Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm,
                         ncclscope_net_device_handle_t** dev_comm) = 0;
  // Per-init hooks: Attach runs at every net init for its context (before the init's log line, so a
  // transport may discover its devices there), Detach at finalize (v11+ contexts only), SetNetAttr at each
  // setNetAttr. Only a wrapped plugin needs them (it has a context of its own per NCCL context).
  virtual Status Attach(NetContext* /*ctx*/) { return Status::Ok(); }
  virtual void Detach(NetContext* /*ctx*/) {}
  virtual void SetNetAttr(NetContext* /*ctx*/, const ncclscope_net_attr_t& /*attr*/) {}
};

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_TRANSPORT_H_
