#include "host_nics/host_speaker.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/log.h"
#include "common/tsan_lock.h"

namespace ncclscope {

HostSpeaker::~HostSpeaker() {
  AnnotatedLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Whether `fd` is still the file at `path`: a lock file its last holder (or a sweep) removed after we opened it
// locks nothing any other process can see.
bool StillAtPath(int fd, const std::string& path) {
  struct stat by_fd {}, by_path {};
  return ::fstat(fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 && by_fd.st_dev == by_path.st_dev &&
         by_fd.st_ino == by_path.st_ino;
}

constexpr const char* kLockPrefix = "ncclscope-host-nics-";

}  // namespace

bool HostSpeaker::Speaks() {
  AnnotatedLock lock(&mu_);
  if (held_) return true;
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second: the file was removed under us, take the new one
    if (fd_ < 0) {
      fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd_ < 0) {
        if (!warned_) {
          NCCLSCOPE_WARN(subsys::kNet,
                         "cannot open %s (%s): this process exports the host's NIC counters, and so may every other "
                         "rank of the job on this host", lock_path_.c_str(), std::strerror(errno));
          warned_ = true;
        }
        return true;
      }
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) return false;
    if (StillAtPath(fd_, lock_path_)) {
      held_ = true;
      holder_pid_ = ::getpid();
      return true;
    }
    ::close(fd_);
    fd_ = -1;
  }
  return false;
}

void HostSpeaker::Release() {
  AnnotatedLock lock(&mu_);
  // Only the process that took the lock: a forked child shares the open file, not the role.
  if (!held_ || holder_pid_ != ::getpid()) return;
  ::unlink(lock_path_.c_str());  // before the lock goes: a rank that opened it re-checks the path (StillAtPath)
  ::close(fd_);
  fd_ = -1;
  held_ = false;
}

int RemoveStaleHostSpeakerLocks(const std::string& dir, const std::string& keep, int min_age_s) {
  const std::string prefix = kLockPrefix + std::to_string(::getuid()) + "-";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  int removed = 0;
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name, path = dir + "/" + name;
    if (name.rfind(prefix, 0) != 0 || name.size() < 5 || name.compare(name.size() - 5, 5, ".lock") != 0 ||
        path == keep) {
      continue;
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || now - st.st_mtime < min_age_s) continue;
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    // Free: no process of that job speaks (it ended, or crashed). Removed under our lock; a rank of a live job that
    // opened it meanwhile finds it gone (StillAtPath) and makes a new one.
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && StillAtPath(fd, path) && ::unlink(path.c_str()) == 0) ++removed;
    ::close(fd);
  }
  ::closedir(d);
  return removed;
}

std::string HostSpeakerLockPath(const std::string& dir, const std::string& job, const std::string& host) {
  auto safe = [](std::string key) {
    if (key.size() > 64) key.resize(64);
    for (char& c : key) {
      const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                         c == '_' || c == '-';
      if (!plain) c = '_';
    }
    return key;
  };
  const std::string key = safe(job.empty() ? "launcher" + std::to_string(::getppid()) : job);
  return dir + "/" + kLockPrefix + std::to_string(::getuid()) + "-" + key + (host.empty() ? "" : "-on-" + safe(host)) +
         ".lock";
}

std::string HostSpeakerLockDir() {
  return ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
}

}  // namespace ncclscope
