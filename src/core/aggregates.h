// CommAggregates: per-communicator counters by kind/function × algorithm/protocol × power-of-two
// size class, with a log2-bucketed latency histogram per cell. Cells live in a fixed open-addressed
// table allocated at construction; the event path claims a cell with one CAS on its key and then
// only adds: plain load and store on the lane owner's lane (see LanedCounter), relaxed fetch_adds on the
// shared one, so it never locks or allocates. When the table is full the sample
// is dropped and counted (dropped_full()). Readers copy every counter with relaxed loads; a
// snapshot taken while an operation is being recorded may show that one operation's count without
// its duration, never a torn value.
#ifndef NCCLSCOPE_CORE_AGGREGATES_H_
#define NCCLSCOPE_CORE_AGGREGATES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/log2_histogram.h"
#include "core/relaxed.h"
#include "core/snapshot.h"

namespace ncclscope {

class CommAggregates {
 public:
  static constexpr int kCells = 128;  // a real job uses a few dozen (func × algo/proto × size) combinations

  CommAggregates();
  CommAggregates(const CommAggregates&) = delete;
  CommAggregates& operator=(const CommAggregates&) = delete;

  // One completed operation. `latency` true: duration_ns is a GPU or proxy latency; false: CPU only.
  // `lane_owner`: the caller is the one thread that completes with plain stores (see LanedCounter).
  void Record(OpKind kind, Func func, Algo algo, Proto proto, uint64_t bytes, uint64_t bus_bytes,
              uint64_t duration_ns, bool latency, bool lane_owner);

  std::vector<AggregateCell> Snapshot() const;
  uint64_t dropped_full() const { return dropped_full_.load(std::memory_order_relaxed); }
  static size_t memory_bytes() { return sizeof(CommAggregates) + sizeof(Cell) * kCells; }

  static int LatencyBucket(uint64_t ns) { return Log2Bucket<kLatencyBuckets>(ns); }

 private:
  struct alignas(64) Cell {
    std::atomic<uint32_t> key{0};  // 0 = free
    LanedCounter<uint64_t> count, bytes, bus_bytes;
    LanedCounter<uint64_t> latency_count, latency_sum_ns;
    LanedCounter<uint64_t> cpu_count, cpu_sum_ns;
    LanedCounter<uint64_t> buckets[kLatencyBuckets];
  };
  static uint32_t Key(OpKind kind, Func func, Algo algo, Proto proto, int size_class);

  std::unique_ptr<Cell[]> cells_;
  std::atomic<uint64_t> dropped_full_{0};
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_AGGREGATES_H_
