// The live-communicator registry: one process-wide list of communicators that can describe
// themselves as a CommSnapshot, guarded by one annotated absl::Mutex. It is taken only when a
// communicator is registered or removed (init/finalize), by the stall watch, and when an exporter
// takes a snapshot -- never per event. Also holds the dump hooks the exporters install: the profiler
// calls them with a communicator's snapshot at finalize and when the stall watch fires.
#ifndef NCCLSCOPE_CORE_REGISTRY_H_
#define NCCLSCOPE_CORE_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/snapshot.h"

namespace ncclscope {

// How much of each communicator a snapshot copies. Scrapes need totals and the in-flight operations, not
// the flight recorder (2,048 records, about 300 KB per communicator at the default depth).
enum class SnapshotScope { kFull, kWithoutRecorder };

enum class StallChange { kNone, kStalled, kRecovered };

// Implemented by whoever owns a communicator's live state (the profiler's context).
class CommSource {
 public:
  virtual ~CommSource() = default;
  // Fills a consistent copy (`completed` left empty with kWithoutRecorder); called with the registry lock
  // held, must not call back into it.
  virtual void Fill(CommSnapshot* out, SnapshotScope scope = SnapshotScope::kFull) const = 0;
  // Stall watch: kStalled (and `out` filled) when this source newly became stalled at `now_ns`, kRecovered (and
  // `out` filled) when the stall it last reported is over.
  virtual StallChange CheckStall(uint64_t now_ns, uint64_t timeout_ns, CommSnapshot* out) {
    return StallChange::kNone;
  }
};

// Process-level counters that belong to no communicator (events with a NULL context, PXN).
class ProcessCounterSource {
 public:
  virtual ~ProcessCounterSource() = default;
  virtual void FillProcess(ProcessSnapshot* out) const = 0;
};

// kRecovered: a stalled communicator went on (its stall dump stays on disk; this one shows the stall is over).
enum class DumpReason { kFinalize, kStall, kRequest, kRecovered };
using CommDumpHook = void (*)(const CommSnapshot& snap, DumpReason reason);

class CommRegistry {
 public:
  static CommRegistry& Instance();

  void Add(CommSource* source);
  void Remove(CommSource* source);
  void SetProcessSource(ProcessCounterSource* source);
  size_t size() const;

  // A consistent copy of every live communicator, plus process-level counters.
  ProcessSnapshot Snapshot(SnapshotScope scope = SnapshotScope::kFull) const;
  // Runs CheckStall on every source under the lock: the newly stalled ones and those whose stall is over.
  struct StallChanges {
    std::vector<CommSnapshot> stalled, recovered;
  };
  StallChanges CollectStalls(uint64_t now_ns, uint64_t timeout_ns);

  // Hooks are process-wide and live for the process (the library is -z nodelete); all are added by
  // InstallPluginServices (src/plugin). Adding one twice is a no-op. They run in the order added.
  void AddDumpHook(CommDumpHook hook);
  void RunDumpHooks(const CommSnapshot& snap, DumpReason reason) const;
  size_t dump_hooks() const;

 private:
  CommRegistry() = default;
  mutable absl::Mutex mu_;
  std::vector<CommSource*> sources_ ABSL_GUARDED_BY(mu_);
  ProcessCounterSource* process_ ABSL_GUARDED_BY(mu_) = nullptr;
  mutable absl::Mutex hooks_mu_;
  std::vector<CommDumpHook> hooks_ ABSL_GUARDED_BY(hooks_mu_);
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_REGISTRY_H_
