#include "net/tcp/comm_base.h"

#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"

namespace ncclscope::net::tcp {

StatsRefs StatsFor(const std::string& nic, const NetContext* ctx) {
  StatsRefs s;
  s.nic = NetCountersFor(nic, 0, /*nic_total=*/true);
  if (ctx != nullptr && ctx->comm_id != 0) s.comm = NetCountersFor(nic, ctx->comm_id, false);
  return s;
}

CommBase::CommBase(std::vector<int> fds, std::string peer, const TcpConfig& cfg, const NetContext* ctx,
                   const std::string& nic)
    : fds_(std::move(fds)),
      nsocks_(static_cast<int>(fds_.size())),
      nthreads_(std::max(0, std::min(cfg.nthreads, nsocks_))),
      peer_(std::move(peer)),
      cfg_(cfg),
      stats_(StatsFor(nic, ctx)),
      prof_cb_(ctx != nullptr ? ctx->profiler_cb : nullptr) {
  stats_.Apply([](NetCounters& c) { c.connections_open.fetch_add(1, std::memory_order_relaxed); });
}

CommBase::~CommBase() {
  for (int fd : fds_) close(fd);
  stats_.Apply([](NetCounters& c) { c.connections_open.fetch_sub(1, std::memory_order_relaxed); });
}

bool CommBase::StalledTooLong(uint64_t last_progress_ns, uint64_t now_ns, const char* what) {
  if (now_ns - last_progress_ns <= static_cast<uint64_t>(cfg_.timeout_ms) * 1000000ull) return false;
  Fail(RemoteError(std::string(what) + " peer " + peer_ + " made no progress inside a message for " +
                   std::to_string(cfg_.timeout_ms) + " ms (peer stopped or host silent)"),
       NetErrorKind::kTimeout);
  return true;
}

void CommBase::Fail(const Status& s, NetErrorKind kind) {
  if (error_.Set(s)) {
    stats_.Apply([kind](NetCounters& c) { c.AddError(kind); });
    NCCLSCOPE_WARN(subsys::kNet, "ncclscope TCP: %s", s.message().c_str());
  }
}

void CommBase::ProfStart(void* phandle, void** event, ncclscope_net_sock_descr_v1_t* descr, int op,
                         size_t length) {
  *event = nullptr;
  if (prof_cb_ == nullptr || phandle == nullptr) return;
  descr->type = NCCLSCOPE_NET_SOCK_DESCR_TYPE;
  descr->sock.fd = fds_[0];
  descr->sock.op = op;
  descr->sock.length = length;
  prof_cb_(event, NCCLSCOPE_NET_EVENT_START, phandle, NCCLSCOPE_NET_PLUGIN_TYPE_SOCK | 1, descr);
}

void CommBase::ProfStop(void** event) {
  if (prof_cb_ == nullptr || *event == nullptr) return;
  prof_cb_(event, NCCLSCOPE_NET_EVENT_STOP, nullptr, NCCLSCOPE_NET_PLUGIN_TYPE_SOCK | 1, nullptr);
  *event = nullptr;
}

}  // namespace ncclscope::net::tcp
