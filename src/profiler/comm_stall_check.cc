// The stall check the stall watch runs on every live communicator, and where a stalled operation waits.
#include <algorithm>
#include <optional>

#include "common/clock.h"
#include "common/log.h"
#include "core/net_links.h"
#include "profiler/comm_context.h"
#include "profiler/comm_read_op.h"

namespace ncclscope::profiler {

const Op* CommContext::OldestInFlight() const {
  const Op* oldest = nullptr;
  uint64_t oldest_start = UINT64_MAX;
  for (uint32_t i = 0; i < ops_pool_.size(); ++i) {
    const Op& op = ops_pool_.at(i);
    if (op.state.load(std::memory_order_acquire) != Op::kInFlight) continue;
    const uint64_t st = op.start_ns.Get();
    if (st != 0 && st < oldest_start) {
      oldest_start = st;
      oldest = &op;
    }
  }
  return oldest;
}

StallChange CommContext::CheckStall(uint64_t now_ns, uint64_t timeout_ns, CommSnapshot* out) {
  StallPolicy policy = cfg_.stall;
  policy.cap_ns = timeout_ns;
  const CommNetStillness still = NetStillnessOf(comm_hash(), now_ns);
  if (still.carried) stillness_.Sample(now_ns, still.quiet_ns, still.pending);
  const WaitSite stall = FindWait(now_ns, policy);
  if (!stall.present) {
    if (!stalled_.exchange(false, std::memory_order_relaxed)) return StallChange::kNone;
    // The stall dump stays on disk, and read alone it looks like a hang: a dump now shows the rank went on.
    Fill(out);
    NCCLSCOPE_WARN(subsys::kProfile,
                   "communicator 0x%016llx (%s) rank %d went on: the stall reported in %s seq %llu is over, %.1f s "
                   "after that operation began",
                   static_cast<unsigned long long>(comm_hash()), info_.has_name ? info_.name.c_str() : "-", rank(),
                   FuncName(stalled_func_), static_cast<unsigned long long>(stalled_seq_),
                   static_cast<double>(ElapsedNs(stalled_since_ns_, now_ns)) / 1e9);
    return StallChange::kRecovered;
  }
  // One report per stalled operation; a network-only stall is one report however many operations the host issues
  // behind it.
  const uint64_t key = stall.network_only ? UINT64_MAX - 1 : stall.arrival;
  if (stalled_arrival_.load(std::memory_order_relaxed) == key && stalled_.load(std::memory_order_relaxed)) {
    return StallChange::kNone;
  }
  stalled_arrival_.store(key, std::memory_order_relaxed);
  stalled_.store(true, std::memory_order_relaxed);
  stalled_func_ = stall.func;
  stalled_seq_ = stall.seq;
  stalled_since_ns_ = now_ns - std::min(now_ns, stall.age_ns);
  Fill(out);
  const WaitSite& w = out->wait;
  std::string where = w.present ? WaitClassName(w.cls) : "-";
  if (w.present && !w.peers.empty()) {
    const WaitPeer& p = w.peers.front();
    const std::string who = p.peer_global_rank >= 0 ? "global rank " + std::to_string(p.peer_global_rank)
                            : p.peer_rank >= 0      ? "rank " + std::to_string(p.peer_rank)
                                                    : "an unnamed peer";
    where += std::string(p.send ? ": sending to " : ": receiving from ") + who +
             (p.peer_host.empty() ? "" : " on " + p.peer_host) + (p.nic.empty() ? "" : " via " + p.nic) +
             (p.failed ? " (failed)" : "");
  }
  if (stall.network_only) {
    NCCLSCOPE_WARN(subsys::kProfile,
                   "communicator 0x%016llx (%s) rank %d stalled: its connections moved nothing for %.1f s with "
                   "requests pending (no KernelCh events: the latest operation issued is %s seq %llu); waits on %s",
                   static_cast<unsigned long long>(comm_hash()), info_.has_name ? info_.name.c_str() : "-",
                   rank(), static_cast<double>(stall.age_ns) / 1e9, FuncName(stall.func),
                   static_cast<unsigned long long>(stall.seq), where.c_str());
    return StallChange::kStalled;
  }
  NCCLSCOPE_WARN(subsys::kProfile,
                 "communicator 0x%016llx (%s) rank %d stalled: %s seq %llu in flight for %.1f s (threshold %.1f s); "
                 "waits on %s",
                 static_cast<unsigned long long>(comm_hash()), info_.has_name ? info_.name.c_str() : "-",
                 rank(), FuncName(stall.func), static_cast<unsigned long long>(stall.seq),
                 static_cast<double>(stall.age_ns) / 1e9, static_cast<double>(stall.threshold_ns) / 1e9,
                 where.c_str());
  return StallChange::kStalled;
}

uint64_t CommContext::StallThreshold(const OpRecord& op, uint64_t now_ns, const StallPolicy& policy,
                                     std::optional<CommNetLinks>* links) const {
  const uint64_t threshold = stall_history_.Threshold(op.func, op.bytes, policy);
  // The net links are read only in the rare case that could change the answer (past the floor, under a higher
  // threshold): this runs for every communicator at every check.
  if (threshold <= policy.floor_ns || op.start_ns == 0) return threshold;
  const uint64_t age = ElapsedNs(op.start_ns, now_ns);
  if (age < policy.floor_ns) return threshold;
  *links = NetLinksOf(comm_hash(), now_ns);
  const std::vector<PendingNetLink>& pending = (*links)->pending;
  // A failed connection: the operation can never complete.
  if (std::any_of(pending.begin(), pending.end(), [](const PendingNetLink& p) { return p.failed; })) {
    return policy.floor_ns;
  }
  // Connections still for longer than is normal for this communicator, with requests pending.
  if (!pending.empty() && stillness_.Warm()) {
    const uint64_t limit = stillness_.Limit(policy);
    if ((*links)->quiet_ns >= limit && limit < threshold) return std::max(policy.floor_ns, std::min(limit, age));
  }
  return threshold;
}

WaitSite CommContext::FindWait(uint64_t now_ns, const StallPolicy& policy) const {
  WaitSite w;
  const Op* oldest_op = OldestInFlight();
  if (oldest_op == nullptr) return (cfg_.event_mask & kMaskKernelCh) != 0 ? w : NetworkOnlyWait(now_ns, policy);
  const OpRecord oldest = ReadOp(*oldest_op, now_ns);
  if (oldest.start_ns == 0) return w;  // recycled since the scan
  const uint64_t age = ElapsedNs(oldest.start_ns, now_ns);
  std::optional<CommNetLinks> read_links;
  const uint64_t threshold = StallThreshold(oldest, now_ns, policy, &read_links);
  if (age < threshold) return w;
  w.present = true;
  w.kind = oldest.kind;
  w.func = oldest.func;
  w.seq = oldest.seq;
  w.arrival = oldest.arrival;
  w.age_ns = age;
  w.threshold_ns = threshold;
  const bool kernel_expected = (cfg_.event_mask & kMaskKernelCh) != 0 && oldest.channels > 0;
  if (kernel_expected && oldest.state == OpState::kEnqueued) {
    w.cls = WaitClass::kHost;
    return w;
  }
  CommNetLinks links = read_links ? std::move(*read_links) : NetLinksOf(comm_hash(), now_ns);
  if (!links.pending.empty()) {
    w.cls = WaitClass::kPeer;
    AddLinkPeers(&links, &w.peers);
  } else if (AddProxyPeers(*oldest_op, age, &w.peers)) {
    w.cls = WaitClass::kPeer;  // NCCL's own transports, with ProxyOp events on: whom the unfinished ones serve
  } else if (oldest.kind == OpKind::kP2p && oldest.peer_or_root >= 0) {
    // A send or receive names its peer: it waits on that rank even with nothing on the network (a send that
    // completed into the transport, a receive whose sender never posted).
    w.cls = WaitClass::kPeer;
    w.peers.push_back({-1, oldest.peer_or_root, "", "", oldest.is_send != 0, 0, age, false});
  } else {
    w.cls = links.carried || oldest.proxy_ops_started > 0 ? WaitClass::kKernel : WaitClass::kLaunched;
  }
  return w;
}

WaitSite CommContext::NetworkOnlyWait(uint64_t now_ns, const StallPolicy& policy) const {
  WaitSite w;
  CommNetLinks links = NetLinksOf(comm_hash(), now_ns);
  const bool failed = std::any_of(links.pending.begin(), links.pending.end(),
                                  [](const PendingNetLink& p) { return p.failed; });
  // Without KernelCh stillness is all there is: past what is normal for this communicator once learned, and
  // before that a sixth of the cap (5 s), as for an operation never seen completing.
  const uint64_t limit = stillness_.Warm() ? stillness_.Limit(policy) : std::max(policy.floor_ns, policy.cap_ns / 6);
  if (links.pending.empty() || (!failed && links.quiet_ns < limit)) return w;
  w.present = true;
  w.network_only = true;
  w.cls = WaitClass::kPeer;
  OpRecord latest;
  if (fr_.Newest(arrival_.load(std::memory_order_relaxed), &latest)) {
    w.kind = latest.kind;
    w.func = latest.func;
    w.seq = latest.seq;
    w.arrival = latest.arrival;
  }
  w.age_ns = links.quiet_ns;  // the stall began when the connections went still, as far as this rank can tell
  w.threshold_ns = failed ? policy.floor_ns : limit;
  AddLinkPeers(&links, &w.peers);
  return w;
}

CompletionSeen CommContext::Completion(uint64_t now_ns) const {
  if ((cfg_.event_mask & kMaskKernelCh) != 0) return CompletionSeen::kKernel;
  return NetLinksOf(comm_hash(), now_ns).carried ? CompletionSeen::kNetwork : CompletionSeen::kNone;
}

void CommContext::AddLinkPeers(CommNetLinks* links, std::vector<WaitPeer>* peers) {
  for (PendingNetLink& p : links->pending) {
    if (peers->size() == kMaxWaitPeers) break;
    peers->push_back({p.peer_global_rank, -1, std::move(p.peer_host), std::move(p.nic), p.dir == NetDir::kSend,
                      p.requests, p.waiting_ns, p.failed});
  }
}

bool CommContext::AddProxyPeers(const Op& op, uint64_t age_ns, std::vector<WaitPeer>* peers) {
  const int pending_send = op.proxy_send_started.Get() - op.proxy_send_done.Get();
  const int pending_recv = op.proxy_ops_started.Get() - op.proxy_ops_done.Get() - pending_send;
  const int pending[2] = {pending_send, pending_recv};
  for (int dir = 0; dir < 2; ++dir) {
    const int peer = op.proxy_peer[dir].Get();
    if (pending[dir] > 0 && peer >= 0) peers->push_back({-1, peer, "", "", dir == 0, pending[dir], age_ns, false});
  }
  return !peers->empty();
}

}  // namespace ncclscope::profiler
