// State shared by the TCP send and receive comms: the first-error slot that helper threads fill and
// Test() reports, the counter blocks (NIC total and, for v11+, the communicator), the NetPlugin
// profiler callback, and the helper-thread set. The error slot is written once (first error wins)
// with a CAS and read lock-free; counters are relaxed atomics. Construction and Close() happen on
// NCCL's service thread; everything else may run on the progress thread and the helpers at once.
#ifndef NCCLSCOPE_NET_TCP_COMM_BASE_H_
#define NCCLSCOPE_NET_TCP_COMM_BASE_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "core/net_stats.h"
#include "ncclscope/abi/common.h"
#include "net/net_types.h"
#include "net/tcp/socket_util.h"
#include "net/tcp/wire.h"

namespace ncclscope::net::tcp {

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

// Counter blocks a comm updates; `comm` is null for legacy ABIs (no communicator id).
struct StatsRefs {
  NetCounters* nic = nullptr;
  NetCounters* comm = nullptr;
  template <class F>
  void Apply(F&& f) {
    f(*nic);
    if (comm != nullptr) f(*comm);
  }
};

StatsRefs StatsFor(const std::string& nic, const NetContext* ctx);

class CommBase {
 protected:
  CommBase(std::vector<int> fds, std::string peer, const TcpConfig& cfg, const NetContext* ctx,
           const std::string& nic);
  ~CommBase();

  // Records the first failure, counts it and logs it once per comm.
  void Fail(const Status& s, NetErrorKind kind);
  // Starts `nthreads` helpers running Body(t); thread start failure is a clean SystemError.
  template <class Body>
  Status StartHelpers(Body body) {
    try {
      for (int t = 0; t < nthreads_; ++t) helpers_.emplace_back([this, body, t] { body(t); });
    } catch (const std::exception& e) {
      return SystemError("cannot start TCP helper thread for peer " + peer_ + ": " + e.what());
    }
    return Status::Ok();
  }
  // Stops helpers: sets stop_, runs `wake`, shuts the sockets down (waking blocked polls), joins, closes.
  template <class Wake>
  void StopHelpers(Wake wake) {
    stop_.store(true, std::memory_order_release);
    wake();
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    for (std::thread& t : helpers_) t.join();
    helpers_.clear();
  }
  void ProfStart(void* phandle, void** event, ncclscope_net_sock_descr_v1_t* descr, int op, size_t length);
  void ProfStop(void** event);

  // Bytes moved per socket per call in inline mode, so that one test() never holds NCCL's progress thread
  // for a whole large message (the rest moves on the next calls); helper threads have no bound.
  static constexpr int64_t kInlineBytesPerSocket = 2 << 20;
  static constexpr int64_t kUnbounded = INT64_MAX;
  // Inline mode (no helpers): the progress thread moves the data in Isend/Irecv and Test.
  bool inline_io() const { return nthreads_ == 0; }
  // Fails the comm when one of the sockets first, first + step, ... (each with `in_msg` and
  // `last_progress_ns`) has been inside a message for longer than the timeout; `what` is "send to" or
  // "receive from" for the message.
  template <class Socket>
  bool AnyStalled(const Socket* socks, int first, int step, const char* what) {
    const uint64_t now = MonotonicNs();
    for (int s = first; s < nsocks_; s += step) {
      if (socks[s].in_msg && StalledTooLong(socks[s].last_progress_ns, now, what)) return true;
    }
    return false;
  }
  bool StalledTooLong(uint64_t last_progress_ns, uint64_t now_ns, const char* what);

  std::vector<int> fds_;
  int nsocks_;
  int nthreads_;
  std::string peer_;
  TcpConfig cfg_;
  StatsRefs stats_;
  ncclscope_profiler_callback_t prof_cb_;
  ErrorSlot error_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> helpers_;
};

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_COMM_BASE_H_
