#include "host_nics/nic_deltas.h"

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/params.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

ABSL_CONST_INIT absl::Mutex mu(absl::kConstInit);
uint64_t baseline_ns ABSL_GUARDED_BY(mu) = 0;
struct Counts {
  std::vector<NicEventCounts> rdma;
  std::vector<std::pair<std::string, uint64_t>> carrier_changes;
};
// Null until RecordHostNicBaseline; never freed: dumps run at exit.
Counts* baseline ABSL_GUARDED_BY(mu) = nullptr;
uint64_t last_read_ns ABSL_GUARDED_BY(mu) = 0;
HostNicDeltas* last ABSL_GUARDED_BY(mu) = nullptr;

constexpr uint64_t kReuseNs = 1000000000;

uint64_t Since(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }
bool Off() { return Params().Str(ParamId::kHostNics) == "off"; }

Counts ReadCounts() {
  if (Off()) return {};
  return {NicEventCountsOf(ReadRdmaPorts("/sys")), ReadCarrierChanges("/sys")};
}

}  // namespace

std::vector<NicEventCounts> NicEventCountsOf(const std::vector<RdmaPort>& ports) {
  std::vector<NicEventCounts> out;
  for (const RdmaPort& p : ports) {
    NicEventCounts n;
    n.nic = p.device;
    n.port = p.port;
    n.retransmit = SumOfKind(p, RdmaCounterKind::kRetransmit).value_or(0);
    n.congestion = SumOfKind(p, RdmaCounterKind::kCongestion).value_or(0);
    n.error = SumOfKind(p, RdmaCounterKind::kError).value_or(0);
    n.link_downs = LinkDowns(p).value_or(0);
    out.push_back(std::move(n));
  }
  return out;
}

void RecordHostNicBaseline() {
  AnnotatedLock lock(&mu);
  if (baseline != nullptr) return;
  baseline = new Counts(ReadCounts());
  baseline_ns = MonotonicNs();
}

bool HostNicDeltasSinceBaseline(HostNicDeltas* out) {
  AnnotatedLock lock(&mu);
  if (baseline == nullptr) return false;
  const uint64_t now = MonotonicNs();
  if (last == nullptr || Since(now, last_read_ns) >= kReuseNs) {
    HostNicDeltas d;
    d.seconds = static_cast<double>(Since(now, baseline_ns)) / 1e9;
    const Counts now_counts = ReadCounts();
    for (const NicEventCounts& n : now_counts.rdma) {
      for (const NicEventCounts& b : baseline->rdma) {
        if (b.nic != n.nic || b.port != n.port) continue;
        d.rdma.push_back({n.nic, n.port, Since(n.retransmit, b.retransmit), Since(n.congestion, b.congestion),
                          Since(n.error, b.error), Since(n.link_downs, b.link_downs)});
      }
    }
    for (const auto& [name, changes] : now_counts.carrier_changes) {
      for (const auto& [base_name, base_changes] : baseline->carrier_changes) {
        if (base_name == name) d.carrier_changes.emplace_back(name, Since(changes, base_changes));
      }
    }
    if (last == nullptr) last = new HostNicDeltas();
    *last = std::move(d);
    last_read_ns = now;
  }
  *out = *last;
  return true;
}

}  // namespace ncclscope
