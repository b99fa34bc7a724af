// What every transport's send and receive comms count and report, written once for all of them:
//  - CommAccounting: the comm's counter blocks (its NIC's total and, for v11+, the communicator's),
//    connections open, requests in flight, bytes, messages and completion latency, and the first error
//    (kept, counted by kind and logged once per comm; later Test()s return it), and implausible completions
//    (counted each time, logged once per comm);
//  - NetEvents: NetPlugin profiler events through NCCL's callback (net v10+), with the descriptor and
//    plugin id the transport supplies.
// Construction, SetPeer and destruction run on NCCL's service thread; the rest on the progress thread and
// any transport helper threads at once: counters are relaxed atomics, the error slot is written once by
// CAS. No lock and no allocation after construction, except the comm's first failure, which is also put
// in the process's net-error log (core/net_errors.h: a lock and a copy, once per comm, off the data path).
#ifndef NCCLSCOPE_NET_COMM_ACCOUNTING_H_
#define NCCLSCOPE_NET_COMM_ACCOUNTING_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "core/net_links.h"
#include "core/net_stats.h"
#include "ncclscope/abi/common.h"
#include "net/net_types.h"
#include "net/peer_identity.h"

namespace ncclscope::net {

class ErrorSlot {
 public:
  // Keeps the first error; later ones are dropped (they are usually consequences of the first).
  bool Set(const Status& s) {
    int expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return false;
    code_ = s.code();
    snprintf(message_, sizeof(message_), "%s", s.message().c_str());
    state_.store(2, std::memory_order_release);
    return true;
  }
  bool failed() const { return state_.load(std::memory_order_acquire) == 2; }
  Status Get() const { return Status(code_, message_); }

 private:
  std::atomic<int> state_{0};
  StatusCode code_ = StatusCode::kOk;
  char message_[384] = {0};
};

class NetEvents {
 public:
  NetEvents(ncclscope_profiler_callback_t cb, int64_t plugin_id) : cb_(cb), plugin_id_(plugin_id) {}
  bool on() const { return cb_ != nullptr; }
  // Starts the event of one request buffer (NCCL's rules: the slot is cleared first, no phandle means no
  // event). NCCL keeps `descr` by pointer: it must live until Stop.
  void Start(void* phandle, void** event, void* descr) const {
    *event = nullptr;
    if (cb_ == nullptr || phandle == nullptr) return;
    cb_(event, NCCLSCOPE_NET_EVENT_START, phandle, plugin_id_, descr);
  }
  // Stops it when it was started (NCCL dereferences *event without a check).
  void Stop(void** event) const {
    if (cb_ == nullptr || *event == nullptr) return;
    cb_(event, NCCLSCOPE_NET_EVENT_STOP, nullptr, plugin_id_, nullptr);
    *event = nullptr;
  }

 private:
  ncclscope_profiler_callback_t cb_;
  int64_t plugin_id_;
};

// Puts one connection's failure in the process's net-error log (core/net_errors.h). For failures with no
// comm yet (a connect refused); CommAccounting::Fail calls it for the comms' first failures.
void RecordConnectionFailure(const std::string& nic, const NetContext* ctx, NetErrorKind kind, const Status& s,
                             const PeerInfo& peer);

class CommAccounting {
 public:
  // `transport` prefixes the logged error ("TCP: …"); `plugin_id` is the NetPlugin event id; `dir`
  // says which way this comm moves data (its NetLink, for what a stuck operation waits on).
  CommAccounting(const std::string& nic, const NetContext* ctx, const char* transport, int64_t plugin_id, NetDir dir);
  ~CommAccounting();
  CommAccounting(const CommAccounting&) = delete;
  CommAccounting& operator=(const CommAccounting&) = delete;

  // A request posted at `posted_ns` (MonotonicNs(), the latency's start).
  void Posted(uint64_t posted_ns) {
    link_.Posted(posted_ns);
    Apply([posted_ns](NetCounters& c) { c.Posted(posted_ns); });
  }
  // A request still pending when its comm closes.
  void Abandoned() {
    link_.Abandoned();
    Apply([](NetCounters& c) { c.in_flight.fetch_sub(1, std::memory_order_relaxed); });
  }
  // A request posted at `posted_ns` completed at `now_ns` (MonotonicNs()).
  void Sent(uint64_t bytes, uint64_t posted_ns, uint64_t now_ns) {
    const uint64_t latency_ns = ElapsedNs(posted_ns, now_ns);
    link_.Completed(now_ns);
    Apply([bytes, latency_ns, now_ns](NetCounters& c) {
      c.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
      c.messages_sent.fetch_add(1, std::memory_order_relaxed);
      c.Completed(latency_ns, now_ns);
    });
  }
  void Received(uint64_t bytes, uint64_t messages, uint64_t posted_ns, uint64_t now_ns) {
    const uint64_t latency_ns = ElapsedNs(posted_ns, now_ns);
    link_.Completed(now_ns);
    Apply([bytes, messages, latency_ns, now_ns](NetCounters& c) {
      c.bytes_received.fetch_add(bytes, std::memory_order_relaxed);
      c.messages_received.fetch_add(messages, std::memory_order_relaxed);
      c.Completed(latency_ns, now_ns);
    });
  }
  // TCP: the connection's sockets, whose TCP_INFO the scrape reads (core/net_links.h); UnregisterLink() must
  // run before they are closed.
  void SetSockets(std::vector<int> fds) { SetNetLinkSockets(&link_, std::move(fds)); }
  void UnregisterLink() { UnregisterNetLink(&link_); }
  // Who the peer is, once the transport knows (its address, and its process when the handshake said).
  // Service thread, before the comm is handed to NCCL or its helpers start: Fail reads it unlocked.
  void SetPeer(PeerInfo peer) {
    SetNetLinkPeer(&link_, peer.global_rank, peer.host);
    peer_ = std::move(peer);
  }
  const PeerInfo& peer() const { return peer_; }
  // Records the first failure, counts it, logs it and adds it to the net-error log, once per comm; false
  // when one was already recorded.
  bool Fail(const Status& s, NetErrorKind kind);
  bool failed() const { return error_.failed(); }
  // A completion that cannot be true (a wrapped plugin's size beyond what was posted): counted as an error of
  // `kind` every time and logged once per comm, with the net-error log; unlike Fail, the comm goes on.
  // `why()` makes the line, for the first one only (no allocation on the data path after that).
  template <class Why>
  void Implausible(NetErrorKind kind, Why&& why) {
    Apply([kind](NetCounters& c) { c.AddError(kind); });
    if (!implausible_logged_.exchange(true, std::memory_order_relaxed)) LogImplausible(kind, why());
  }
  Status error() const { return error_.Get(); }
  const NetEvents& events() const { return events_; }

 private:
  void LogImplausible(NetErrorKind kind, const std::string& why);
  template <class F>
  void Apply(F&& f) {
    ForNicAndComm(nic_, comm_, f);
  }

  NetCounters* nic_;
  NetCounters* comm_ = nullptr;  // null for legacy ABIs (no communicator id)
  std::string nic_name_;
  uint64_t comm_id_ = 0;
  const char* transport_;
  PeerInfo peer_;
  ErrorSlot error_;
  std::atomic<bool> implausible_logged_{false};
  NetEvents events_;
  NetLink link_;
};

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_COMM_ACCOUNTING_H_
