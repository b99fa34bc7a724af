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

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_RELAXED_H_
