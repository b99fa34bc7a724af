// State shared by the TCP send and receive comms: the sockets, the helper-thread set, the stall check,
// and the transport-neutral accounting (counters, first error, NetPlugin events: net/comm_accounting.h)
// with TCP's socket descriptor for the events. Construction and Close() happen on NCCL's service
// thread; everything else may run on the progress thread and the helpers at once.
#ifndef NCCLSCOPE_NET_TCP_COMM_BASE_H_
#define NCCLSCOPE_NET_TCP_COMM_BASE_H_

#include <pthread.h>

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
#include "net/comm_accounting.h"
#include "net/net_types.h"
#include "net/tcp/tcp_config.h"
#include "net/tcp/wire.h"

namespace ncclscope::net::tcp {

class CommBase {
 protected:
  CommBase(std::vector<int> fds, PeerInfo peer, const TcpConfig& cfg, const NetContext* ctx,
           const std::string& nic, NetDir dir);
  ~CommBase();

  // Records the first failure, counts it and logs it once per comm.
  void Fail(const Status& s, NetErrorKind kind) { acct_.Fail(s, kind); }
  // Starts `nthreads` helpers running Body(t), named `role` and t ("ncclscope-tx0") so that top, perf and
  // /proc tell them apart; thread start failure is a clean SystemError.
  template <class Body>
  Status StartHelpers(const char* role, Body body) {
    try {
      for (int t = 0; t < nthreads_; ++t) {
        helpers_.emplace_back([body, role, t] {
          char name[16];
          snprintf(name, sizeof(name), "ncclscope-%s%d", role, t);
          pthread_setname_np(pthread_self(), name);
          body(t);
        });
      }
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
  // A NetPlugin event with TCP's socket descriptor (op 0 send, 1 receive); `descr` lives in the request.
  void ProfStart(void* phandle, void** event, ncclscope_net_sock_descr_v1_t* descr, int op, size_t length) {
    descr->type = NCCLSCOPE_NET_SOCK_DESCR_TYPE;
    descr->sock.fd = fds_[0];
    descr->sock.op = op;
    descr->sock.length = length;
    acct_.events().Start(phandle, event, descr);
  }
  void ProfStop(void** event) { acct_.events().Stop(event); }

  // Bytes moved per socket per call in inline mode, so that one test() never holds NCCL's progress thread
  // for a whole large message (the rest moves on the next calls); helper threads have no bound.
  static constexpr int64_t kInlineBytesPerSocket = 2 << 20;
  static constexpr int64_t kUnbounded = INT64_MAX;
  // Inline mode (no helpers): the progress thread moves the data in Isend/Irecv and Test.
  bool inline_io() const { return nthreads_ == 0; }
  // Fails the comm when one of the sockets first, first + step, ... (each with `inside_message()` and
  // `last_progress_ns`) has been inside a message with no byte moved for longer than the timeout; `what` is
  // "send to" or "receive from". Only inside a message: a peer owes the rest of a message it has begun (the
  // whole buffer was in its hands), while between messages a stopped peer cannot be told from a rank that
  // enters the next collective late (its kernel ACKs either way), and NCCL leaves connections idle for hours.
  template <class Socket>
  bool AnyStalled(const Socket* socks, int first, int step, const char* what) {
    const uint64_t now = MonotonicNs();
    for (int s = first; s < nsocks_; s += step) {
      if (socks[s].inside_message() && StalledTooLong(socks[s].last_progress_ns, now, what)) return true;
    }
    return false;
  }
  bool StalledTooLong(uint64_t last_progress_ns, uint64_t now_ns, const char* what);

  std::vector<int> fds_;
  int nsocks_;
  int nthreads_;
  std::string peer_;  // the peer as errors name it: address, and its process when the handshake said
  TcpConfig cfg_;
  CommAccounting acct_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> helpers_;
};

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_COMM_BASE_H_
