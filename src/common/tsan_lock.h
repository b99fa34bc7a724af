// AnnotatedLock: an absl::MutexLock that also tells ThreadSanitizer about the happens-before edge.
// Debian's shared abseil is not built with TSan, so its Mutex is invisible to the sanitizer and every
// structure it guards would be reported as racing. Outside TSan builds this is exactly absl::MutexLock.
#ifndef NCCLSCOPE_COMMON_TSAN_LOCK_H_
#define NCCLSCOPE_COMMON_TSAN_LOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

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

// cv->WaitWithDeadline for a caller holding `mu` through an AnnotatedLock; true when the deadline passed.
// The wait unlocks and relocks `mu` behind TSan's back: the release/acquire pair tells it so. (A
// Mutex::Await condition would be read by other threads inside abseil, where TSan cannot see the lock.)
inline bool AnnotatedWait(absl::CondVar* cv, absl::Mutex* mu, absl::Time deadline = absl::InfiniteFuture())
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  NCCLSCOPE_TSAN_RELEASE(mu);
  const bool timed_out = cv->WaitWithDeadline(mu, deadline);
  NCCLSCOPE_TSAN_ACQUIRE(mu);
  return timed_out;
}

// Waits on `cv` until `*flag` is set or `timeout` has passed; returns *flag. As AnnotatedWait.
inline bool AnnotatedWaitFor(absl::CondVar* cv, absl::Mutex* mu, const bool* flag, absl::Duration timeout)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!*flag && !AnnotatedWait(cv, mu, deadline)) {
  }
  return *flag;
}

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_TSAN_LOCK_H_
