// PinnedDir: an output folder resolved once. The first Open() resolves the configured path as the user wrote
// it (a link in it is followed then, the relative path against the working directory of that moment) and
// keeps its parent folder open; every later Open() creates and opens the folder at that same place, relative
// to the parent's handle, and refuses a link at its name. So a folder swapped for a link mid-job (or removed
// and replaced by one) never sends our files to the link's target, and a chdir() moves nothing; a folder
// removed mid-job (tests reuse names, users clean up) is still re-created where it was.
// Not thread-safe: its owner (OutputDir) calls it under its own lock.
#ifndef NCCLSCOPE_COMMON_PINNED_DIR_H_
#define NCCLSCOPE_COMMON_PINNED_DIR_H_

#include <string>
#include <utility>

#include "common/status.h"

namespace ncclscope {

class PinnedDir {
 public:
  explicit PinnedDir(std::string path) : path_(std::move(path)) {}
  ~PinnedDir();
  PinnedDir(const PinnedDir&) = delete;
  PinnedDir& operator=(const PinnedDir&) = delete;

  // A new O_DIRECTORY | O_CLOEXEC descriptor of the folder (created with the umask's permissions if missing),
  // owned by the caller. The parent is resolved by the first call that can open it, never again.
  Result<int> Open();

 private:
  const std::string path_;
  int parent_fd_ = -1;  // the parent folder, resolved at the first Open() that reached it
  std::string name_;    // the folder's name in it
  bool opened_ = false;  // after the first success the name is never followed through a link
};

// ("a/b", "c") for "a/b/c" (and "a/b/c/"), (".", "c") for "c", ("/", "c") for "/c", ("/", ".") for "/".
std::pair<std::string, std::string> SplitParent(const std::string& path);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_PINNED_DIR_H_
