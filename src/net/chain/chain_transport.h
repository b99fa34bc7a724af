// The chain transport: the cluster's own net plugin (NCCLSCOPE_NET_CHAIN, or under `auto` the libnccl-net.so
// NCCL would load by itself) carries the data, ncclscope counts it. Devices, properties and handles are the
// inner's own (its 128-byte handle is passed through untouched, so the peer of a connection is not known here:
// per-peer rows are not kept for wrapped comms). Per NCCL context the inner gets its own init (v11+ inners) or
// one init per process (v8-v10), with NCCL's logger, profiler callback and traffic class handed on.
// Threads: Open/Attach/Detach/MakeVDevice on NCCL's init thread, under the net API's init lock; the rest as
// transport.h says.
#ifndef NCCLSCOPE_NET_CHAIN_CHAIN_TRANSPORT_H_
#define NCCLSCOPE_NET_CHAIN_CHAIN_TRANSPORT_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "net/chain/inner_plugin.h"
#include "net/transport.h"

namespace ncclscope::net::chain {

class ChainTransport final : public Transport {
 public:
  const char* name() const override { return "chain"; }
  // Loads the inner (once per process): NCCLSCOPE_NET_CHAIN's, else the default plugin found.
  Status Open() override;
  int device_count() const override { return ndevs_.load(std::memory_order_acquire); }
  const NetProperties& properties(int dev) const override { return props_[dev]; }
  Status MakeVDevice(const int* devs, int n, int* vdev) override;
  Status Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) override;
  Status Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm,
                 ncclscope_net_device_handle_t** dev_comm) override;
  Status Attach(NetContext* ctx) override;
  void Detach(NetContext* ctx) override;
  void SetNetAttr(NetContext* ctx, const ncclscope_net_attr_t& attr) override;

  InnerPlugin& inner() { return *inner_; }
  // The NIC label of a device in the metrics: the inner's device name, with ":<index>" when an earlier device
  // has the same one (aws-ofi-nccl names every loopback device "lo"), so each device keeps its own counters.
  const std::string& nic_label(int dev) const { return labels_[dev]; }

 private:
  Status ReadDevices();
  void Describe(int dev);  // its label and its ncclscope_nic_info identity
  void* InnerContext(const NetContext* ctx) const { return inner_->per_comm() ? ctx->transport_state : nullptr; }
  Status CheckDevice(int dev) const;

  std::unique_ptr<InnerPlugin> inner_;
  bool legacy_init_done_ = false;
  // Fixed storage: service threads of other communicators read entries [0, ndevs_) while NIC fusion appends,
  // and NCCL keeps the name pointers.
  static constexpr int kMaxDevices = 128;
  std::unique_ptr<NetProperties[]> props_{new NetProperties[kMaxDevices]};
  std::unique_ptr<std::string[]> labels_{new std::string[kMaxDevices]};
  std::atomic<int> ndevs_{0};
};

ChainTransport& GetChainTransport();

// For the transport table. The one "device" `auto` looks for: "NCCLSCOPE_NET_CHAIN=<value>", else the plugin
// NCCL would load by itself (default_plugin.h), else none. Whether `auto` can wrap the one it found by itself
// (Declined, saying why and what to set, when it cannot: NCCL would have run it). The probe of a named `chain`
// (loads the inner; counts its devices where it needs no init).
std::vector<std::string> ConfiguredChain();
Status WrappableChain();
TransportProbe ProbeChain();

}  // namespace ncclscope::net::chain

#endif  // NCCLSCOPE_NET_CHAIN_CHAIN_TRANSPORT_H_
