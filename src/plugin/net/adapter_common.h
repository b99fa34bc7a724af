// Helpers shared by the ncclNetPlugin_vN adapters: filling the fields that every properties version
// has under the same name, from the one internal NetProperties. Templates over the version's struct
// type, so nothing is ever cast from one version's layout to another. Stateless.
#ifndef NCCLSCOPE_PLUGIN_NET_ADAPTER_COMMON_H_
#define NCCLSCOPE_PLUGIN_NET_ADAPTER_COMMON_H_

#include "ncclscope/abi/layout_asserts.h"
#include "net/api/net_api.h"

namespace ncclscope::net::abi {

// name .. netDeviceVersion: present in v8 and later.
template <class Props>
void FillV8Fields(const NetProperties& p, Props* out) {
  out->name = const_cast<char*>(p.name.c_str());
  out->pciPath = p.pci_path.empty() ? nullptr : const_cast<char*>(p.pci_path.c_str());
  out->guid = p.guid;
  out->ptrSupport = p.ptr_support;
  out->regIsGlobal = p.reg_is_global ? 1 : 0;
  out->speed = p.speed_mbps;
  out->port = p.port;
  out->latency = p.latency_us;
  out->maxComms = p.max_comms;
  out->maxRecvs = p.max_recvs;
  out->netDeviceType = static_cast<ncclscope_net_device_type_t>(p.net_device_type);
  out->netDeviceVersion = p.net_device_version;
}

// forceFlush, vProps (K devices), maxP2pBytes, maxCollBytes: v9 and later.
template <class Props, int K>
void FillV9Fields(const NetProperties& p, Props* out) {
  out->forceFlush = p.force_flush ? 1 : 0;
  int n = p.vdev_count < K ? p.vdev_count : K;
  out->vProps.ndevs = n;
  for (int i = 0; i < K; ++i) out->vProps.devs[i] = i < n ? p.vdevs[i] : 0;
  out->maxP2pBytes = p.max_p2p_bytes;
  out->maxCollBytes = p.max_coll_bytes;
}

// Device index check + lookup shared by every getProperties.
inline Status LookUp(int dev, const NetProperties** p) { return GetProperties(dev, p); }

}  // namespace ncclscope::net::abi

#endif  // NCCLSCOPE_PLUGIN_NET_ADAPTER_COMMON_H_
