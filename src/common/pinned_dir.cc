#include "common/pinned_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/errno_text.h"

namespace ncclscope {

std::pair<std::string, std::string> SplitParent(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p == "/") return {"/", "."};
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return {".", p};
  return {slash == 0 ? "/" : p.substr(0, slash), p.substr(slash + 1)};
}

PinnedDir::~PinnedDir() {
  if (parent_fd_ >= 0) close(parent_fd_);
}

Result<int> PinnedDir::Open() {
  if (parent_fd_ < 0) {
    auto [parent, name] = SplitParent(path_);
    parent_fd_ = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent_fd_ < 0) {
      return SystemError(WithErrno("cannot open " + parent + " (the parent of " + path_ + ")", errno));
    }
    name_ = std::move(name);
  }
  if (mkdirat(parent_fd_, name_.c_str(), 0777) != 0 && errno != EEXIST) {
    return SystemError(WithErrno("cannot create " + path_, errno));
  }
  // Once opened, a link at the name is refused (ELOOP/ENOTDIR): resolved once, never re-resolved elsewhere.
  const int nofollow = opened_ ? O_NOFOLLOW : 0;
  const int fd = openat(parent_fd_, name_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | nofollow);
  if (fd < 0) {
    const int err = errno;
    const char* where = opened_ ? " where it was first opened (a link?)" : "";
    return SystemError(WithErrno("cannot open " + path_ + where, err));
  }
  opened_ = true;
  return fd;
}

}  // namespace ncclscope
