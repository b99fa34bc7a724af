// RelaxedAtomic<T>: a field written on the event path and read by snapshot readers. Relaxed loads
// and stores cost what plain ones do on x86 and ARM, and keep concurrent reads defined (and quiet
// under ThreadSanitizer). Thread-safe per field; no ordering between fields.
#ifndef NCCLSCOPE_CORE_RELAXED_H_
#define NCCLSCOPE_CORE_RELAXED_H_

#include <atomic>

namespace ncclscope {

template <class T>
class RelaxedAtomic {
 public:
  RelaxedAtomic() : v_(T{}) {}
  void Set(T v) { v_.store(v, std::memory_order_relaxed); }
  T Get() const { return v_.load(std::memory_order_relaxed); }
  T Add(T d) { return v_.fetch_add(d, std::memory_order_relaxed) + d; }
  // Add and Max for a field this thread alone writes: a plain load and store, no locked instruction.
  void AddAsOnlyWriter(T d) { v_.store(v_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed); }
  void MaxAsOnlyWriter(T v) {
    if (v > v_.load(std::memory_order_relaxed)) v_.store(v, std::memory_order_relaxed);
  }
  void Min(T v) {
    T cur = v_.load(std::memory_order_relaxed);
    while ((cur == T{} || v < cur) && !v_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }
  void Max(T v) {
    T cur = v_.load(std::memory_order_relaxed);
    while (v > cur && !v_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<T> v_;
};

// A counter (or running maximum) with a lane of its own for one thread, the "lane owner" (decided by the
// caller, e.g. the first thread to complete an operation of a communicator): the owner updates its lane
// with a plain load and store, any other thread the shared lane atomically. Readers combine the lanes.
// The owner is the only writer in practice on NCCL's event path, so an update costs no locked instruction.
template <class T>
class LanedCounter {
 public:
  void Add(T d, bool lane_owner) { lane_owner ? own_.AddAsOnlyWriter(d) : (void)shared_.Add(d); }
  T Get() const { return own_.Get() + shared_.Get(); }

 private:
  RelaxedAtomic<T> own_, shared_;
};

template <class T>
class LanedMax {
 public:
  void Max(T v, bool lane_owner) { lane_owner ? own_.MaxAsOnlyWriter(v) : shared_.Max(v); }
  T Get() const {
    const T a = own_.Get(), b = shared_.Get();
    return a > b ? a : b;
  }

 private:
  RelaxedAtomic<T> own_, shared_;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_RELAXED_H_
