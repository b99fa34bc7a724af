// Whether a path may be handed to dlopen. dlopen's own open() of a FIFO blocks until a writer appears (in a job:
// forever, with no line), and a device, socket or directory is never a library; so the path is first opened
// without blocking (O_NONBLOCK) and fstat'ed. A path that does not open is left to dlopen, whose error names it.
// Header-only: ncclscope-loadcheck, which links nothing of ours, checks its PLUGIN the same way.
// Thread-safe (no state). The file may change between this check and dlopen; this guards mistakes, not attacks.
#ifndef NCCLSCOPE_COMMON_REGULAR_FILE_H_
#define NCCLSCOPE_COMMON_REGULAR_FILE_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/status.h"

namespace ncclscope {

inline const char* FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Ok for a regular file (symlinks followed) or a path that does not open; otherwise InvalidUsage naming it.
inline Status CheckRegularFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Status::Ok();
  struct stat st {};
  const bool statted = ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!statted || S_ISREG(st.st_mode)) return Status::Ok();
  return InvalidUsage(path + " is " + FileTypeName(st.st_mode) +
                      ", not a regular file: not opened (a plugin is a shared library file; dlopen would block on a "
                      "FIFO forever)");
}

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_REGULAR_FILE_H_
