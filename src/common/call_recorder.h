// Recording mode (NCCLSCOPE_RECORD_DIR): every profiler and net plugin call NCCL makes, in the order the
// calls finished, as one JSON object per line (format "ncclscope.record.v1"), with the calling thread and
// its name. Pointers NCCL gets from us (contexts, event handles, comms, requests) become stable ids ("h12",
// "c1"); a pointer we never handed out is written as "?" plus its value, never dereferenced (PXN parents).
// This is a capture tool for golden traces, not a production path: one lock serialises the writers.
// When recording is off, Get() is one load and a branch.
#ifndef NCCLSCOPE_COMMON_CALL_RECORDER_H_
#define NCCLSCOPE_COMMON_CALL_RECORDER_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/tsan_lock.h"

namespace ncclscope::record {

class Recorder;

// The fields of one line, appended in call order. A Line only lives inside Recorder::Write(), under the
// recorder's lock; its methods assert that, which is also what tells the thread-safety analysis.
class Line {
 public:
  Line& Str(const char* key, const char* value);  // nullptr → null
  Line& Int(const char* key, int64_t value);
  Line& Uint(const char* key, uint64_t value);
  Line& Hex(const char* key, uint64_t value);
  Line& Ptr(const char* key, const void* p) { return Hex(key, reinterpret_cast<uintptr_t>(p)); }
  Line& Bool(const char* key, bool value);
  Line& Null(const char* key);
  // A pointer we just handed to NCCL: a fresh id with this prefix (a reused address gets a new id).
  Line& NewId(const char* key, const void* p, char prefix);
  // A pointer that may already have an id (e.g. a comm handed back as its own memory handle): keep it.
  Line& SameOrNewId(const char* key, const void* p, char prefix);
  // A pointer NCCL passed back: its current id, "?0x…" when we never handed it out, null when NULL.
  Line& Ref(const char* key, const void* p);
  Line& Open(const char* key);  // a nested object, closed by Close()
  Line& Close();

 private:
  friend class Recorder;
  explicit Line(Recorder* r) : r_(r) {}
  void Key(const char* key);
  Recorder* r_;
  bool first_ = true;
};

class Recorder {
 public:
  // The process's recorder, or nullptr when NCCLSCOPE_RECORD_DIR is unset or the file cannot be opened.
  static Recorder* Get() {
    static Recorder* const instance = Create();
    return instance;
  }

  // Writes one line {"i":…, "t":…, "tid":…, "call":call, <fill's fields>}.
  template <class Fill>
  void Write(const char* call, Fill&& fill) {
    AnnotatedLock lock(&mu_);
    Line line = BeginLocked(call);
    fill(line);
    EndLocked();
  }
  // Counts calls that are not worth a line each (a test() that is not done, an isend that must be retried):
  // Tally(key) adds one; Take(key) returns the count and resets it, for the line that is finally written.
  void Tally(const void* key);
  uint64_t Take(const void* key);
  // True (and tallied under `key`) when `signature` equals the last one seen for `key`: a repeat to fold.
  bool Repeat(const void* key, uint64_t signature);
  // Forgets `key`'s signature (its object is gone; the address may come back as a new object).
  void Forget(const void* key);
  // Event handles in recording mode: NCCL gets a fresh token per event instead of our handle (ours can be
  // shared, e.g. one per operation for all its KernelCh events), so the trace tells NCCL's events apart.
  // Tokens are addresses in a reserved, inaccessible region: never a real pointer, never dereferenced.
  // A token stays valid after its event stops (NCCL starts children of stopped parents): ~40 bytes per
  // event for the life of the process, which is why recording is for captures, not for production.
  void* Wrap(void* handle);             // nullptr stays nullptr
  void* Unwrap(const void* token);      // our handle; anything that is no token (NULL, PXN) comes back as is
  void Flush();
  const std::string& path() const { return path_; }

 private:
  friend class Line;
  static Recorder* Create();
  Recorder(int fd, std::string path);
  Line BeginLocked(const char* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int ThreadIdLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // Set by the constructor, read-only after.
  const int fd_;
  const std::string path_;
  const uint64_t t0_ns_ = 0;
  std::string buf_ ABSL_GUARDED_BY(mu_);
  uint64_t next_line_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;  // warned once
  struct Id {
    char prefix;
    uint64_t number;
  };
  absl::flat_hash_map<uintptr_t, Id> ids_ ABSL_GUARDED_BY(mu_);  // pointer → its latest id
  absl::flat_hash_map<int, int> threads_ ABSL_GUARDED_BY(mu_);   // kernel tid → small id
  absl::flat_hash_map<uintptr_t, uint64_t> tallies_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uintptr_t, uint64_t> last_signature_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uintptr_t, void*> tokens_ ABSL_GUARDED_BY(mu_);  // token → our handle
  uintptr_t token_base_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ncclscope::record

#endif  // NCCLSCOPE_COMMON_CALL_RECORDER_H_
