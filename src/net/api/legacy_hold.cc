#include "net/api/legacy_hold.h"

#include <unordered_set>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/runtime.h"
#include "common/tsan_lock.h"

namespace ncclscope::net {
namespace {

// -z nodelete globals: the state outlives a dlclose, as the runtime's reference does.
ABSL_CONST_INIT absl::Mutex hold_mu(absl::kConstInit);
bool held_ ABSL_GUARDED_BY(hold_mu) = false;
std::unordered_set<const void*>* open_ ABSL_GUARDED_BY(hold_mu) = nullptr;  // never freed

std::unordered_set<const void*>& Open() ABSL_EXCLUSIVE_LOCKS_REQUIRED(hold_mu) {
  if (open_ == nullptr) open_ = new std::unordered_set<const void*>();
  return *open_;
}

}  // namespace

LegacyHold& LegacyHold::Instance() {
  static LegacyHold* hold = new LegacyHold();
  return *hold;
}

void LegacyHold::OnInit() {
  AnnotatedLock lock(&hold_mu);
  if (held_) return;
  held_ = true;
  Runtime::Instance().Acquire("net (v8-v10 init)");
}

void LegacyHold::OnOpen(const void* object) {
  if (object == nullptr) return;  // connect/accept "not yet"
  AnnotatedLock lock(&hold_mu);
  Open().insert(object);
  if (held_) return;
  held_ = true;
  Runtime::Instance().Acquire("net (v8-v10 open)");
}

bool LegacyHold::Forget(const void* object) {
  AnnotatedLock lock(&hold_mu);
  return Open().erase(object) > 0;
}

void LegacyHold::AfterClose() {
  AnnotatedLock lock(&hold_mu);
  // Decided under the lock: an object opened since Forget keeps the reference.
  if (!held_ || !Open().empty()) return;
  held_ = false;
  Runtime::Instance().Release("net (last v8-v10 object closed)");
}

bool LegacyHold::IsOpen(const void* object) {
  AnnotatedLock lock(&hold_mu);
  return Open().count(object) > 0;
}

bool LegacyHold::held() {
  AnnotatedLock lock(&hold_mu);
  return held_;
}

int LegacyHold::open_objects() {
  AnnotatedLock lock(&hold_mu);
  return static_cast<int>(Open().size());
}

}  // namespace ncclscope::net
