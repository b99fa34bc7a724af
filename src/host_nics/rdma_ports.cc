#include "host_nics/rdma_ports.h"

#include <cstdlib>
#include <cstring>

#include "host_nics/sysfs_files.h"

namespace ncclscope {
namespace {

struct Known {
  const char* name;
  RdmaCounterKind kind;
  uint64_t scale;
};

using K = RdmaCounterKind;

// counters/: the IB performance counters (the same names on every IB and RoCE driver that has them).
constexpr Known kPortCounters[] = {
    {"port_xmit_data", K::kBytesSent, 4},  // counted in 4-byte words
    {"port_rcv_data", K::kBytesReceived, 4},
    {"port_xmit_packets", K::kPacketsSent, 1},
    {"port_rcv_packets", K::kPacketsReceived, 1},
    {"port_xmit_wait", K::kCongestion, 1},
    {"symbol_error", K::kError, 1},
    {"link_error_recovery", K::kError, 1},
    {"link_downed", K::kError, 1},
    {"port_rcv_errors", K::kError, 1},
    {"port_rcv_remote_physical_errors", K::kError, 1},
    {"port_rcv_switch_relay_errors", K::kError, 1},
    {"port_xmit_discards", K::kError, 1},
    {"port_xmit_constraint_errors", K::kError, 1},
    {"port_rcv_constraint_errors", K::kError, 1},
    {"local_link_integrity_errors", K::kError, 1},
    {"excessive_buffer_overrun_errors", K::kError, 1},
    {"VL15_dropped", K::kError, 1},
};

// hw_counters/: each driver's own names (mlx5, rxe, EFA, bnxt_re, irdma), one meaning each.
constexpr Known kHwCounters[] = {
    // EFA and rxe count bytes and packets here.
    {"tx_bytes", K::kBytesSent, 1},
    {"rx_bytes", K::kBytesReceived, 1},
    {"tx_pkts", K::kPacketsSent, 1},
    {"rx_pkts", K::kPacketsReceived, 1},
    {"sent_pkts", K::kPacketsSent, 1},
    {"rcvd_pkts", K::kPacketsReceived, 1},
    // Retransmission: the requester resent, or the responder saw a gap or a duplicate.
    {"out_of_sequence", K::kRetransmit, 1},
    {"packet_seq_err", K::kRetransmit, 1},
    {"local_ack_timeout_err", K::kRetransmit, 1},
    {"implied_nak_seq_err", K::kRetransmit, 1},
    {"duplicate_request", K::kRetransmit, 1},
    {"rnr_nak_retry_err", K::kRetransmit, 1},
    {"roce_adp_retrans", K::kRetransmit, 1},
    {"roce_adp_retrans_to", K::kRetransmit, 1},
    {"roce_slow_restart", K::kRetransmit, 1},
    {"out_of_seq_request", K::kRetransmit, 1},
    {"rcvd_seq_err", K::kRetransmit, 1},
    {"completer_retry_err", K::kRetransmit, 1},
    {"retry_exceeded_err", K::kRetransmit, 1},
    {"retry_rnr_exceeded_err", K::kRetransmit, 1},
    {"rcvd_rnr_err", K::kRetransmit, 1},
    {"send_rnr_err", K::kRetransmit, 1},
    {"retrans_pkts", K::kRetransmit, 1},
    {"retrans_timeout_events", K::kRetransmit, 1},
    {"seq_err_naks_rcvd", K::kRetransmit, 1},
    {"to_retransmits", K::kRetransmit, 1},
    {"dup_req", K::kRetransmit, 1},
    // Congestion control: ECN marks and the CNPs they cause.
    {"np_cnp_sent", K::kCongestion, 1},
    {"np_ecn_marked_roce_packets", K::kCongestion, 1},
    {"rp_cnp_handled", K::kCongestion, 1},
    {"rp_cnp_ignored", K::kCongestion, 1},
    {"rx_cnp_pkts", K::kCongestion, 1},
    {"tx_cnp_pkts", K::kCongestion, 1},
    {"rx_ecn_marked_pkts", K::kCongestion, 1},
    {"cnpSent", K::kCongestion, 1},
    {"cnpHandled", K::kCongestion, 1},
    {"RxECNMrkd", K::kCongestion, 1},
    // Errors: error completions, drops, unreachable peers.
    {"req_cqe_error", K::kError, 1},
    {"resp_cqe_error", K::kError, 1},
    {"req_remote_access_errors", K::kError, 1},
    {"req_remote_invalid_request", K::kError, 1},
    {"resp_local_length_error", K::kError, 1},
    {"resp_remote_access_errors", K::kError, 1},
    {"rx_icrc_encapsulated", K::kError, 1},
    {"out_of_buffer", K::kError, 1},
    {"rx_drops", K::kError, 1},
    {"unresponsive_remote_events", K::kError, 1},
    {"impaired_remote_conn_events", K::kError, 1},
    {"link_downed", K::kError, 1},
    {"send_err", K::kError, 1},
};

// Not counters: how often the driver refreshes its counters.
constexpr const char* kNotCounters[] = {"lifespan"};

template <size_t N>
const Known* Find(const Known (&table)[N], const std::string& name) {
  for (const Known& k : table) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

// "100 Gb/sec (4X EDR)" -> 12.5e9 bytes/s; 0 when unreadable.
double RateBytesPerSecond(const std::string& text) {
  char* end = nullptr;
  const double gbits = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || std::strncmp(end, " Gb/sec", 7) != 0) return 0;
  return gbits * 1e9 / 8;
}

// The netdev under a port: RoCE names it per GID (gid_attrs/ndevs/0); otherwise the device's own (EFA, IPoIB).
std::string PortNetdev(const std::string& dev_dir, const std::string& port_dir) {
  if (auto ndev = ReadSysfsLine(port_dir + "/gid_attrs/ndevs/0"); ndev && !ndev->empty()) return *ndev;
  const std::vector<std::string> nets = ListSysfsDir(dev_dir + "/device/net");
  return nets.empty() ? "" : nets.front();
}

void ReadCounters(const std::string& dir, bool hw, std::vector<RdmaCounter>* out) {
  for (const std::string& name : ListSysfsDir(dir)) {
    const RdmaCounterMeaning meaning = ClassifyRdmaCounter(name, hw);
    if (meaning.skip) continue;
    if (const std::optional<uint64_t> v = ReadSysfsCounter(dir + "/" + name)) {
      out->push_back({name, meaning.kind, *v * meaning.scale});
    }
  }
}

}  // namespace

const char* RdmaCounterKindName(RdmaCounterKind kind) {
  switch (kind) {
    case K::kBytesSent: return "bytes_sent";
    case K::kBytesReceived: return "bytes_received";
    case K::kPacketsSent: return "packets_sent";
    case K::kPacketsReceived: return "packets_received";
    case K::kRetransmit: return "retransmit";
    case K::kCongestion: return "congestion";
    case K::kError: return "error";
    case K::kOther: return "other";
  }
  return "other";
}

RdmaCounterMeaning ClassifyRdmaCounter(const std::string& name, bool hw) {
  for (const char* skip : kNotCounters) {
    if (name == skip) return {K::kOther, 1, true};
  }
  const Known* k = hw ? Find(kHwCounters, name) : Find(kPortCounters, name);
  if (k == nullptr) return {};
  return {k->kind, k->scale, false};
}

std::optional<uint64_t> SumOfKind(const RdmaPort& port, RdmaCounterKind kind) {
  std::optional<uint64_t> sum;
  for (const RdmaCounter& c : port.counters) {
    if (c.kind == kind) sum = sum.value_or(0) + c.value;
  }
  return sum;
}

std::vector<RdmaPort> ReadRdmaPorts(const std::string& sysfs, bool counters) {
  std::vector<RdmaPort> ports;
  const std::string root = sysfs + "/class/infiniband";
  for (const std::string& device : ListSysfsDir(root)) {
    const std::string dev_dir = root + "/" + device;
    // A soft-RoCE device's "device" is its netdev's parent, not a PCI function of its own.
    const SysfsDeviceLocation location = ReadDeviceLocation(dev_dir + "/device");
    for (const std::string& port_name : ListSysfsDir(dev_dir + "/ports")) {
      const std::string port_dir = dev_dir + "/ports/" + port_name;
      RdmaPort p;
      p.device = device;
      p.port = std::atoi(port_name.c_str());
      p.netdev = PortNetdev(dev_dir, port_dir);
      p.link_layer = ReadSysfsLine(port_dir + "/link_layer").value_or("");
      p.active = ReadSysfsLine(port_dir + "/state").value_or("").find("ACTIVE") != std::string::npos;
      p.rate_bytes_per_s = RateBytesPerSecond(ReadSysfsLine(port_dir + "/rate").value_or(""));
      p.location = location;
      if (counters) {
        ReadCounters(port_dir + "/counters", false, &p.counters);
        ReadCounters(port_dir + "/hw_counters", true, &p.counters);
      }
      ports.push_back(std::move(p));
    }
  }
  return ports;
}

std::optional<uint64_t> LinkDowns(const RdmaPort& port) {
  for (const RdmaCounter& c : port.counters) {
    if (c.name == "link_downed") return c.value;
  }
  return std::nullopt;
}

}  // namespace ncclscope
