#include "net/verbs/verbs_transport.h"

#include "common/log.h"
#include "common/params.h"
#include "net/verbs/connect.h"
#include "net/verbs/discovery.h"
#include "net/verbs/verbs_probe.h"

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
  NCCLSCOPE_INFO(subsys::kNet, "NCCLSCOPE_TRANSPORT=ib: %zu RDMA port(s), RC queue pairs with receiver-driven "
                 "clear-to-send", props_.size());
  return Status::Ok();
}

Status VerbsTransport::Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) {
  *listen_comm = nullptr;
  if (dev < 0 || dev >= device_count()) return InternalError("listen on unknown device " + std::to_string(dev));
  return VerbsListen(devices_, dev, ctx, handle, listen_comm);
}

Status VerbsTransport::Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm) {
  *send_comm = nullptr;
  if (dev < 0 || dev >= device_count()) return InternalError("connect on unknown device " + std::to_string(dev));
  return VerbsConnect(devices_, dev, ctx, handle, send_comm);
}

}  // namespace ncclscope::net::verbs
