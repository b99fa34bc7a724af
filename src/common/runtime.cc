#include "common/runtime.h"

#include <exception>

#include "common/log.h"
#include "common/params.h"
#include "common/tsan_lock.h"
#include "common/unknown_env.h"

namespace ncclscope {
namespace {

// Debian's shared libabsl (linked with NCCLSCOPE_STATIC_ABSEIL=OFF and in the sanitizer builds) is built without
// NDEBUG, so its lock-order deadlock detector runs in every Mutex::Lock: a process-wide spinlock and graph update on
// each acquisition, a cost the job should not pay for telemetry. That graph is guarded by abseil's own
// uninstrumented spinlock, which ThreadSanitizer cannot see, so TSan reported races inside abseil itself
// (net_chain_concurrency in CI). TSan's own deadlock detector checks our lock order. (The static abseil, built
// with NDEBUG, has no detector: this is then a no-op.) Set at load, before any thread of ours exists.
[[maybe_unused]] const bool kAbseilDeadlockCheckOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

// A service that cannot start (no thread to be had, a file it reads throwing) is off with a warning: the
// job's init must not fail for telemetry, and the other services start all the same.
void StartService(Service* service) {
  try {
    service->Start();
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kInit, "runtime: %s did not start (%s); the job runs on without it", service->name(),
                   e.what());
  } catch (...) {
    NCCLSCOPE_WARN(subsys::kInit, "runtime: %s did not start; the job runs on without it", service->name());
  }
}

}  // namespace

Runtime& Runtime::Instance() {
  // Never destroyed: NCCL may call us from its threads during process exit.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

void Runtime::RegisterService(Service* service) {
  AnnotatedLock lock(&mu_);
  for (int i = 0; i < num_services_; ++i) {
    if (services_[i] == service) return;
  }
  if (num_services_ == kMaxServices) {
    NCCLSCOPE_WARN(subsys::kInit, "runtime: too many services, '%s' not registered", service->name());
    return;
  }
  services_[num_services_++] = service;
  if (users_ > 0) StartService(service);
}

void Runtime::Acquire(const char* who) {
  AnnotatedLock lock(&mu_);
  if (users_++ > 0) return;
  ++cycles_;
  ReloadParams();
  ReloadStderrLogLevel();
  WarnUnknownVariablesOnce();  // a typo in a variable's name would otherwise turn its feature off silently
  for (int i = 0; i < num_services_; ++i) StartService(services_[i]);
  NCCLSCOPE_INFO(subsys::kInit, "runtime started for %s (cycle %llu, %d services)", who,
                 static_cast<unsigned long long>(cycles_), num_services_);
}

void Runtime::Release(const char* who) {
  AnnotatedLock lock(&mu_);
  if (users_ == 0) {
    NCCLSCOPE_WARN(subsys::kInit, "runtime: release by %s without a matching acquire", who);
    return;
  }
  if (--users_ > 0) return;
  // Stop in reverse order of start, joining every thread before the last finalize returns.
  for (int i = num_services_ - 1; i >= 0; --i) services_[i]->Stop();
  NCCLSCOPE_INFO(subsys::kInit, "runtime stopped after %s", who);
}

int Runtime::services() const {
  AnnotatedLock lock(&mu_);
  return num_services_;
}

int Runtime::users() const {
  AnnotatedLock lock(&mu_);
  return users_;
}

uint64_t Runtime::cycles() const {
  AnnotatedLock lock(&mu_);
  return cycles_;
}

}  // namespace ncclscope
