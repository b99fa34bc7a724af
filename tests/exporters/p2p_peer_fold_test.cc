// ncclscope_comm_p2p_started_total{peer} stays bounded: a communicator with 1,000 peers exports at most K named
// peers and one peer="other" per direction (K = NCCLSCOPE_METRICS_P2P_PEERS, 16 by default), with every
// operation still counted, and no series of the family ever goes down as peers come and grow (a peer never
// moves between "other" and a series of its own). ctest runs each TEST in its own process, so each sets the
// environment before its first Params().
#include "exporters/prometheus/p2p_peer_fold.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/params.h"
#include "core/registry.h"
#include "exporters/prometheus/metric_families.h"

namespace ncclscope {
namespace {

constexpr uint64_t kHash = 0x5ca1ab1e00c0ffee;

// A communicator of `nranks` ranks whose rank 0 sent to and received from every other rank: peer p carries
// p + 1 sends and 2p + 1 receives, so the busiest peers are the highest ones.
class FakeComm final : public CommSource {
 public:
  FakeComm(uint64_t hash, int nranks) : hash_(hash), nranks_(nranks) {}
  void Fill(CommSnapshot* out, SnapshotScope) const override {
    out->comm_hash = hash_;
    out->rank = 0;
    out->nranks = nranks_;
    out->abi = "v6";
    for (int p = 1; p < nranks_; ++p) {
      out->p2p_peers.push_back({p, true, static_cast<uint64_t>(p + 1)});
      out->p2p_peers.push_back({p, false, static_cast<uint64_t>(2 * p + 1)});
    }
  }

