// FlightRecorder: the completed ones among the last N operations of one communicator, in a fixed ring allocated (and
// pre-faulted) at construction, indexed by the operation's arrival number: the caller's own unique counter, so
// the completing thread claims nothing here (a locked instruction fewer per operation). Any number of threads
// may Append concurrently without a lock; each publishes its slot under a per-slot sequence word, and a reader
// copies slots whose sequence is stable, so a Snapshot never sees a torn record. Records are kept as relaxed
// atomic words, which keeps the concurrent copy defined behaviour. Operations still in flight, or dropped,
// leave their slot empty.
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

  // Event path: no lock, no allocation. `index` is unique per operation (0 for the first to arrive).
  void Append(const OpRecord& rec, uint64_t index);

  // The completed records among the operations [end - depth, end), by arrival; `end` is how many have arrived.
  std::vector<OpRecord> Snapshot(uint64_t end) const;
  // The newest completed record among the last 8 operations before `end`; false when none of them is.
  bool Newest(uint64_t end, OpRecord* out) const;
  int depth() const { return depth_; }
  // Operations that arrived before the ring's window: their records are overwritten, or will be.
  uint64_t overwritten(uint64_t end) const { return end > static_cast<uint64_t>(depth_) ? end - depth_ : 0; }
  size_t memory_bytes() const { return sizeof(*this) + sizeof(Slot) * static_cast<size_t>(depth_); }
  // What one record of the ring takes (a cache-line aligned slot): the cost of NCCLSCOPE_FR_DEPTH per communicator.
  static constexpr size_t BytesPerRecord();

 private:
  static constexpr size_t kWords = (sizeof(OpRecord) + 7) / 8;
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq{0};  // 2*index+1 while writing, 2*index+2 when published
    std::atomic<uint64_t> words[kWords];
  };

  // Copies record `index` if its slot holds it, published and stable.
  bool Read(uint64_t index, OpRecord* out) const;
  // The slot of record `index`: a mask when the depth is a power of two (the default), as a 64-bit division
  // costs more than the rest of the index arithmetic on the event path.
  Slot& SlotFor(uint64_t index) const {
    return slots_[mask_ != 0 ? index & mask_ : index % static_cast<uint64_t>(depth_)];
  }

  const int depth_;
  const uint64_t mask_;  // depth - 1 for a power-of-two depth, else 0
  std::unique_ptr<Slot[]> slots_;
};

constexpr size_t FlightRecorder::BytesPerRecord() { return sizeof(Slot); }

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_FLIGHT_RECORDER_H_
