#include "exporters/prometheus/p2p_peer_fold.h"

#include <algorithm>

#include "common/tsan_lock.h"

namespace ncclscope {

std::vector<FoldedPeer> P2pPeerFold::Fold(uint64_t comm_hash, int rank, const std::vector<PeerProgress>& peers,
                                          size_t k) {
  std::vector<FoldedPeer> out;
  AnnotatedLock lock(&mu_);
  for (const bool send : {false, true}) {
    std::vector<const PeerProgress*> mine;
    for (const PeerProgress& p : peers) {
      if (p.send == send && p.started != 0) mine.push_back(&p);
    }
    if (mine.empty()) continue;
    Chosen& chosen = chosen_[{comm_hash, rank, send}];
    if (chosen.k == 0) chosen.k = std::max<size_t>(k, 1);
    if (chosen.peers.size() < chosen.k) {
      // Free slots: the busiest peers not chosen yet, the lower peer first among equals. Nothing was folded
      // before (a fold happens only once every slot is taken), so no "other" shrinks here.
      std::vector<const PeerProgress*> candidates;
      for (const PeerProgress* p : mine) {
        if (!chosen.peers.contains(p->peer)) candidates.push_back(p);
      }
      std::sort(candidates.begin(), candidates.end(), [](const PeerProgress* a, const PeerProgress* b) {
        return a->started != b->started ? a->started > b->started : a->peer < b->peer;
      });
      for (const PeerProgress* p : candidates) {
        if (chosen.peers.size() >= chosen.k) break;
        chosen.peers.insert(p->peer);
      }
    }
    std::sort(mine.begin(), mine.end(), [](const PeerProgress* a, const PeerProgress* b) { return a->peer < b->peer; });
    uint64_t other = 0;
    bool folded = false;
    for (const PeerProgress* p : mine) {
      if (chosen.peers.contains(p->peer)) {
        out.push_back({std::to_string(p->peer), send, p->started});
      } else {
        other += p->started;
        folded = true;
      }
    }
    if (folded) out.push_back({"other", send, other});
  }
  return out;
}

void P2pPeerFold::Retain(const std::set<std::pair<uint64_t, int>>& keep) {
  AnnotatedLock lock(&mu_);
  std::erase_if(chosen_, [&](const auto& entry) {
    return !keep.contains({std::get<0>(entry.first), std::get<1>(entry.first)});
  });
}

size_t P2pPeerFold::TrackedForTest() {
  AnnotatedLock lock(&mu_);
  return chosen_.size();
}

P2pPeerFold& SharedP2pPeerFold() {
  static auto* fold = new P2pPeerFold();  // -z nodelete: never destroyed, as the registry
  return *fold;
}

}  // namespace ncclscope
