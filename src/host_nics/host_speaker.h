// Which process exports the host's NIC counters: one per job and host, so that a host of 8 ranks sends them once,
// not 8 times. The speaker is the process holding an exclusive flock() on a lock file named after the job (and the
// user) in /dev/shm (or /tmp). The kernel drops the lock with the holder's descriptors, when it exits or crashes;
// every other process of the job tries again at each scrape, so one of them takes over within a scrape interval.
// The holder removes the file when it exits normally (Release); files of jobs that crashed are removed by the next
// job's ranks (RemoveStaleHostSpeakerLocks), so /dev/shm does not fill with them.
// Where the lock cannot be made (no writable folder), every process speaks: duplicates, which the rules
// tolerate (they take max by host and device), rather than a host gone dark. Thread-safe.
#ifndef NCCLSCOPE_HOST_NICS_HOST_SPEAKER_H_
#define NCCLSCOPE_HOST_NICS_HOST_SPEAKER_H_

#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"

namespace ncclscope {

class HostSpeaker {
 public:
  explicit HostSpeaker(std::string lock_path) : lock_path_(std::move(lock_path)) {}
  ~HostSpeaker();
  HostSpeaker(const HostSpeaker&) = delete;
  HostSpeaker& operator=(const HostSpeaker&) = delete;

  // True while this process holds the lock (taken now if it is free) or cannot make one.
  bool Speaks();
  // Removes the lock file and drops the lock, if this process (not a forked child) holds it: at exit.
  void Release();
  const std::string& lock_path() const { return lock_path_; }

 private:
  const std::string lock_path_;
  absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool warned_ ABSL_GUARDED_BY(mu_) = false;
  int holder_pid_ ABSL_GUARDED_BY(mu_) = 0;
};

// Removes this user's speaker lock files in `dir` but `keep` that no process holds and that are at least
// `min_age_s` old (their job ended or crashed); returns how many. Safe against a live job's ranks (HostSpeaker
// re-checks the path after locking).
int RemoveStaleHostSpeakerLocks(const std::string& dir, const std::string& keep, int min_age_s);

// The lock file of a job on this host: <dir>/ncclscope-host-nics-<uid>-<job>-on-<host>.lock, characters outside
// [A-Za-z0-9._-] replaced. A job without a name is keyed by the launcher's pid (the ranks' parent: torchrun,
// srun's step daemon, mpirun's daemon), so that two unnamed jobs on a host do not silence each other. The host
// (the `host` label) is in the key for hosts that share a /dev/shm while naming themselves apart: network
// namespaces emulating hosts, containers given the node's /dev/shm.
std::string HostSpeakerLockPath(const std::string& dir, const std::string& job, const std::string& host);
// /dev/shm when it is a writable folder, else /tmp.
std::string HostSpeakerLockDir();

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_HOST_SPEAKER_H_
