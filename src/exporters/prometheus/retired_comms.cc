#include "exporters/prometheus/retired_comms.h"

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/tsan_lock.h"
#include "core/registry.h"

namespace ncclscope {
namespace {

struct RetiredList {
  absl::Mutex mu;
  std::deque<CommSnapshot> comms ABSL_GUARDED_BY(mu);
};

RetiredList& Retired() {
  static RetiredList* retired = new RetiredList();  // -z nodelete global, never destroyed
  return *retired;
}

}  // namespace

void KeepFinalTotals(const CommSnapshot& snap, DumpReason reason) {
  if (reason != DumpReason::kFinalize) return;
  CommSnapshot totals = snap;
  totals.completed.clear();
  totals.in_flight.clear();
  totals.in_flight_count = 0;
  totals.oldest_in_flight_age_ns = 0;
  totals.stalled = false;  // gone, not stuck: no stall alert on a final total
  totals.idle_ns = 0;
  RetiredList& retired = Retired();
  AnnotatedLock lock(&retired.mu);
  retired.comms.push_back(std::move(totals));
  if (retired.comms.size() > kMaxRetiredComms) retired.comms.pop_front();
}

std::vector<CommSnapshot> RetiredComms() {
  RetiredList& retired = Retired();
  AnnotatedLock lock(&retired.mu);
  return {retired.comms.begin(), retired.comms.end()};
}

}  // namespace ncclscope
