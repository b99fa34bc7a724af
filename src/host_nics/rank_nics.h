// Which of the host's NICs this rank's traffic goes through, and how ncclscope knows it:
// - exact: ncclscope's own transport or the wrapped plugin carried it and names the device it used;
// - nccl_ib_qp: NCCL's IB transport raised QP events (NCCL built with NET_PROFILER=1) naming its device number,
//   taken as the N-th active port NCCL_IB_HCA leaves, in device order, as NCCL enumerates them (inferred);
// - nearest_gpu: NCCL's own transport, no events: the ports NCCL_IB_HCA leaves that are nearest the rank's GPU
//   on the PCI tree, as NCCL's topology search picks them (inferred);
// - ib_hca: the ports NCCL_IB_HCA leaves, the GPU's place unknown (inferred);
// - socket_ifname: no active RDMA port (or NCCL_IB_DISABLE=1): NCCL's socket transport over the interfaces
//   NCCL_SOCKET_IFNAME leaves (inferred);
// - host: nothing narrows it: every active port of the host.
// docs/metrics.md ("Which NICs a rank uses") says how to join it with the host's NIC counters.
#ifndef NCCLSCOPE_HOST_NICS_RANK_NICS_H_
#define NCCLSCOPE_HOST_NICS_RANK_NICS_H_

#include <optional>
#include <string>
#include <vector>

#include "common/hca_filter.h"
#include "host_nics/netdevs.h"
#include "host_nics/pci_distance.h"
#include "host_nics/rdma_ports.h"

namespace ncclscope {

enum class NicMapping : uint8_t { kExact, kNcclIbQp, kNearestGpu, kIbHca, kSocketIfname, kHost };
const char* NicMappingName(NicMapping mapping);  // "exact", "nccl_ib_qp", …

struct RankNic {
  std::string device;  // the RDMA device, "" for an interface without one
  int port = 0;
  std::string netdev;  // the interface (under the RDMA port, or the socket transport's)
  std::optional<PciDistance> from_gpu;  // from the rank's GPU, where both are known
};

struct RankNics {
  NicMapping mapping = NicMapping::kHost;
  std::vector<RankNic> nics;
};

struct RankNicInputs {
  std::vector<RdmaPort> ports;  // the host's (counters not needed)
  std::vector<Netdev> netdevs;
  std::vector<std::string> carried;  // NICs ncclscope's transports or the wrapped plugin used ("a+b": fused)
  std::vector<int> nccl_ib_devices;  // N of the nccl-ib<N> rows: NCCL IB's QP events
  SysfsDeviceLocation gpu;           // the rank's GPU; path "" when unknown
  HcaFilter ib_hca;                  // NCCL_IB_HCA
  HcaFilter socket_ifname;           // NCCL_SOCKET_IFNAME (the same form, without ports)
  bool ib_disabled = false;          // NCCL_IB_DISABLE=1
};

RankNics InferRankNics(const RankNicInputs& in);

// This process's, from the host's sysfs and NCCL's environment (re-read at most once a minute: ports come up)
// and the rank's GPU (common/process_identity.h). Thread-safe.
RankNics CurrentRankNics(const std::vector<std::string>& carried, const std::vector<int>& nccl_ib_devices);

// For each of `ports`, the PCI addresses of the GPUs (of `gpus`) it is among the nearest active ports of: the
// GPUs NCCL's topology would give it. Empty for a port without a PCI path (soft-RoCE).
std::vector<std::vector<std::string>> GpusNearestEachPort(const std::vector<RdmaPort>& ports,
                                                          const std::vector<SysfsDeviceLocation>& gpus);

// "mlx5_0:1,mlx5_3:1" (devices with their port) or "eth0" (interfaces): one label value.
std::string RankNicsLabel(const RankNics& nics);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_RANK_NICS_H_
