// OutputDir: the one way ncclscope writes files (dumps, traces, textfiles, file_sd targets, recordings), safe
// in a directory other users can write to and on a full file system.
//  - The folder is resolved once, at first use, and held open (PinnedDir): every file is created and renamed
//    relative to that handle (openat/renameat), so a folder swapped for a link mid-job is never followed; one
//    removed mid-job is re-created at the same place, never through a link at its name.
//  - Temporary files are created exclusively (O_EXCL | O_NOFOLLOW) under unpredictable names in a private
//    work folder, `.ncclscope-work-<uid>` (mode 0700, opened without following links, owner checked), and
//    renamed over the final name: a symlink planted at any name we use is replaced or refused, never
//    followed, so its target is never written.
//  - Permissions come from the umask (node_exporter and Prometheus read our files as other users).
//  - Every write and the close are checked; a failure leaves the previous file whole, removes the temporary
//    file and warns once per file (again after it has succeeded in between).
//  - Each process holds an flock on `<tag>.lock` in the work folder for as long as it lives (a lock, unlike
//    a pid, means the same thing across PID namespaces); the lock file lists the outputs it owns (OwnedName:
//    the textfile, the file_sd target). An owned output is never removed while its owner's lock is held,
//    and not at the owner's exit either: it stays NCCLSCOPE_OUTPUT_GRACE_S (60 s) after the owner was last
//    known alive, so that a last scrape sees its final values and a crashed rank shows as down. That moment
//    is the lock file's mtime, which the owner sets at every write into the folder, at every Maintain()
//    (MaintainAll: the janitor service, every min(10 s, grace/2)) and at a clean exit. Whoever opens the
//    folder, every Maintain(), and `ncclscope-cleanup` remove the owned outputs and the lock of every owner
//    whose lock is free and whose grace has passed, and the temporary files of owners that are not alive.
// Thread-safe: Get() and every method may be called from any thread; writes to different names run
// concurrently.
#ifndef NCCLSCOPE_COMMON_OUTPUT_DIR_H_
#define NCCLSCOPE_COMMON_OUTPUT_DIR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/pinned_dir.h"
#include "common/status.h"

namespace ncclscope {

class OutputDir {
 public:
  // This process's handle on `dir` (created if missing), shared by every writer; lives for the process.
  static Result<OutputDir*> Get(const std::string& dir);

  // Replaces dir/name with `text` atomically (readers see the old file or the new one, never half).
  Status WriteAtomically(const std::string& name, std::string_view text);
  // The same into dir/subdir/name: `subdir` is one path component, created (umask permissions) if missing,
  // opened without following a link and refused unless it is a directory of this user (a folder another user
  // planted there could have our files replaced). The temporary file is made in the work folder as above.
  Status WriteAtomicallyIn(const std::string& subdir, const std::string& name, std::string_view text);
  // Creates dir/name exclusively for appending (never through a link, never an existing file); the caller
  // owns the descriptor. Fails with EEXIST's message when the name is taken.
  Result<int> CreateExclusive(const std::string& name);
  // OwnedOutputName(this process's tag, extension): a name bound to this process's lock, removed once the
  // process is gone and NCCLSCOPE_OUTPUT_GRACE_S has passed (swept by the next process on this folder).
  // `extension` is one plain extension (".prom"); any other is a bug: the name is then not listed (kept).
  std::string OwnedName(std::string_view extension);
  // A sign of life (the lock's mtime) and a sweep of stale outputs; nothing when the folder is not open or
  // has been removed (a pass never re-creates it).
  void Maintain();

  // Every folder this process has opened.
  static std::vector<OutputDir*> All();
  static void MaintainAll();
  // Sets the mtime of every owner lock of this process to now (at exit: the grace starts).
  static void TouchAll();

  const std::string& path() const { return path_; }
  const std::string& tag() const { return tag_; }

 private:
  OutputDir(std::string path, std::string tag) : path_(std::move(path)), tag_(std::move(tag)), pinned_(path_) {}
  // (re)opens the folder and the work folder, takes the lock, sweeps leftovers
  Status OpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status EnsureOpen();
  Status ReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // opens the folder unless it is open and still exists
  void SweepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TouchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status WriteIntoLocked(int target_fd, const std::string& file, const std::string& name, std::string_view text)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::string path_;
  const std::string tag_;
  PinnedDir pinned_ ABSL_GUARDED_BY(mu_);  // where dir_fd_ is (re)opened: resolved once
  int dir_fd_ ABSL_GUARDED_BY(mu_) = -1;
  int work_fd_ ABSL_GUARDED_BY(mu_) = -1;
  int lock_fd_ ABSL_GUARDED_BY(mu_) = -1;
  std::string owned_ ABSL_GUARDED_BY(mu_);  // the lock file's content: one owned name per line
};

// "ncclscope-<tag><extension>", the name of an output owned by the owner `tag` (OutputDir::OwnedName writes
// under it, the sweep claims only it); "" when `tag` is empty or `extension` is not one '.' followed by
// letters, digits or '_'. With one plain extension the split of a name into tag and extension is unique (at
// its last '.'), so no other tag, a prefix of it or the empty one included, yields the same name.
std::string OwnedOutputName(std::string_view tag, std::string_view extension);

// Sweeps one work folder (`work_fd`, in the output folder `dir_fd`): for every owner lock but `own_tag`'s that
// is free and whose mtime is at least `grace_s` before `now_ns` (wall clock), removes the outputs it lists and the lock;
// removes the temporary files of owners that are not alive. A lock claims only the listed names that are
// OwnedOutputName(its tag, an extension), anything else it lists is left alone. The names removed
// from the output folder are appended to `removed` (may be null).
void SweepWorkFolder(int dir_fd, int work_fd, const std::string& own_tag, int64_t grace_s, int64_t now_ns,
                     std::vector<std::string>* removed);
// SweepWorkFolder over every `.ncclscope-work-<uid>` of `dir` (what ncclscope-cleanup does; takes no lock of
// its own and creates nothing). A work folder that cannot be opened or is not its user's is skipped; the
// status then names the last one.
Status SweepStaleOutputs(const std::string& dir, int64_t grace_s, std::vector<std::string>* removed);

// OutputDir::Get(dir)->WriteAtomically(name, text); a folder that cannot be opened is reported (once) too.
Status WriteFileAtomically(const std::string& dir, const std::string& name, std::string_view text);
// OutputDir::Get(dir)->WriteAtomicallyIn(subdir, name, text), reported the same way.
Status WriteFileAtomicallyIn(const std::string& dir, const std::string& subdir, const std::string& name,
                             std::string_view text);

// Logs a failed write of `file` once (until ReportWriteOk(file) re-arms it); returns `status`.
Status ReportWriteFailure(const std::string& file, const Status& status, unsigned long log_flags);
void ReportWriteOk(const std::string& file);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_OUTPUT_DIR_H_
