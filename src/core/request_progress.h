// RequestProgress: requests in flight on a network block (a NIC's, a communicator's or one connection's) and
// when that block last made progress, so that now minus progress_ns is how long its pending requests have
// waited without one completing. Relaxed atomics: the data path adds once per post and once per completion.
#ifndef NCCLSCOPE_CORE_REQUEST_PROGRESS_H_
#define NCCLSCOPE_CORE_REQUEST_PROGRESS_H_

#include <atomic>
#include <cstdint>

namespace ncclscope {

struct RequestProgress {
  std::atomic<int64_t> in_flight{0};
  // MonotonicNs() of the last completion, or of the post that took the block from idle to busy.
  std::atomic<uint64_t> progress_ns{0};

  void Posted(uint64_t posted_ns) {
    if (in_flight.fetch_add(1, std::memory_order_relaxed) == 0) progress_ns.store(posted_ns, std::memory_order_relaxed);
  }
  void Completed(uint64_t now_ns) {
    in_flight.fetch_sub(1, std::memory_order_relaxed);
    progress_ns.store(now_ns, std::memory_order_relaxed);
  }
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_REQUEST_PROGRESS_H_
