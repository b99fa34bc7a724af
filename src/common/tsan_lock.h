// AnnotatedLock: an absl::MutexLock that also tells ThreadSanitizer about the happens-before edge.
// Debian's shared abseil is not built with TSan, so its Mutex is invisible to the sanitizer and every
// structure it guards would be reported as racing. Outside TSan builds this is exactly absl::MutexLock.
#ifndef NCCLSCOPE_COMMON_TSAN_LOCK_H_
#define NCCLSCOPE_COMMON_TSAN_LOCK_H_

#include "absl/synchronization/mutex.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define NCCLSCOPE_TSAN_ACQUIRE(p) __tsan_acquire(const_cast<void*>(static_cast<const void*>(p)))
#define NCCLSCOPE_TSAN_RELEASE(p) __tsan_release(const_cast<void*>(static_cast<const void*>(p)))
#else
#define NCCLSCOPE_TSAN_ACQUIRE(p) ((void)(p))
#define NCCLSCOPE_TSAN_RELEASE(p) ((void)(p))
#endif

namespace ncclscope {

class ABSL_SCOPED_LOCKABLE AnnotatedLock {
 public:
  explicit AnnotatedLock(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
    NCCLSCOPE_TSAN_ACQUIRE(mu_);
  }
  ~AnnotatedLock() ABSL_UNLOCK_FUNCTION() {
    NCCLSCOPE_TSAN_RELEASE(mu_);
    mu_->Unlock();
  }
  AnnotatedLock(const AnnotatedLock&) = delete;
  AnnotatedLock& operator=(const AnnotatedLock&) = delete;

 private:
  absl::Mutex* const mu_;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_TSAN_LOCK_H_
