// The process runtime shared by the net and profiler halves. It counts users (profiler contexts,
// v11+ net contexts, and one reference for the legacy net ABIs, which have no finalize: held from
// their init until their last open net object closes, net/api/legacy_hold.h) and owns
// the plugin's long-lived threads as Services: they start when the count goes 0 -> 1 and are stopped
// and joined when it goes 1 -> 0, so the last finalize returns with no thread of ours running and the
// next init starts them again. The library is linked -z nodelete, so these globals survive dlclose
// and must stay correct over any number of cycles. All methods are thread-safe.
#ifndef NCCLSCOPE_COMMON_RUNTIME_H_
#define NCCLSCOPE_COMMON_RUNTIME_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ncclscope {

// A long-lived plugin thread (or group of threads). Start() and Stop() are called by the runtime
// with its lock held, never concurrently; Stop() must join everything Start() started.
class Service {
 public:
  virtual ~Service() = default;
  virtual const char* name() const = 0;
  virtual void Start() = 0;
  virtual void Stop() = 0;
};

class Runtime {
 public:
  static Runtime& Instance();

  // Services are registered once per process (they live in -z nodelete globals), all from
  // InstallPluginServices (src/plugin). Registering one twice is a no-op. A service registered while
  // users exist is started at once.
  void RegisterService(Service* service);
  int services() const;

  // `who` names the user in the INFO log line ("profiler comm 0x…", "net ctx", …).
  void Acquire(const char* who);
  void Release(const char* who);

  int users() const;
  // Completed 0 -> 1 transitions; tests use it to see that cycles really restart the runtime.
  uint64_t cycles() const;

 private:
  Runtime() = default;

  mutable absl::Mutex mu_;
  int users_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cycles_ ABSL_GUARDED_BY(mu_) = 0;
  static constexpr int kMaxServices = 8;
  Service* services_[kMaxServices] ABSL_GUARDED_BY(mu_) = {};
  int num_services_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_RUNTIME_H_
