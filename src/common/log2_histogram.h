// Power-of-two latency buckets: bucket b counts values in [2^b, 2^(b+1)) (0 and 1 land in bucket 0; values
// past the last bucket land in it). One definition for the profiler's aggregates and the NIC counters, so
// both histograms have the same bounds when exported.
#ifndef NCCLSCOPE_COMMON_LOG2_HISTOGRAM_H_
#define NCCLSCOPE_COMMON_LOG2_HISTOGRAM_H_

#include <cstdint>

namespace ncclscope {

template <int kBuckets>
constexpr int Log2Bucket(uint64_t value) {
  static_assert(kBuckets > 0 && kBuckets <= 64);
  if (value < 2) return 0;
  const int b = 63 - __builtin_clzll(value);
  return b < kBuckets ? b : kBuckets - 1;
}

static_assert(Log2Bucket<40>(0) == 0 && Log2Bucket<40>(1) == 0 && Log2Bucket<40>(2) == 1 &&
              Log2Bucket<40>(1023) == 9 && Log2Bucket<40>(1024) == 10 && Log2Bucket<4>(1 << 20) == 3);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_LOG2_HISTOGRAM_H_
