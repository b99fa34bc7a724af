// The verbs (InfiniBand / RoCE) transport: devices are the usable ports of the RDMA devices libibverbs
// reports, filtered by NCCL_IB_HCA, described exactly as NCCL's own IB transport describes them.
// Connections are RC queue pairs with a receiver-driven clear-to-send (connect.h, send_comm.h,
// recv_comm.h). `auto` still never picks this transport (NCCLSCOPE_TRANSPORT=ib does).
// Thread-safety: device queries are const after Open(), which NCCL serialises.
#ifndef NCCLSCOPE_NET_VERBS_VERBS_TRANSPORT_H_
#define NCCLSCOPE_NET_VERBS_VERBS_TRANSPORT_H_

#include <vector>

#include "net/transport.h"
#include "net/transport.h"
#include "net/verbs/discovery.h"

namespace ncclscope::net::verbs {

class VerbsTransport final : public Transport {
 public:
  const char* name() const override { return "verbs"; }
  Status Open() override;
  int device_count() const override { return static_cast<int>(props_.size()); }
  const NetProperties& properties(int dev) const override { return props_[dev]; }
  Status Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) override;
  Status Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm,
                 ncclscope_net_device_handle_t** dev_comm) override;
  // A fused device splits every message across its members (fused_comm.h); its speed is their sum. Fused
  // devices are kept across Open() (NCCL makes its vNICs once per process).
  Status MakeVDevice(const int* devs, int n, int* vdev) override;

 private:
  void AppendFused(const std::vector<int>& members);
  std::vector<int> Members(int dev) const;

  std::vector<NetProperties> props_;  // the ports', then the fused devices'
  std::vector<VerbsNetDevice> devices_;  // the ports
  std::vector<std::vector<int>> fused_;  // members of each fused device
};

VerbsTransport& GetVerbsTransport();
// The RDMA devices present and the ports usable under the current settings, for the transport choice.
TransportProbe ProbeVerbs();

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_VERBS_TRANSPORT_H_
