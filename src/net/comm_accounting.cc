#include "net/comm_accounting.h"

#include "common/log.h"

namespace ncclscope::net {

CommAccounting::CommAccounting(const std::string& nic, const NetContext* ctx, const char* transport,
                               int64_t plugin_id)
    : nic_(NetCountersFor(nic, 0, /*nic_total=*/true)),
      transport_(transport),
      events_(ctx != nullptr ? ctx->profiler_cb : nullptr, plugin_id) {
  if (ctx != nullptr && ctx->comm_id != 0) comm_ = NetCountersFor(nic, ctx->comm_id, false);
  Apply([](NetCounters& c) { c.connections_open.fetch_add(1, std::memory_order_relaxed); });
}

CommAccounting::~CommAccounting() {
  Apply([](NetCounters& c) { c.connections_open.fetch_sub(1, std::memory_order_relaxed); });
}

bool CommAccounting::Fail(const Status& s, NetErrorKind kind) {
  if (!error_.Set(s)) return false;
  Apply([kind](NetCounters& c) { c.AddError(kind); });
  NCCLSCOPE_WARN(subsys::kNet, "ncclscope %s: %s", transport_, s.message().c_str());
  return true;
}

}  // namespace ncclscope::net
