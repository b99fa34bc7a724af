#include "host_nics/nic_deltas.h"

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/params.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

ABSL_CONST_INIT absl::Mutex mu(absl::kConstInit);
bool have_baseline ABSL_GUARDED_BY(mu) = false;
uint64_t baseline_ns ABSL_GUARDED_BY(mu) = 0;
std::vector<NicEventCounts>* baseline ABSL_GUARDED_BY(mu) = nullptr;  // never freed: dumps run at exit
uint64_t last_read_ns ABSL_GUARDED_BY(mu) = 0;
HostNicDeltas* last ABSL_GUARDED_BY(mu) = nullptr;

constexpr uint64_t kReuseNs = 1000000000;

uint64_t Since(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }
bool Off() { return Params().Str(ParamId::kHostNics) == "off"; }

}  // namespace

std::vector<NicEventCounts> NicEventCountsOf(const std::vector<RdmaPort>& ports) {
  std::vector<NicEventCounts> out;
  for (const RdmaPort& p : ports) {
    NicEventCounts n;
    n.nic = p.device;
    n.port = p.port;
    for (const RdmaCounter& c : p.counters) {
      if (c.kind == RdmaCounterKind::kRetransmit) n.retransmit += c.value;
      if (c.kind == RdmaCounterKind::kCongestion) n.congestion += c.value;
      if (c.kind == RdmaCounterKind::kError) n.error += c.value;
    }
    out.push_back(std::move(n));
  }
  return out;
}

void RecordHostNicBaseline() {
  AnnotatedLock lock(&mu);
  if (have_baseline) return;
  baseline = new std::vector<NicEventCounts>(Off() ? std::vector<NicEventCounts>()
                                                   : NicEventCountsOf(ReadRdmaPorts("/sys")));
  baseline_ns = MonotonicNs();
  have_baseline = true;
}

bool HostNicDeltasSinceBaseline(HostNicDeltas* out) {
  AnnotatedLock lock(&mu);
  if (!have_baseline) return false;
  const uint64_t now = MonotonicNs();
  if (last == nullptr || Since(now, last_read_ns) >= kReuseNs) {
    HostNicDeltas d;
    d.seconds = static_cast<double>(Since(now, baseline_ns)) / 1e9;
    for (const NicEventCounts& n : Off() ? std::vector<NicEventCounts>() : NicEventCountsOf(ReadRdmaPorts("/sys"))) {
      for (const NicEventCounts& b : *baseline) {
        if (b.nic != n.nic || b.port != n.port) continue;
        d.rdma.push_back({n.nic, n.port, Since(n.retransmit, b.retransmit), Since(n.congestion, b.congestion),
                          Since(n.error, b.error)});
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