 private:
  uint64_t hash_;
  int nranks_;
};

struct Series {
  std::map<std::string, double> send, recv;  // by peer
};

Series Scrape() {
  Series s;
  for (const prometheus::MetricFamily& f : CollectMetricFamilies()) {
    if (f.name != "ncclscope_comm_p2p_started_total") continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      std::map<std::string, std::string> l;
      for (const auto& label : m.label) l[label.name] = label.value;
      (l["direction"] == "send" ? s.send : s.recv)[l["peer"]] = m.counter.value;
    }
  }
  return s;
}

double Sum(const std::map<std::string, double>& m) {
  double n = 0;
  for (const auto& [peer, v] : m) n += v;
  return n;
}

void ExpectFolded(const std::map<std::string, double>& series, size_t k, double total, int busiest_first) {
  EXPECT_EQ(series.size(), k + 1);
  EXPECT_TRUE(series.contains("other"));
  EXPECT_EQ(Sum(series), total) << "every operation counted once";
  for (int p = busiest_first; p < busiest_first + static_cast<int>(k); ++p) {
    EXPECT_TRUE(series.contains(std::to_string(p))) << "peer " << p << " is among the busiest";
  }
}

TEST(P2pPeerFold, AThousandPeerCommunicatorExportsAtMostKPlusOneSeriesPerDirection) {
  setenv("NCCLSCOPE_METRICS_LEVEL", "detailed", 1);
  unsetenv("NCCLSCOPE_METRICS_P2P_PEERS");
  ReloadParams();
  ASSERT_EQ(Params().Int(ParamId::kMetricsP2pPeers), 16);
  FakeComm comm(kHash, 1001);
  CommRegistry::Instance().Add(&comm);
  const Series s = Scrape();
  CommRegistry::Instance().Remove(&comm);
  // sends: sum of p + 1 over p = 1..1000; receives: sum of 2p + 1.
  ExpectFolded(s.send, 16, 1000.0 * 1001 / 2 + 1000, 985);
  ExpectFolded(s.recv, 16, 1000.0 * 1001 + 1000, 985);
  EXPECT_EQ(s.send.at("1000"), 1001);
}

TEST(P2pPeerFold, TheParameterSetsK) {
  setenv("NCCLSCOPE_METRICS_LEVEL", "detailed", 1);
  setenv("NCCLSCOPE_METRICS_P2P_PEERS", "4", 1);
  ReloadParams();
  FakeComm comm(kHash + 1, 1001);
  CommRegistry::Instance().Add(&comm);
  const Series s = Scrape();
  CommRegistry::Instance().Remove(&comm);
  ExpectFolded(s.send, 4, 1000.0 * 1001 / 2 + 1000, 997);
  ExpectFolded(s.recv, 4, 1000.0 * 1001 + 1000, 997);
}

TEST(P2pPeerFold, FewPeersAreAllNamedAndNothingIsFolded) {
  P2pPeerFold fold;
  std::vector<FoldedPeer> out = fold.Fold(1, 0, {{3, true, 5}, {1, true, 7}, {2, false, 1}}, 16);
  ASSERT_EQ(out.size(), 3u);
  for (const FoldedPeer& p : out) EXPECT_NE(p.peer, "other");
}

// Peers appear and grow at random over many scrapes: no series ever decreases (a counter reset to rate()),
// the totals are kept, and each direction stays within K + 1 series.
TEST(P2pPeerFold, NoSeriesEverDecreasesAsPeersComeAndGrow) {
  constexpr size_t kK = 4;
  P2pPeerFold fold;
  std::mt19937 rng(7);
  std::map<std::pair<int, bool>, uint64_t> counts;
  std::map<std::pair<std::string, bool>, uint64_t> last;
  std::set<std::pair<std::string, bool>> named, folded;
  for (int scrape = 0; scrape < 200; ++scrape) {
    for (int i = 0; i < 5; ++i) {
      const int peer = static_cast<int>(rng() % 64);
      counts[{peer, (rng() & 1) != 0}] += 1 + rng() % (scrape < 20 ? 3 : 50);
    }
    std::vector<PeerProgress> peers;
    uint64_t total = 0;
    for (const auto& [key, n] : counts) {
      peers.push_back({key.first, key.second, n});
      total += n;
    }
    uint64_t seen = 0;
    std::map<bool, size_t> per_direction;
    std::set<std::pair<std::string, bool>> shown;
    for (const FoldedPeer& p : fold.Fold(kHash, 3, peers, kK)) {
      const uint64_t before = last[{p.peer, p.send}];
      EXPECT_GE(p.started, before) << "peer " << p.peer << (p.send ? " send" : " recv") << " at scrape " << scrape;
      last[{p.peer, p.send}] = p.started;
      shown.insert({p.peer, p.send});
      seen += p.started;
      ++per_direction[p.send];
    }
    EXPECT_EQ(seen, total);
    for (const auto& [send, n] : per_direction) EXPECT_LE(n, kK + 1);
    // A named peer stays named; a peer with operations that is not named is folded for good.
    for (const auto& [key, n] : counts) {
      const std::pair<std::string, bool> series{std::to_string(key.first), key.second};
      if (shown.contains(series)) {
        EXPECT_FALSE(folded.contains(series)) << "peer " << key.first << " left \"other\" at scrape " << scrape;
        named.insert(series);
      } else {
        EXPECT_FALSE(named.contains(series)) << "peer " << key.first << " lost its series at scrape " << scrape;
        folded.insert(series);
      }
    }
  }
  EXPECT_FALSE(folded.empty());
}

TEST(P2pPeerFold, CommunicatorsGoneAreForgotten) {
  P2pPeerFold fold;
  fold.Fold(1, 0, {{1, true, 1}}, 2);
  fold.Fold(2, 0, {{1, true, 1}, {1, false, 1}}, 2);
  EXPECT_EQ(fold.TrackedForTest(), 3u);
  fold.Retain({{2, 0}});
  EXPECT_EQ(fold.TrackedForTest(), 2u);
  fold.Retain({});
  EXPECT_EQ(fold.TrackedForTest(), 0u);
}

}  // namespace
}  // namespace ncclscope
