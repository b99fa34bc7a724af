#include "common/config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncclscope {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

}  // namespace

Result<std::string> ReadConfigFile(std::string_view what, const std::string& path, const ConfigFileLimits& limits) {
  const auto fail = [&](const std::string& reason) -> Result<std::string> {
    std::string m(what);
    if (!m.empty()) m += ' ';
    return InvalidUsage(m + path + ": " + reason);
  };
  if (path.empty()) return fail("empty path");
  const auto deadline = std::chrono::steady_clock::now() + limits.deadline;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; O_NOCTTY: a terminal
  // device must not become the job's controlling terminal before fstat refuses it.
  Fd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return fail(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail(std::string("is ") + KindOf(st.st_mode) + ", not a regular file");
  const auto too_large = [&](const std::string& size) {
    return fail(size + ", over the " + std::to_string(limits.max_bytes) +
                "-byte limit for this file (refused, not truncated)");
  };
  if (static_cast<uint64_t>(st.st_size) > limits.max_bytes) {
    return too_large("is " + std::to_string(st.st_size) + " bytes");
  }
  std::string text;
  // st_size is a hint only: the file may grow while we read, and /proc-like files say 0.
  text.reserve(static_cast<size_t>(st.st_size));
  char chunk[kChunkBytes];
  for (;;) {
    const ssize_t n = read(fd.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::string("read error: ") + std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > limits.max_bytes) return too_large("holds more than its stated size");
    text.append(chunk, static_cast<size_t>(n));
    if (std::chrono::steady_clock::now() > deadline) {
      return fail("not read within " + std::to_string(limits.deadline.count()) + " ms");
    }
  }
}

std::string Printable(std::string_view text, size_t max) {
  std::string out(text.substr(0, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text.size() > max ? out + "..." : out;
}

}  // namespace ncclscope
