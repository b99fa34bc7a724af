#include "net/api/transport_registry.h"

#include "net/tcp/tcp_transport.h"
#include "net/verbs/verbs_probe.h"
#include "net/verbs/verbs_transport.h"

namespace ncclscope::net {
namespace {

Transport& Tcp() { return tcp::GetTcpTransport(); }
Transport& Verbs() { return verbs::GetVerbsTransport(); }

const TransportEntry kTransports[] = {
    {TransportKind::kVerbs, "ib", &Verbs, &verbs::ProbeVerbs},
    {TransportKind::kTcp, "tcp", &Tcp, &tcp::ProbeTcp},
};

}  // namespace

const TransportEntry* Transports(int* count) {
  *count = static_cast<int>(std::size(kTransports));
  return kTransports;
}

const TransportEntry& TransportFor(TransportKind kind) {
  for (const TransportEntry& e : kTransports) {
    if (e.kind == kind) return e;
  }
  return kTransports[0];  // unreachable: every kind has an entry
}

Result<TransportChoice> ChooseTransport(std::string_view requested, bool ib_disabled) {
  if (requested == "tcp") return TransportChoice{TransportKind::kTcp, "NCCLSCOPE_TRANSPORT=tcp"};
  if (requested == "ib") {
    if (ib_disabled) {
      return InvalidUsage("NCCLSCOPE_TRANSPORT=ib, but NCCL_IB_DISABLE=1 turns RDMA off; unset one of them");
    }
    TransportProbe p = verbs::ProbeVerbs();
    if (p.usable == 0) {
      return SystemError("NCCLSCOPE_TRANSPORT=ib, but no RDMA device is usable (" + p.detail +
                         "); unset it (NCCL then uses its own transports) or set NCCLSCOPE_TRANSPORT=tcp");
    }
    return TransportChoice{TransportKind::kVerbs, "NCCLSCOPE_TRANSPORT=ib: " + p.detail};
  }
  if (ib_disabled) return TransportChoice{TransportKind::kTcp, "auto: NCCL_IB_DISABLE=1"};
  // Presence alone decides `auto`: no need to load libibverbs and open every device at each init.
  const std::vector<std::string> names = verbs::ListVerbsDeviceNames();
  if (!names.empty()) {
    std::string seen = std::to_string(names.size()) + " RDMA device(s)";
    for (size_t i = 0; i < names.size(); ++i) seen += (i ? ", " : ": ") + names[i];
    return Unimplemented(seen +
                         ": declining, so that NCCL's own IB transport carries the data (ncclscope's verbs "
                         "transport is opt-in until it is measured on real NICs: NCCLSCOPE_TRANSPORT=ib; "
                         "NCCLSCOPE_TRANSPORT=tcp forces TCP)");
  }
  return TransportChoice{TransportKind::kTcp, "auto: no RDMA device found"};
}

}  // namespace ncclscope::net
