#include "net/tcp/comm_base.h"

#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"

namespace ncclscope::net::tcp {

CommBase::CommBase(std::vector<int> fds, PeerInfo peer, const TcpConfig& cfg, const NetContext* ctx,
                   const std::string& nic, NetDir dir)
    : fds_(std::move(fds)),
      nsocks_(static_cast<int>(fds_.size())),
      nthreads_(std::max(0, std::min(cfg.nthreads, nsocks_))),
      peer_(peer.Describe()),
      cfg_(cfg),
      acct_(nic, ctx, "TCP", NCCLSCOPE_NET_PLUGIN_TYPE_SOCK | 1, dir) {
  acct_.SetPeer(std::move(peer));  // before Start() runs any helper
  acct_.SetSockets(fds_);
}

CommBase::~CommBase() {
  acct_.UnregisterLink();  // no scrape reads the sockets' TCP_INFO from here on
  for (int fd : fds_) close(fd);
}

bool CommBase::StalledTooLong(uint64_t last_progress_ns, uint64_t now_ns, const char* what) {
  if (ElapsedNs(last_progress_ns, now_ns) <= static_cast<uint64_t>(cfg_.timeout_ms) * 1000000ull) return false;
  Fail(RemoteError(std::string(what) + " peer " + peer_ + ": no progress for " + std::to_string(cfg_.timeout_ms) +
                   " ms inside a message (peer process stopped, or its host silent)"),
       NetErrorKind::kTimeout);
  return true;
}

}  // namespace ncclscope::net::tcp
