// ReadConfigFile: the one way ncclscope reads a file a user names (the web config, TLS certificates and
// keys, the tag-name file, anything later). Whatever the path holds, the job is not harmed:
//  - opened with O_NONBLOCK, so a FIFO or a device cannot block the open; then anything that is not a
//    regular file (a directory, a FIFO, a socket, /dev/zero) is refused by fstat before a byte is read;
//  - at most `max_bytes` are kept: a larger file is refused, never truncated (a cut certificate or config
//    would be misread);
//  - read in chunks with a deadline checked between them.
// A final symbolic link is followed: Kubernetes mounts secrets and config maps as symbolic links
// (cert.pem -> ..data/cert.pem), and what protects us is the check on what the link points to.
// One read() of a regular file on a hung network file system can still block inside the kernel; no
// user-space reader can bound that, so callers that must stay responsive (certificate reloads) read off
// their serving thread.
// Errors read "[<what> ]<path>: <reason>" (what: the key that named the file, such as "cert_file", or empty
// where the caller's warning already names the variable), so a warning names the setting, file and cause.
#ifndef NCCLSCOPE_COMMON_CONFIG_FILE_H_
#define NCCLSCOPE_COMMON_CONFIG_FILE_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ncclscope {

struct ConfigFileLimits {
  size_t max_bytes;
  std::chrono::milliseconds deadline{2000};
};

// The whole file, or an InvalidUsage error naming `what`, `path` and the reason.
Result<std::string> ReadConfigFile(std::string_view what, const std::string& path, const ConfigFileLimits& limits);

// Text from such a file, quoted in a log line: at most `max` bytes (then "..."), control bytes as '?', so a
// hostile file can neither flood the job's log nor write escape sequences to its terminal.
std::string Printable(std::string_view text, size_t max);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_CONFIG_FILE_H_
