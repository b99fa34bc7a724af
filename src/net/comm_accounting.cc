#include "net/comm_accounting.h"

#include "common/log.h"
#include "core/net_errors.h"

namespace ncclscope::net {
namespace {

void Record(const std::string& nic, uint64_t comm_id, NetErrorKind kind, const Status& s, const PeerInfo& peer) {
  NetErrorRecord r;
  r.comm_id = comm_id;
  r.nic = nic;
  r.kind = kind;
  r.text = s.message();
  r.peer = peer.address;
  r.peer_global_rank = peer.global_rank;
  r.peer_pid = peer.pid;
  r.peer_host = peer.host;
  RecordNetError(std::move(r));
}

}  // namespace

void RecordConnectionFailure(const std::string& nic, const NetContext* ctx, NetErrorKind kind, const Status& s,
                             const PeerInfo& peer) {
  Record(nic, ctx != nullptr ? ctx->comm_id : 0, kind, s, peer);
}

CommAccounting::CommAccounting(const std::string& nic, const NetContext* ctx, const char* transport,
                               int64_t plugin_id, NetDir dir)
    : nic_(NetCountersFor(nic, 0, /*nic_total=*/true)),
      nic_name_(nic),
      comm_id_(ctx != nullptr ? ctx->comm_id : 0),
      transport_(transport),
      events_(ctx != nullptr ? ctx->profiler_cb : nullptr, plugin_id) {
  if (ctx != nullptr && ctx->comm_id != 0) comm_ = NetCountersFor(nic, ctx->comm_id, false);
  Apply([](NetCounters& c) { c.connections_open.fetch_add(1, std::memory_order_relaxed); });
  link_.nic = nic;
  link_.comm_id = comm_id_;
  link_.dir = dir;
  RegisterNetLink(&link_);
}

CommAccounting::~CommAccounting() {
  UnregisterNetLink(&link_);
  Apply([](NetCounters& c) { c.connections_open.fetch_sub(1, std::memory_order_relaxed); });
}

bool CommAccounting::Fail(const Status& s, NetErrorKind kind) {
  if (!error_.Set(s)) return false;
  link_.Failed(MonotonicNs());
  Apply([kind](NetCounters& c) { c.AddError(kind); });
  NCCLSCOPE_WARN(subsys::kNet, "%s: %s", transport_, s.message().c_str());
  Record(nic_name_, comm_id_, kind, s, peer_);
  return true;
}

void CommAccounting::LogImplausible(NetErrorKind kind, const std::string& why) {
  NCCLSCOPE_WARN(subsys::kNet, "%s: %s (counted as a %s error; logged once per comm, later ones only counted)",
                 transport_, why.c_str(), NetErrorKindName(kind));
  Record(nic_name_, comm_id_, kind, InternalError(why), peer_);
}

}  // namespace ncclscope::net
