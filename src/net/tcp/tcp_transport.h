// The TCP transport: devices are the filtered network interfaces; listen/connect/accept are
// non-blocking state machines over `nsocks` sockets per connection (each opens with a Hello naming its
// connection and index); the connecting side's state is a PendingConnect (net/handle.h).
// Thread-safety: device queries are const after Open().
#ifndef NCCLSCOPE_NET_TCP_TCP_TRANSPORT_H_
#define NCCLSCOPE_NET_TCP_TCP_TRANSPORT_H_

#include <vector>

#include "net/tcp/tcp_config.h"
#include "net/transport.h"
#include "socket/interfaces.h"

namespace ncclscope::net::tcp {

class TcpTransport final : public Transport {
 public:
  const char* name() const override { return "TCP"; }
  Status Open() override;
  int device_count() const override { return static_cast<int>(props_.size()); }
  const NetProperties& properties(int dev) const override { return props_[dev]; }
  Status Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) override;
  Status Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm,
                 ncclscope_net_device_handle_t** dev_comm) override;
  // A fused device runs over its first member's interface (the TCP transport does not split traffic
  // across interfaces); its speed is that member's. Kept across Open() (NCCL makes vNICs once).
  Status MakeVDevice(const int* devs, int n, int* vdev) override;

  const std::vector<sock::Interface>& interfaces() const { return ifaces_; }

 private:
  void AppendFused(const std::vector<int>& members);

  std::vector<sock::Interface> ifaces_;  // one per device; a fused device's is its first member's
  std::vector<NetProperties> props_;
  std::vector<std::vector<int>> fused_;  // members of each fused device, in creation order
};

// The process-wide TCP transport (devices are discovered again by every Open()).
TcpTransport& GetTcpTransport();
// The interfaces NCCLSCOPE_SOCKET_IFNAME selects, for the transport choice.
TransportProbe ProbeTcp();

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_TCP_TRANSPORT_H_
