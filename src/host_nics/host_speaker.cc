#include "host_nics/host_speaker.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/tsan_lock.h"

namespace ncclscope {

HostSpeaker::~HostSpeaker() {
  AnnotatedLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
}

bool HostSpeaker::Speaks() {
  AnnotatedLock lock(&mu_);
  if (held_) return true;
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
  held_ = ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  return held_;
}

std::string HostSpeakerLockPath(const std::string& dir, const std::string& job) {
  std::string key = job.empty() ? "launcher" + std::to_string(::getppid()) : job;
  if (key.size() > 64) key.resize(64);
  for (char& c : key) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return dir + "/ncclscope-host-nics-" + std::to_string(::getuid()) + "-" + key + ".lock";
}

std::string HostSpeakerLockDir() {
  return ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
}

}  // namespace ncclscope
