// The clear-to-send entry's check: every byte of an entry lands in any order, so an entry that mixes the
// previous use of its FIFO slot with the new one must fail CtsCheck even when the new seq already landed.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "net/verbs/verbs_comm.h"

namespace ncclscope::net::verbs {
namespace {

CtsEntry Entry(uint64_t addr, uint64_t size, uint32_t rkey, int32_t tag, uint8_t n, uint8_t index, uint32_t seq) {
  CtsEntry e{addr, size, rkey, tag, n, index, 0, seq};
  e.check = CtsCheck(e);
  return e;
}

TEST(CtsEntry, WholeEntryPassesItsCheck) {
  const CtsEntry e = Entry(0x7f0000001000, 4 << 20, 0x1234, 7, 2, 1, 129);
  EXPECT_EQ(e.check, CtsCheck(e));
}

// Every torn mix of the slot's previous entry (seq - kMaxRequests) and the new one at byte granularity along
// each field boundary: the new seq with any older field is refused.
TEST(CtsEntry, TornEntryWithTheNewSeqFailsItsCheck) {
  const CtsEntry old_entry = Entry(0x7f0000002000, 65536, 0x99, 3, 1, 0, 1);
  const CtsEntry new_entry = Entry(0x7f0000001000, 4 << 20, 0x1234, 7, 2, 1, 1 + kMaxRequests);
  const size_t seq_at = offsetof(CtsEntry, seq);
  int refused = 0;
  int torn = 0;
  // Which 4-byte words of the new entry have landed (the seq word always has).
  for (unsigned landed = 0; landed < (1u << (seq_at / 4)); ++landed) {
    unsigned char bytes[sizeof(CtsEntry)];
    std::memcpy(bytes, &old_entry, sizeof bytes);
    std::memcpy(bytes + seq_at, &new_entry.seq, sizeof new_entry.seq);
    for (size_t w = 0; w < seq_at / 4; ++w) {
      if (landed & (1u << w)) std::memcpy(bytes + 4 * w, reinterpret_cast<const char*>(&new_entry) + 4 * w, 4);
    }
    CtsEntry mixed;
    std::memcpy(&mixed, bytes, sizeof mixed);
    if (std::memcmp(&mixed, &new_entry, sizeof mixed) == 0) continue;  // all landed: not torn
    ++torn;
    if (mixed.check != CtsCheck(mixed)) ++refused;
  }
  EXPECT_GT(torn, 100);  // fewer than 127: words the two entries share (the high halves) cannot tear
  EXPECT_EQ(refused, torn);
}

// The case the CI hit: the seq landed, n (and the rest) still zero from a never-used slot.
TEST(CtsEntry, ZeroedSlotWithSeqFailsItsCheck) {
  CtsEntry e{};
  e.seq = 1;
  EXPECT_NE(e.check, CtsCheck(e));
}

}  // namespace
}  // namespace ncclscope::net::verbs
