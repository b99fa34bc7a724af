#include "core/flight_recorder.h"

#include <algorithm>

#include <cstring>

namespace ncclscope {

FlightRecorder::FlightRecorder(int depth)
    : depth_(depth > 0 ? depth : 1),
      mask_((depth_ & (depth_ - 1)) == 0 ? static_cast<uint64_t>(depth_) - 1 : 0),
      slots_(new Slot[depth_]) {
  // Value-initialise every word now: this faults the pages in at communicator init, never later.
  for (int i = 0; i < depth_; ++i) {
    slots_[i].seq.store(0, std::memory_order_relaxed);
    for (auto& w : slots_[i].words) w.store(0, std::memory_order_relaxed);
  }
}

void FlightRecorder::Append(const OpRecord& rec, uint64_t index) {
  Slot& s = SlotFor(index);
  static_assert(sizeof(OpRecord) % 8 == 0, "a record fills its words: no tail to clear");
  // Claim the slot. Two writers a lap apart can meet on it (the older operation completing late): only one may
  // write at a time, or a reader could take half of each for a published record. A slot being written, or holding
  // a newer record, is left alone and this record dropped: it is already outside the ring's window.
  const uint64_t writing = 2 * index + 1;
  uint64_t cur = s.seq.load(std::memory_order_relaxed);
  do {
    if ((cur & 1) != 0 || cur > writing) return;
  } while (!s.seq.compare_exchange_weak(cur, writing, std::memory_order_relaxed));
  // A sequence lock without fences (ThreadSanitizer does not model them): release stores of the words, so a
  // reader that sees any new word also sees the odd seq when it reads seq again. Plain stores on x86-64.
  // Each word goes straight from the caller's record to the slot: a copy to a local array first cost 18
  // instructions and 9 stores per operation.
  const char* from = reinterpret_cast<const char*>(&rec);
#pragma GCC unroll 32  // a straight run of moves: the loop's own compare and branch cost as much as the copy
  for (size_t i = 0; i < kWords; ++i) {
    uint64_t word;
    std::memcpy(&word, from + 8 * i, sizeof(word));
    s.words[i].store(word, std::memory_order_release);
  }
  s.seq.store(writing + 1, std::memory_order_release);
}

bool FlightRecorder::Read(uint64_t index, OpRecord* out) const {
  const Slot& s = SlotFor(index);
  uint64_t words[kWords];
  uint64_t before = s.seq.load(std::memory_order_acquire);
  if (before != 2 * index + 2) return false;  // in flight, being written, or already overwritten
  // Acquire loads keep the second read of seq after them.
  for (size_t i = 0; i < kWords; ++i) words[i] = s.words[i].load(std::memory_order_acquire);
  if (s.seq.load(std::memory_order_relaxed) != before) return false;
  std::memcpy(out, words, sizeof(*out));
  return true;
}

std::vector<OpRecord> FlightRecorder::Snapshot(uint64_t end) const {
  const uint64_t begin = overwritten(end);  // the window's first operation
  std::vector<OpRecord> out;
  out.reserve(end - begin);
  OpRecord rec;
  for (uint64_t index = begin; index < end; ++index) {
    if (Read(index, &rec)) out.push_back(rec);
  }
  return out;
}

bool FlightRecorder::Newest(uint64_t end, OpRecord* out) const {
  const uint64_t begin = std::max(overwritten(end), end > 8 ? end - 8 : 0);
  for (uint64_t index = end; index > begin; --index) {
    if (Read(index - 1, out)) return true;
  }
  return false;
}

}  // namespace ncclscope
