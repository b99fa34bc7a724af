// The transports ncclscope can carry a job's data with, and the choice between them at every net init.
// Each transport is one entry: its NCCLSCOPE_TRANSPORT name, its singleton, and a probe that says what
// devices it sees without opening them for use. A new transport is a new folder and a line in the table
// (transport_registry.cc).
//
// The choice (NCCL tries the NCCL_NET_PLUGIN entries in order, then its own IB, then sockets, skipping a
// plugin whose init fails or reports no device):
//  - `tcp`: our TCP transport, whatever the host has.
//  - `ib`: our verbs transport; init fails (naming the cause) when no RDMA device is usable.
//  - `auto`: TCP on a host with no RDMA device. On a host with RDMA devices, usable or not, init declines:
//    NCCL's own heavily tuned IB transport carries the data until ours is measured on real NICs, and an
//    RDMA job is never moved onto our TCP silently. NCCL_IB_DISABLE=1 makes `auto` take TCP.
// Thread-safe: the table is immutable; probes are reentrant.
#ifndef NCCLSCOPE_NET_API_TRANSPORT_REGISTRY_H_
#define NCCLSCOPE_NET_API_TRANSPORT_REGISTRY_H_

#include <string>
#include <string_view>

#include "common/status.h"
#include "net/net_types.h"
#include "net/transport.h"

namespace ncclscope::net {

struct TransportEntry {
  TransportKind kind;
  const char* name;  // the NCCLSCOPE_TRANSPORT value
  Transport& (*get)();
  TransportProbe (*probe)();
};

// Every transport, in no particular order.
const TransportEntry* Transports(int* count);
const TransportEntry& TransportFor(TransportKind kind);

struct TransportChoice {
  TransportKind kind = TransportKind::kTcp;
  std::string reason;  // for the plugin's init log line
};

// `requested` is "auto", "ib" or "tcp"; `ib_disabled` is NCCL_IB_DISABLE. A failure says why and what the
// user can do instead; NCCL then moves on to its own transports.
Result<TransportChoice> ChooseTransport(std::string_view requested, bool ib_disabled);

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_API_TRANSPORT_REGISTRY_H_
