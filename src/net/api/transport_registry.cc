#include "net/api/transport_registry.h"

#include "net/chain/chain_transport.h"
#include "net/tcp/tcp_transport.h"
#include "net/verbs/verbs_probe.h"
#include "net/verbs/verbs_transport.h"

namespace ncclscope::net {
namespace {

Transport& Chain() { return chain::GetChainTransport(); }
Transport& Tcp() { return tcp::GetTcpTransport(); }
Transport& Verbs() { return verbs::GetVerbsTransport(); }

const char* NeverDisabled(const ChoiceInputs&) { return nullptr; }
const char* IbDisabled(const ChoiceInputs& in) { return in.ib_disabled ? "NCCL_IB_DISABLE=1" : nullptr; }

// In the order `auto` considers them.
const TransportTable kBuiltin = {
    {.name = "chain",
     .devices = "wrapped net plugin",
     .get = &Chain,
     .probe = &chain::ProbeChain,
     .present = &chain::ConfiguredChain,
     .disabled = &NeverDisabled,
     .in_auto = AutoRule::kTakeIfPresent,
     .absent = "no net plugin to wrap (NCCLSCOPE_NET_CHAIN unset, no libnccl-net.so to wrap)",
     .wrappable = &chain::WrappableChain},
    {.name = "ib",
     .devices = "RDMA device",
     .get = &Verbs,
     .probe = &verbs::ProbeVerbs,
     .present = &verbs::ListVerbsDeviceNames,
     .disabled = &IbDisabled,
     .in_auto = AutoRule::kDeclineIfPresent},
    {.name = "tcp",
     .devices = "network interface",
     .get = &Tcp,
     .probe = &tcp::ProbeTcp,
     .present = nullptr,  // `auto` takes TCP without looking
     .disabled = &NeverDisabled,
     .in_auto = AutoRule::kTake},
};

// Said when `auto` declines for an entry's devices: why, and what the user can set instead.
constexpr char kDeclining[] =
    "declining, so that NCCL's own IB transport carries the data (ncclscope's verbs transport is opt-in until "
    "it is measured on real NICs: NCCLSCOPE_TRANSPORT=ib; NCCLSCOPE_TRANSPORT=tcp forces TCP)";

std::string Seen(const std::vector<std::string>& names, const char* devices) {
  std::string seen = std::to_string(names.size()) + " " + devices + "(s)";
  for (size_t i = 0; i < names.size(); ++i) seen += (i ? ", " : ": ") + names[i];
  return seen;
}

// What a user whose named transport cannot run could set instead: the transport `auto` would take.
std::string Instead(const TransportTable& table, const TransportEntry& failed) {
  for (const TransportEntry& e : table) {
    if (&e != &failed && e.in_auto == AutoRule::kTake) return std::string(" or set NCCLSCOPE_TRANSPORT=") + e.name;
  }
  return "";
}

Result<TransportChoice> ChooseNamed(const TransportTable& table, const TransportEntry& e,
                                    const ChoiceInputs& inputs) {
  const std::string asked = std::string("NCCLSCOPE_TRANSPORT=") + e.name;
  if (const char* off = e.disabled(inputs)) {
    return InvalidUsage(asked + ", but " + off + " switches it off; unset one of them");
  }
  TransportProbe p = e.probe();
  if (p.usable == 0) {
    return SystemError(asked + ", but no " + e.devices + " is usable (" + p.detail +
                       "); unset it (NCCL then uses its own transports)" + Instead(table, e));
  }
  return TransportChoice{&e, asked + ": " + p.detail};
}

Result<TransportChoice> ChooseAuto(const TransportTable& table, const ChoiceInputs& inputs) {
  std::string passed;  // why the entries before the chosen one were passed over
  for (const TransportEntry& e : table) {
    if (const char* off = e.disabled(inputs)) {
      passed += std::string(passed.empty() ? "" : ", ") + off;
      continue;
    }
    switch (e.in_auto) {
      case AutoRule::kSkip:
        continue;
      case AutoRule::kTake:
        return TransportChoice{&e, "auto: " + (passed.empty() ? "nothing else to use" : passed)};
      case AutoRule::kDeclineIfPresent: {
        // Presence alone decides: no need to load a driver library and open every device at each init.
        const std::vector<std::string> names = e.present();
        if (!names.empty()) return Declined(Seen(names, e.devices) + ": " + kDeclining);
        passed += std::string(passed.empty() ? "" : ", ") + "no " + e.devices + " found";
        continue;
      }
      case AutoRule::kTakeIfPresent: {
        const std::vector<std::string> names = e.present();
        if (names.empty()) {
          if (e.absent != nullptr) passed += std::string(passed.empty() ? "" : ", ") + e.absent;
          continue;
        }
        if (e.wrappable != nullptr) NCCLSCOPE_RETURN_IF_ERROR(e.wrappable());
        return TransportChoice{&e, "auto: " + names.front()};
      }
    }
  }
  return SystemError("NCCLSCOPE_TRANSPORT=auto found no transport to use" +
                     (passed.empty() ? std::string() : " (" + passed + ")"));
}

}  // namespace

const TransportTable& BuiltinTransports() { return kBuiltin; }

Result<TransportChoice> ChooseTransport(const TransportTable& table, std::string_view requested,
                                        const ChoiceInputs& inputs) {
  if (requested == "auto") return ChooseAuto(table, inputs);
  std::string known = "auto";
  for (const TransportEntry& e : table) {
    if (requested == e.name) return ChooseNamed(table, e, inputs);
    known += std::string(", ") + e.name;
  }
  return InvalidUsage("NCCLSCOPE_TRANSPORT=" + std::string(requested) + " names no transport (" + known + ")");
}

Result<TransportChoice> ChooseTransport(std::string_view requested, bool ib_disabled) {
  return ChooseTransport(BuiltinTransports(), requested, ChoiceInputs{.ib_disabled = ib_disabled});
}

}  // namespace ncclscope::net
