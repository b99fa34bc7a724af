// FlightRecorder: the last N completed operations of one communicator, in a fixed ring allocated
// (and pre-faulted) at construction. Any number of threads may Append concurrently without a lock:
// each claims a slot with one fetch_add and publishes it under a per-slot sequence word; a reader
// copies slots whose sequence is stable, so a Snapshot never sees a torn record. Records are kept
// as relaxed atomic words, which keeps the concurrent copy defined behaviour.
#ifndef NCCLSCOPE_CORE_FLIGHT_RECORDER_H_
#define NCCLSCOPE_CORE_FLIGHT_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/snapshot.h"

namespace ncclscope {

class FlightRecorder {
 public:
  explicit FlightRecorder(int depth);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Event path: no lock, no allocation.
  void Append(const OpRecord& rec);

  // Oldest first; at most depth() records.
  std::vector<OpRecord> Snapshot() const;
  int depth() const { return depth_; }
  uint64_t appended() const { return next_.load(std::memory_order_relaxed); }
  // Records overwritten before anyone could read them out of the ring.
  uint64_t overwritten() const;
  size_t memory_bytes() const { return sizeof(*this) + sizeof(Slot) * static_cast<size_t>(depth_); }

 private:
  static constexpr size_t kWords = (sizeof(OpRecord) + 7) / 8;
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq{0};  // 2*index+1 while writing, 2*index+2 when published
    std::atomic<uint64_t> words[kWords];
  };

  // The slot of record `index`: a mask when the depth is a power of two (the default), as a 64-bit division
  // costs more than the rest of the index arithmetic on the event path.
  Slot& SlotFor(uint64_t index) const {
    return slots_[mask_ != 0 ? index & mask_ : index % static_cast<uint64_t>(depth_)];
  }

  const int depth_;
  const uint64_t mask_;  // depth - 1 for a power-of-two depth, else 0
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> next_{0};
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_FLIGHT_RECORDER_H_
