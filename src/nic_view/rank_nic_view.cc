#include "nic_view/rank_nic_view.h"

#include <algorithm>
#include <chrono>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/tsan_lock.h"
#include "host_nics/process_tcp.h"

namespace ncclscope {
namespace {

constexpr std::chrono::seconds kWalkReuse{1};

struct LastWalk {
  std::chrono::steady_clock::time_point at;
  std::vector<NicTcpRetransmits> found;
};

ABSL_CONST_INIT absl::Mutex walk_mu(absl::kConstInit);
LastWalk* last_walk ABSL_GUARDED_BY(walk_mu) = nullptr;  // never freed: scrapes and dumps run until exit

std::vector<NicTcpRetransmits> OtherTcpRetransmitsReused() {
  AnnotatedLock lock(&walk_mu);
  const auto now = std::chrono::steady_clock::now();
  if (last_walk == nullptr || now - last_walk->at >= kWalkReuse) {
    if (last_walk == nullptr) last_walk = new LastWalk();
    last_walk->found = OtherTcpRetransmits(RegisteredTcpFds());
    last_walk->at = now;
  }
  return last_walk->found;
}

}  // namespace

RankNics RankNicsOf(const NetStatsSnapshot& net) {
  const CarriedNics carried = CarriedNicsOf(net);
  return CurrentRankNics(carried.names, carried.nccl_ib_devices);
}

std::vector<std::string> NetdevsOf(const RankNics& nics) {
  std::vector<std::string> out;
  for (const RankNic& n : nics.nics) {
    if (!n.netdev.empty() && std::find(out.begin(), out.end(), n.netdev) == out.end()) out.push_back(n.netdev);
  }
  return out;
}

std::map<std::string, uint64_t> TcpRetransmitsByNic(const std::vector<NicTcpInfo>& ours) {
  std::map<std::string, uint64_t> by_nic;
  for (const NicTcpRetransmits& o : OtherTcpRetransmitsReused()) by_nic[o.nic] += o.retransmits;
  for (const NicTcpInfo& t : ours) by_nic[t.nic] += t.retransmits;
  return by_nic;
}

}  // namespace ncclscope
