#include "net/verbs/verbs_transport.h"

#include <algorithm>

#include "common/log.h"
#include "common/params.h"
#include "core/net_stats.h"
#include "net/verbs/connect.h"
#include "net/verbs/discovery.h"
#include "net/verbs/verbs_probe.h"
#include "net/vdevice.h"

namespace ncclscope::net::verbs {

VerbsTransport& GetVerbsTransport() {
  static VerbsTransport* t = new VerbsTransport();  // never destroyed (-z nodelete; NCCL threads at exit)
  return *t;
}

namespace {

DiscoveryOptions Options() {
  DiscoveryOptions o = DiscoveryOptions::FromParams(Params());
  o.sysfs_root = SysfsRoot();
  return o;
}

}  // namespace

TransportProbe ProbeVerbs() {
  TransportProbe p;
  std::vector<std::string> names = ListVerbsDeviceNames();
  p.present = static_cast<int>(names.size());
  p.detail = std::to_string(names.size()) + " RDMA device(s)";
  for (size_t i = 0; i < names.size(); ++i) p.detail += (i ? ", " : ": ") + names[i];
  if (p.present == 0) return p;  // no need to load libibverbs
  Result<DiscoveryReport> found = DiscoverVerbsDevices(Options());
  if (!found.ok()) {
    p.detail += ", none usable: " + found.status().message();
    return p;
  }
  p.usable = static_cast<int>(found->devices.size());
  p.detail += ", " + std::to_string(p.usable) + " usable port(s)";
  for (size_t i = 0; i < found->devices.size(); ++i) {
    p.detail += (i ? ", " : ": ") + found->devices[i].device_name + ":" + std::to_string(found->devices[i].port_num);
  }
  return p;
}

Status VerbsTransport::Open() {
  Result<DiscoveryReport> found = DiscoverVerbsDevices(Options());
  if (!found.ok()) return found.status();
  if (found->devices.empty()) {
    std::string why;
    for (const std::string& line : found->lines) why += (why.empty() ? "" : "; ") + line;
    return SystemError("no usable RDMA port (" + why + ")");
  }
  // Open() runs at init, serialised by NCCL's net mutex; data-path threads never read these vectors.
  props_.clear();
  for (const VerbsNetDevice& d : found->devices) props_.push_back(d.props);
  devices_ = found->devices;
  const std::vector<std::vector<int>> fused = std::move(fused_);
  fused_.clear();
  for (const std::vector<int>& m : fused) {
    if (*std::max_element(m.begin(), m.end()) < static_cast<int>(devices_.size())) AppendFused(m);
  }
  for (const NetProperties& p : props_) SetNicIdentity({p.name, "verbs", p.rail_id, p.plane_id});
  NCCLSCOPE_INFO(subsys::kNet, "NCCLSCOPE_TRANSPORT=ib: %zu RDMA port(s), RC queue pairs with receiver-driven "
                 "clear-to-send", props_.size());
  return Status::Ok();
}

void VerbsTransport::AppendFused(const std::vector<int>& members) {
  std::vector<const NetProperties*> props;
  int speed = 0;
  for (int d : members) {
    props.push_back(&props_[d]);
    speed += props_[d].speed_mbps;
  }
  props_.push_back(FusedProperties(props, members.data(), static_cast<int>(members.size()), speed));
  fused_.push_back(members);
}

Status VerbsTransport::MakeVDevice(const int* devs, int n, int* vdev) {
  const int nports = static_cast<int>(devices_.size());
  for (int i = 0; i < n; ++i) {
    if (devs[i] >= nports) return InvalidArgument("makeVDevice: device " + std::to_string(devs[i]) + " is fused already");
  }
  AppendFused(std::vector<int>(devs, devs + n));
  *vdev = device_count() - 1;
  NCCLSCOPE_INFO(subsys::kNet, "verbs: fused device %d (%s): every message split across its %d ports",
                 *vdev, props_.back().name.c_str(), n);
  return Status::Ok();
}

std::vector<int> VerbsTransport::Members(int dev) const {
  const int nports = static_cast<int>(devices_.size());
  return dev < nports ? std::vector<int>{dev} : fused_[dev - nports];
}

Status VerbsTransport::Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) {
  *listen_comm = nullptr;
  if (dev < 0 || dev >= device_count()) return InternalError("listen on unknown device " + std::to_string(dev));
  return VerbsListen(devices_, Members(dev), ctx, handle, listen_comm);
}

Status VerbsTransport::Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm,
                               ncclscope_net_device_handle_t** /*dev_comm*/) {
  *send_comm = nullptr;
  if (dev < 0 || dev >= device_count()) return InternalError("connect on unknown device " + std::to_string(dev));
  return VerbsConnect(devices_, Members(dev), ctx, handle, send_comm);
}

}  // namespace ncclscope::net::verbs
