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

bool CommContext::CheckStall(uint64_t now_ns, uint64_t timeout_ns, CommSnapshot* out) {
  const Op* oldest = OldestInFlight();
  StallPolicy policy = cfg_.stall;
  policy.cap_ns = timeout_ns;
  const OpRecord r = oldest != nullptr ? ReadOp(*oldest, now_ns) : OpRecord{};
  const uint64_t oldest_start = r.start_ns;
  std::optional<CommNetLinks> links;
  const uint64_t threshold = oldest != nullptr ? StallThreshold(r, now_ns, policy, &links) : 0;
  if (oldest == nullptr || oldest_start == 0 || now_ns < oldest_start || now_ns - oldest_start < threshold) {
    stalled_.store(false, std::memory_order_relaxed);
    return false;
  }
  if (stalled_arrival_.load(std::memory_order_relaxed) == r.arrival && stalled_.load(std::memory_order_relaxed)) {
    return false;  // already reported this operation
  }
  stalled_arrival_.store(r.arrival, std::memory_order_relaxed);
  stalled_.store(true, std::memory_order_relaxed);
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
  NCCLSCOPE_WARN(subsys::kProfile,
                 "communicator 0x%016llx (%s) rank %d stalled: %s seq %llu in flight for %.1f s (threshold %.1f s); "
                 "waits on %s",
                 static_cast<unsigned long long>(comm_hash()), info_.has_name ? info_.name.c_str() : "-",
                 rank(), FuncName(r.func), static_cast<unsigned long long>(r.seq),
                 static_cast<double>(now_ns - oldest_start) / 1e9, static_cast<double>(threshold) / 1e9, where.c_str());
  return true;
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
  // Requests wait and none of the communicator's connections has moved for the floor: a peer stopped, whatever
  // the size. A healthy large operation completes chunks all along, so its history (seconds at 4 MiB on a slow
  // fabric) need not be waited out. Stalled from the age at which the stillness reached the floor.
  if (!pending.empty() && (*links)->quiet_ns >= policy.floor_ns) {
    return std::min(threshold, std::max(policy.floor_ns, age - (*links)->quiet_ns + policy.floor_ns));
  }
  return threshold;
}

WaitSite CommContext::FindWait(uint64_t now_ns, const StallPolicy& policy) const {
  WaitSite w;
  const Op* oldest_op = OldestInFlight();
  if (oldest_op == nullptr) return w;
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
    for (PendingNetLink& p : links.pending) {
      if (w.peers.size() == kMaxWaitPeers) break;
      w.peers.push_back({p.peer_global_rank, -1, std::move(p.peer_host), std::move(p.nic), p.dir == NetDir::kSend,
                         p.requests, p.waiting_ns, p.failed});
    }
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
