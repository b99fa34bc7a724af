// Bounds ncclscope_comm_p2p_started_total{peer} (detailed level): an all-to-all over N ranks would otherwise
// give every rank 2N series. Per communicator (hash and rank) and direction at most K peers are named
// (NCCLSCOPE_METRICS_P2P_PEERS) and the rest are summed as peer="other", as per-tag metrics fold late tags.
// The K are the busiest peers when the slots are filled, and are kept once chosen: a peer that moved between
// "other" and a series of its own would make both counters drop, which rate() reads as resets. So every
// series of the family only grows. Thread-safe: one mutex, taken at scrape time only.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_P2P_PEER_FOLD_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_P2P_PEER_FOLD_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/snapshot.h"

namespace ncclscope {

// One series of the family: a peer's rank in the communicator (decimal) or "other".
struct FoldedPeer {
  std::string peer;
  bool send = false;
  uint64_t started = 0;
};

class P2pPeerFold {
 public:
  // The series of one communicator's `peers`: per direction at most `k` named peers (lowest peer first),
  // then "other" when any peer is folded. `k` is read at a communicator's first fold and kept for it.
  std::vector<FoldedPeer> Fold(uint64_t comm_hash, int rank, const std::vector<PeerProgress>& peers, size_t k);

  // Forgets the communicators not in `keep` (hash, rank): those neither live nor retired any more.
  void Retain(const std::set<std::pair<uint64_t, int>>& keep);

  size_t TrackedForTest();

 private:
  struct Chosen {
    size_t k = 0;
    std::set<int> peers;
  };
  absl::Mutex mu_;
  std::map<std::tuple<uint64_t, int, bool>, Chosen> chosen_ ABSL_GUARDED_BY(mu_);
};

// The exporters' one instance (the HTTP endpoint and the textfile writer see the same choice).
P2pPeerFold& SharedP2pPeerFold();

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_P2P_PEER_FOLD_H_
