#include "core/registry.h"

#include <unistd.h>

#include <algorithm>

#include "common/clock.h"
#include "common/tsan_lock.h"

namespace ncclscope {

CommRegistry& CommRegistry::Instance() {
  // Never destroyed: NCCL may still call us from its threads during process exit.
  static CommRegistry* registry = new CommRegistry();
  return *registry;
}

void CommRegistry::Add(CommSource* source) {
  AnnotatedLock lock(&mu_);
  sources_.push_back(source);
}

void CommRegistry::Remove(CommSource* source) {
  AnnotatedLock lock(&mu_);
  sources_.erase(std::remove(sources_.begin(), sources_.end(), source), sources_.end());
}

void CommRegistry::SetProcessSource(ProcessCounterSource* source) {
  AnnotatedLock lock(&mu_);
  process_ = source;
}

size_t CommRegistry::size() const {
  AnnotatedLock lock(&mu_);
  return sources_.size();
}

ProcessSnapshot CommRegistry::Snapshot(SnapshotScope scope) const {
  ProcessSnapshot out;
  out.pid = static_cast<int>(getpid());
  out.monotonic_ns = MonotonicNs();
  out.realtime_ns = RealtimeNs();
  AnnotatedLock lock(&mu_);
  out.comms.resize(sources_.size());
  for (size_t i = 0; i < sources_.size(); ++i) sources_[i]->Fill(&out.comms[i], scope);
  if (process_ != nullptr) process_->FillProcess(&out);
  return out;
}

CommRegistry::StallChanges CommRegistry::CollectStalls(uint64_t now_ns, uint64_t timeout_ns) {
  StallChanges out;
  AnnotatedLock lock(&mu_);
  for (CommSource* s : sources_) {
    CommSnapshot snap;
    switch (s->CheckStall(now_ns, timeout_ns, &snap)) {
      case StallChange::kStalled: out.stalled.push_back(std::move(snap)); break;
      case StallChange::kRecovered: out.recovered.push_back(std::move(snap)); break;
      case StallChange::kNone: break;
    }
  }
  return out;
}

void CommRegistry::AddDumpHook(CommDumpHook hook) {
  AnnotatedLock lock(&hooks_mu_);
  if (std::find(hooks_.begin(), hooks_.end(), hook) == hooks_.end()) hooks_.push_back(hook);
}

size_t CommRegistry::dump_hooks() const {
  AnnotatedLock lock(&hooks_mu_);
  return hooks_.size();
}

void CommRegistry::RunDumpHooks(const CommSnapshot& snap, DumpReason reason) const {
  std::vector<CommDumpHook> hooks;
  {
    AnnotatedLock lock(&hooks_mu_);
    hooks = hooks_;
  }
  for (CommDumpHook h : hooks) h(snap, reason);
}

}  // namespace ncclscope
