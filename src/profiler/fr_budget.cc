#include "profiler/fr_budget.h"

#include "common/log.h"
#include "core/flight_recorder.h"

namespace ncclscope::profiler {

int DepthWithinBudget(int requested, size_t record_bytes, size_t used_bytes, size_t budget_bytes) {
  const size_t left = budget_bytes > used_bytes ? budget_bytes - used_bytes : 0;
  if (requested <= kMinFrDepth || static_cast<size_t>(requested) * record_bytes <= left) return requested;
  int depth = kMinFrDepth;
  while (depth * 2 < requested && static_cast<size_t>(depth) * 2 * record_bytes <= left) depth *= 2;
  return depth;
}

FlightRecorderBudget& FlightRecorderBudget::Process() {
  static FlightRecorderBudget* budget = new FlightRecorderBudget();  // -z nodelete: never destroyed
  return *budget;
}

int FlightRecorderBudget::Reserve(int requested, size_t budget_bytes, uint64_t comm_hash) {
  const size_t record = FlightRecorder::BytesPerRecord();
  size_t used = used_.load(std::memory_order_relaxed);
  int depth = requested;
  do {
    depth = DepthWithinBudget(requested, record, used, budget_bytes);
  } while (!used_.compare_exchange_weak(used, used + static_cast<size_t>(depth) * record, std::memory_order_relaxed));
  if (depth != requested) {
    const bool first = !warned_.exchange(true, std::memory_order_relaxed);
    Log(first ? LogLevel::kWarn : LogLevel::kInfo, subsys::kProfile, __FILE__, __LINE__,
        "comm 0x%016llx: NCCLSCOPE_FR_DEPTH=%d costs %zu bytes per communicator (%zu bytes a record); with %zu bytes "
        "already held by this process's flight recorders it would pass NCCLSCOPE_FR_MEMORY=%zu: it keeps %d "
        "records (%zu bytes)%s",
        static_cast<unsigned long long>(comm_hash), requested, static_cast<size_t>(requested) * record, record, used,
        budget_bytes, depth, static_cast<size_t>(depth) * record,
        first ? "; later communicators cut likewise are logged at INFO" : "");
  }
  return depth;
}

void FlightRecorderBudget::Release(int depth) {
  used_.fetch_sub(static_cast<size_t>(depth) * FlightRecorder::BytesPerRecord(), std::memory_order_relaxed);
}

}  // namespace ncclscope::profiler
