#include "exporters/prometheus/retired_comms.h"

#include <deque>
#include <mutex>

#include "core/registry.h"

namespace ncclscope {
namespace {

std::mutex& Mu() {
  static std::mutex* mu = new std::mutex();  // -z nodelete global, never destroyed
  return *mu;
}

std::deque<CommSnapshot>& Retired() {
  static std::deque<CommSnapshot>* retired = new std::deque<CommSnapshot>();
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
  std::lock_guard<std::mutex> lock(Mu());
  Retired().push_back(std::move(totals));
  if (Retired().size() > kMaxRetiredComms) Retired().pop_front();
}

std::vector<CommSnapshot> RetiredComms() {
  std::lock_guard<std::mutex> lock(Mu());
  return {Retired().begin(), Retired().end()};
}

}  // namespace ncclscope
