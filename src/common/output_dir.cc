#include "common/output_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "common/errno_text.h"
#include "common/hex.h"
#include "common/host.h"
#include "common/log.h"
#include "common/params.h"
#include "common/random.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

constexpr char kLockSuffix[] = ".lock";
constexpr char kTmpSuffix[] = ".tmp";
constexpr char kPendingLockSuffix[] = ".locking";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A name we may unlink on behalf of a dead owner: one of ours, no path separators.
bool IsOwnedOutputName(std::string_view name) {
  return name.rfind("ncclscope-", 0) == 0 && name.find('/') == std::string_view::npos && name.size() < 256;
}

// ".prom", ".json": a '.' and at least one letter, digit or '_', nothing else.
bool IsPlainExtension(std::string_view extension) {
  if (extension.size() < 2 || extension[0] != '.') return false;
  for (char c : extension.substr(1)) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Whether `out`, listed in the lock file of the owner `tag`, is that owner's own output: exactly the name
// OwnedName gave it, never a match by prefix (a lock named with the empty tag or with a prefix of a live
// owner's tag would otherwise claim the live owner's textfile).
bool ClaimedBy(const std::string& out, const std::string& tag) {
  const size_t dot = out.rfind('.');
  return dot != std::string::npos && OwnedOutputName(tag, std::string_view(out).substr(dot)) == out;
}

Status WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(StatusCode::kSystem, std::strerror(errno));
    if (n == 0) return Status(StatusCode::kSystem, "write returned 0");
    text.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::string ReadSmallFile(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while (out.size() < (1 << 20) && (n = pread(fd, buf, sizeof(buf), static_cast<off_t>(out.size()))) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Every folder this process writes to; leaked (-z nodelete, and used by the exit hook below).
struct Registry {
  absl::Mutex mu;
  std::map<std::string, std::unique_ptr<OutputDir>> dirs ABSL_GUARDED_BY(mu);
};
Registry& Dirs() {
  static auto* registry = new Registry();
  return *registry;
}

// At a clean exit the owner locks' mtimes are set to now: the grace of our outputs starts at our end.
struct ExitHook {
  ~ExitHook() { OutputDir::TouchAll(); }
} g_exit_hook;

// Wall-clock nanoseconds, the clock of file mtimes.
int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

ABSL_CONST_INIT absl::Mutex g_failed_mu(absl::kConstInit);
std::set<std::string>& FailedFiles() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_failed_mu) {
  static auto* files = new std::set<std::string>();  // -z nodelete: lives for the process
  return *files;
}

}  // namespace

Status ReportWriteFailure(const std::string& file, const Status& status, unsigned long log_flags) {
  bool first;
  {
    AnnotatedLock lock(&g_failed_mu);
    first = FailedFiles().insert(file).second;
  }
  if (first) {
    NCCLSCOPE_WARN(log_flags, "cannot write %s: %s (the previous file, if any, is kept; warned once)",
                   file.c_str(), status.message().c_str());
  }
  return status;
}

void ReportWriteOk(const std::string& file) {
  AnnotatedLock lock(&g_failed_mu);
  if (FailedFiles().erase(file) > 0) NCCLSCOPE_INFO(subsys::kAll, "%s is written again", file.c_str());
}

Status WriteFileAtomically(const std::string& dir, const std::string& name, std::string_view text) {
  Result<OutputDir*> out = OutputDir::Get(dir);
  if (!out.ok()) return ReportWriteFailure(dir + "/" + name, out.status(), subsys::kAll);
  return (*out)->WriteAtomically(name, text);
}

Status WriteFileAtomicallyIn(const std::string& dir, const std::string& subdir, const std::string& name,
                             std::string_view text) {
  Result<OutputDir*> out = OutputDir::Get(dir);
  if (!out.ok()) return ReportWriteFailure(dir + "/" + subdir + "/" + name, out.status(), subsys::kAll);
  return (*out)->WriteAtomicallyIn(subdir, name, text);
}

Result<OutputDir*> OutputDir::Get(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("output directory is empty");
  Registry& reg = Dirs();
  OutputDir* d;
  {
    AnnotatedLock lock(&reg.mu);
    auto& slot = reg.dirs[dir];
    if (!slot) {
      slot.reset(new OutputDir(dir, HostName() + "-" + std::to_string(getpid()) + "-" + RandomHex().substr(0, 8)));
    }
    d = slot.get();
  }
  Status s = d->EnsureOpen();
  if (!s.ok()) return s;
  return d;
}

Status OutputDir::EnsureOpen() {
  AnnotatedLock lock(&mu_);
  return ReadyLocked();
}

Status OutputDir::ReadyLocked() {
  struct stat st;
  // A folder removed since we opened it (tests reuse names; users clean up) is opened afresh, at the place it
  // was first resolved (PinnedDir); so is one whose opening failed half-way (every descriptor must be there: a
  // refused work folder is never used).
  if (dir_fd_ >= 0 && work_fd_ >= 0 && lock_fd_ >= 0 && fstat(dir_fd_, &st) == 0 && st.st_nlink > 0) {
    return Status::Ok();
  }
  Status s = OpenLocked();
  if (!s.ok()) CloseLocked();
  return s;
}

void OutputDir::CloseLocked() {
  for (int* fd : {&lock_fd_, &work_fd_, &dir_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

Status OutputDir::OpenLocked() {
  CloseLocked();
  Result<int> dir = pinned_.Open();
  if (!dir.ok()) return dir.status();
  dir_fd_ = *dir;

  const std::string work = ".ncclscope-work-" + std::to_string(geteuid());
  if (mkdirat(dir_fd_, work.c_str(), 0700) != 0 && errno != EEXIST) {
    return SystemError(WithErrno("cannot create " + path_ + "/" + work, errno));
  }
  work_fd_ = openat(dir_fd_, work.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (work_fd_ < 0) return SystemError(WithErrno("cannot open " + path_ + "/" + work + " (a link?)", errno));
  if (fstat(work_fd_, &st) != 0 || st.st_uid != geteuid()) {
    return SystemError(path_ + "/" + work + " belongs to another user; not writing there");
  }
  // Ours but open to others (a default ACL on a shared project folder adds group bits): close it again.
  if ((st.st_mode & 0077) != 0 && fchmod(work_fd_, 0700) != 0) {
    return SystemError(WithErrno(path_ + "/" + work + " is open to others and cannot be closed (chmod 0700)", errno));
  }

  // Created under a temporary name, locked, then renamed: a sweeper never sees our lock file unlocked. A
  // sweeper may still take the pending file in the instant before we lock it (and remove it): try again.
  const std::string lock_name = tag_ + kLockSuffix;
  int err = 0;
  for (int attempt = 0; attempt < 8 && lock_fd_ < 0; ++attempt) {
    const std::string pending = tag_ + "-" + RandomHex() + kPendingLockSuffix;
    int fd = openat(work_fd_, pending.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      err = errno;
      break;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && renameat(work_fd_, pending.c_str(), work_fd_, lock_name.c_str()) == 0) {
      lock_fd_ = fd;
    } else {
      err = errno;
      close(fd);
    }
  }
  if (lock_fd_ < 0) return SystemError(WithErrno("cannot take the owner lock in " + path_ + "/" + work, err));
  if (!owned_.empty()) (void)WriteAll(lock_fd_, owned_);
  SweepLocked();
  return Status::Ok();
}

void OutputDir::SweepLocked() {
  std::vector<std::string> removed;
  SweepWorkFolder(dir_fd_, work_fd_, tag_, Params().Int(ParamId::kOutputGraceS), NowNs(), &removed);
  for (const std::string& name : removed) {
    NCCLSCOPE_INFO(subsys::kAll, "removed %s/%s (its process is gone and the grace has passed)", path_.c_str(),
                   name.c_str());
  }
}

void OutputDir::Maintain() {
  AnnotatedLock lock(&mu_);
  // Only a folder that is open and still there: a pass never re-creates one removed meanwhile (the next
  // write does, as before).
  struct stat st;
  if (dir_fd_ < 0 || work_fd_ < 0 || lock_fd_ < 0 || fstat(dir_fd_, &st) != 0 || st.st_nlink == 0) return;
  TouchLocked();
  SweepLocked();
}

void OutputDir::TouchLocked() {
  if (lock_fd_ >= 0) (void)futimens(lock_fd_, nullptr);
}

std::vector<OutputDir*> OutputDir::All() {
  Registry& reg = Dirs();
  AnnotatedLock lock(&reg.mu);
  std::vector<OutputDir*> out;
  for (auto& [path, dir] : reg.dirs) out.push_back(dir.get());
  return out;
}

void OutputDir::MaintainAll() {
  for (OutputDir* d : All()) d->Maintain();
}

void OutputDir::TouchAll() {
  for (OutputDir* d : All()) {
    // At exit other threads may still run: never wait on one (a writer holding the lock touches it itself).
    if (!d->mu_.TryLock()) continue;
    NCCLSCOPE_TSAN_ACQUIRE(&d->mu_);
    d->TouchLocked();
    NCCLSCOPE_TSAN_RELEASE(&d->mu_);
    d->mu_.Unlock();
  }
}

namespace {
// Every name in the folder `fd` refers to (fd stays open). The dup shares the folder offset, which an earlier
// listing left at the end: rewind first.
std::vector<std::string> ListNames(int fd) {
  std::vector<std::string> names;
  DIR* d = fdopendir(dup(fd));
  if (d == nullptr) return names;
  rewinddir(d);
  while (dirent* e = readdir(d)) names.emplace_back(e->d_name);
  closedir(d);
  return names;
}
}  // namespace

void SweepWorkFolder(int dir_fd, int work_fd, const std::string& own_tag, int64_t grace_s, int64_t now_ns,
                     std::vector<std::string>* removed) {
  const std::vector<std::string> names = ListNames(work_fd);
  if (names.empty()) return;
  struct stat work_st;
  if (fstat(work_fd, &work_st) != 0) return;

  // Owners that may still write temporary files: the live ones.
  std::set<std::string> live_tags;
  if (!own_tag.empty()) live_tags.insert(own_tag);
  for (const std::string& name : names) {
    const bool lock = EndsWith(name, kLockSuffix), pending = EndsWith(name, kPendingLockSuffix);
    if ((!lock && !pending) || (!own_tag.empty() && name == own_tag + kLockSuffix)) continue;
    const std::string tag = lock ? name.substr(0, name.size() - sizeof(kLockSuffix) + 1) : name.substr(0, name.rfind('-'));
    // Read-write: NFS emulates flock with byte-range locks, and an exclusive one needs a writable descriptor.
    int fd = openat(work_fd, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT && pending) live_tags.insert(tag);  // renamed to its .lock meanwhile: alive
      continue;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {  // held: its owner lives, its files stay
      live_tags.insert(tag);
      close(fd);
      continue;
    }
    if (pending) {  // its creator died before renaming it, or will retry under another name
      unlinkat(work_fd, name.c_str(), 0);
      close(fd);
      continue;
    }
    // The owner is gone. Its grace starts at the lock file's mtime: the owner sets it at every write into
    // the folder, every maintenance pass (OutputDir::MaintainAll) and at a clean exit.
    struct stat st;
    const bool stat_ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    const int64_t mtime_ns = stat_ok ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : 0;
    if (!stat_ok || now_ns - mtime_ns < grace_s * 1000000000) {
      close(fd);  // within its grace: its outputs stay (its temporary files are garbage already)
      continue;
    }
    // Remove the outputs it listed, then its lock (still holding it, so a second sweeper that gets the lock
    // after us finds nothing left to do). Only names it owns: OwnedOutputName(tag, an extension), no
    // separator, and a file (or link) of the work folder's user, never followed.
    std::string owned = ReadSmallFile(fd);
    for (size_t pos = 0, end; pos < owned.size(); pos = end + 1) {
      end = owned.find('\n', pos);
      if (end == std::string::npos) end = owned.size();
      const std::string out = owned.substr(pos, end - pos);
      struct stat out_st;
      if (!IsOwnedOutputName(out) || !ClaimedBy(out, tag)) continue;
      if (fstatat(dir_fd, out.c_str(), &out_st, AT_SYMLINK_NOFOLLOW) != 0 || out_st.st_uid != work_st.st_uid) continue;
      if (unlinkat(dir_fd, out.c_str(), 0) == 0 && removed != nullptr) removed->push_back(out);
    }
    unlinkat(work_fd, name.c_str(), 0);
    close(fd);
  }
  // Temporary files of owners that are not alive.
  for (const std::string& name : names) {
    if (!EndsWith(name, kTmpSuffix)) continue;
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos || live_tags.count(name.substr(0, dash)) == 0) unlinkat(work_fd, name.c_str(), 0);
  }
}

Status SweepStaleOutputs(const std::string& dir, int64_t grace_s, std::vector<std::string>* removed) {
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) return SystemError(WithErrno("cannot open " + dir, errno));
  std::vector<std::string> works;
  for (const std::string& name : ListNames(dir_fd)) {
    if (name.rfind(".ncclscope-work-", 0) == 0) works.push_back(name);
  }
  Status status = Status::Ok();
  for (const std::string& work : works) {
    // The folder of the user its name says, never through a link.
    int work_fd = openat(dir_fd, work.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (work_fd < 0) {
      status = SystemError(WithErrno("cannot open " + dir + "/" + work, errno));
      continue;
    }
    struct stat st;
    if (fstat(work_fd, &st) != 0 || work != ".ncclscope-work-" + std::to_string(st.st_uid)) {
      status = SystemError(dir + "/" + work + " does not belong to the user its name says; skipped");
      close(work_fd);
      continue;
    }
    SweepWorkFolder(dir_fd, work_fd, "", grace_s, NowNs(), removed);
    close(work_fd);
  }
  close(dir_fd);
  return status;
}

Status OutputDir::WriteAtomically(const std::string& name, std::string_view text) {
  AnnotatedLock lock(&mu_);  // one writer per folder at a time: writes are rare and short
  Status ready = ReadyLocked();
  if (!ready.ok()) return ReportWriteFailure(path_ + "/" + name, ready, subsys::kAll);
  return WriteIntoLocked(dir_fd_, path_ + "/" + name, name, text);
}

Status OutputDir::WriteAtomicallyIn(const std::string& subdir, const std::string& name, std::string_view text) {
  const std::string file = path_ + "/" + subdir + "/" + name;
  if (subdir.empty() || subdir == "." || subdir == ".." || subdir.find('/') != std::string::npos) {
    return ReportWriteFailure(file, InvalidArgument("not one folder name: '" + subdir + "'"), subsys::kAll);
  }
  AnnotatedLock lock(&mu_);
  Status ready = ReadyLocked();
  if (!ready.ok()) return ReportWriteFailure(file, ready, subsys::kAll);
  if (mkdirat(dir_fd_, subdir.c_str(), 0777) != 0 && errno != EEXIST) {
    return ReportWriteFailure(file, SystemError(WithErrno("cannot create " + path_ + "/" + subdir, errno)), subsys::kAll);
  }
  // O_NOFOLLOW: a link planted at the folder's name is refused, never followed to where it points.
  int sub_fd = openat(dir_fd_, subdir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub_fd < 0) {
    return ReportWriteFailure(file, SystemError(WithErrno("cannot open " + path_ + "/" + subdir + " (a link?)", errno)),
                              subsys::kAll);
  }
  struct stat st;
  Status s = Status::Ok();
  if (fstat(sub_fd, &st) != 0 || st.st_uid != geteuid()) {
    s = ReportWriteFailure(file, SystemError(path_ + "/" + subdir + " belongs to another user; not writing there"),
                           subsys::kAll);
  } else {
    s = WriteIntoLocked(sub_fd, file, name, text);
  }
  close(sub_fd);
  return s;
}

// Writes a temporary file in the work folder and renames it to `name` in `target_fd`.
Status OutputDir::WriteIntoLocked(int target_fd, const std::string& file, const std::string& name,
                                  std::string_view text) {
  const int work_fd = work_fd_;
  const std::string tmp = tag_ + "-" + RandomHex() + kTmpSuffix;
  int fd = openat(work_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return ReportWriteFailure(file, SystemError(WithErrno("cannot create a temporary file", errno)), subsys::kAll);
  Status s = WriteAll(fd, text);
  if (close(fd) != 0 && s.ok()) s = SystemError(WithErrno("close", errno));  // NFS reports write errors here
  if (s.ok() && renameat(work_fd, tmp.c_str(), target_fd, name.c_str()) != 0) s = SystemError(WithErrno("rename", errno));
  if (!s.ok()) {
    unlinkat(work_fd, tmp.c_str(), 0);
    return ReportWriteFailure(file, s, subsys::kAll);
  }
  TouchLocked();  // a sign of life: the grace of our outputs counts from our last one
  ReportWriteOk(file);
  return Status::Ok();
}

Result<int> OutputDir::CreateExclusive(const std::string& name) {
  AnnotatedLock lock(&mu_);
  NCCLSCOPE_RETURN_IF_ERROR(ReadyLocked());
  int fd = openat(dir_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0666);
  if (fd < 0) return SystemError(WithErrno("cannot create " + path_ + "/" + name, errno));
  return fd;
}

std::string OwnedOutputName(std::string_view tag, std::string_view extension) {
  if (tag.empty() || !IsPlainExtension(extension)) return "";
  return "ncclscope-" + std::string(tag) + std::string(extension);
}

std::string OutputDir::OwnedName(std::string_view extension) {
  std::string name = OwnedOutputName(tag_, extension);
  if (name.empty()) {  // a caller's bug: no sweep could claim the name, so it is not listed (never removed)
    NCCLSCOPE_WARN(subsys::kAll, "output name extension '%.*s' is not plain; the file will not be cleaned up",
                   static_cast<int>(extension.size()), extension.data());
    return "ncclscope-" + tag_ + std::string(extension);
  }
  AnnotatedLock lock(&mu_);
  if (owned_.find(name + "\n") == std::string::npos) {
    owned_ += name + "\n";
    if (lock_fd_ >= 0) (void)!pwrite(lock_fd_, owned_.data(), owned_.size(), 0);
  }
  return name;
}

}  // namespace ncclscope
