#include "net/verbs/verbs_transport.h"

#include "net/verbs/verbs_probe.h"

namespace ncclscope::net::verbs {

VerbsTransport& GetVerbsTransport() {
  static VerbsTransport* t = new VerbsTransport();  // never destroyed (-z nodelete; NCCL threads at exit)
  return *t;
}

TransportProbe ProbeVerbs() {
  TransportProbe p;
  std::vector<std::string> names = ListVerbsDeviceNames();
  p.present = static_cast<int>(names.size());
  p.detail = std::to_string(names.size()) + " RDMA device(s)";
  for (size_t i = 0; i < names.size(); ++i) p.detail += (i ? ", " : ": ") + names[i];
  return p;
}

Status VerbsTransport::Open() {
  return Unimplemented("device discovery is not built yet");
}

Status VerbsTransport::Listen(NetContext*, int, void*, ListenComm**) {
  return Unimplemented("ncclscope's verbs data path (RC queue pairs) is not built yet; use NCCL's own IB "
                       "transport (unset NCCLSCOPE_TRANSPORT) or NCCLSCOPE_TRANSPORT=tcp");
}

Status VerbsTransport::Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm) {
  *send_comm = nullptr;
  ListenComm* unused = nullptr;
  return Listen(ctx, dev, handle, &unused);
}

}  // namespace ncclscope::net::verbs
