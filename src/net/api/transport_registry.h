// The transports ncclscope can carry a job's data with, and the choice between them at every net init.
// The table (transport_registry.cc) is the registry: each entry is a transport's NCCLSCOPE_TRANSPORT
// name, a probe and a factory, and the choice only iterates it. Adding a transport is a new folder under
// src/net/ and one line in that table (docs/architecture.md).
//
// The choice (NCCL tries the NCCL_NET_PLUGIN entries in order, then its own IB, then sockets, skipping a
// plugin whose init fails or reports no device):
//  - a transport's name (`tcp`, `ib`): that transport, if its probe finds a usable device; otherwise init
//    fails, naming what was seen and what the user can do instead.
//  - `auto`: the entries in table order, each by its AutoRule. Today: with NCCLSCOPE_NET_CHAIN set, the
//    chain transport wraps the plugin it names, on every host. Otherwise, where the net plugin NCCL would load
//    by itself (libnccl-net.so on the loader's path, not ncclscope's own file) is installed, the chain wraps
//    that one: naming ncclscope in NCCL_NET_PLUGIN stops NCCL from loading it, and the cluster's own transport
//    must keep the job's data (one it cannot wrap, an older table, declines, saying so). Otherwise: on a host
//    with RDMA devices, usable or not, init declines, so that NCCL's own heavily tuned IB transport carries the
//    data until ours is measured on real NICs (an RDMA job is never moved onto our TCP silently); elsewhere
//    TCP. NCCL_IB_DISABLE=1 switches the verbs entry off, so `auto` takes TCP.
// Thread-safe: the tables are immutable; probes are reentrant.
#ifndef NCCLSCOPE_NET_API_TRANSPORT_REGISTRY_H_
#define NCCLSCOPE_NET_API_TRANSPORT_REGISTRY_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "net/net_types.h"
#include "net/transport.h"

namespace ncclscope::net {

// What the user's environment says about the transports (read once per init).
struct ChoiceInputs {
  bool ib_disabled = false;  // NCCL_IB_DISABLE
};

// What `auto` does with an entry.
enum class AutoRule {
  kSkip,              // only when named
  kTake,              // choose it
  kDeclineIfPresent,  // if its devices are present, decline (NCCL's own transport is better there)
  kTakeIfPresent,     // choose it if its devices are present (the wrapped plugin: when one is named)
};

struct TransportEntry {
  const char* name;     // the NCCLSCOPE_TRANSPORT value
  const char* devices;  // what it carries data over, for messages: "RDMA device"
  Transport& (*get)();  // the process's instance, created at first use
  TransportProbe (*probe)();  // opens what it must to count usable devices (a named transport)
  // Device names seen, opening nothing; read only for k*IfPresent (nullptr otherwise).
  std::vector<std::string> (*present)();
  // Why the user's environment switches it off ("NCCL_IB_DISABLE=1"), or nullptr.
  const char* (*disabled)(const ChoiceInputs&);
  AutoRule in_auto;
  // kTakeIfPresent only. What `auto` says when present() finds nothing (nullptr: nothing), and a check of what
  // it found (nullptr: none): a failure is returned as it is (Declined: NCCL moves on, and the line says why).
  const char* absent = nullptr;
  Status (*wrappable)() = nullptr;
};

// A table of transports, in the order `auto` considers them.
using TransportTable = std::vector<TransportEntry>;

// ncclscope's transports.
const TransportTable& BuiltinTransports();

struct TransportChoice {
  const TransportEntry* entry = nullptr;  // points into the table the choice was made from
  std::string reason;                     // for the plugin's init log line
};

// `requested` is "auto" or an entry's name. A failure says why and what the user can do instead; NCCL
// then moves on to its own transports. Declining (`auto` on an RDMA host) is StatusCode::kDeclined.
Result<TransportChoice> ChooseTransport(const TransportTable& table, std::string_view requested,
                                        const ChoiceInputs& inputs);
// The same over BuiltinTransports().
Result<TransportChoice> ChooseTransport(std::string_view requested, bool ib_disabled);

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_API_TRANSPORT_REGISTRY_H_
