// Small facts about this process's host, shared by the log, the exporters and the recorder.
// Thread-safe.
#ifndef NCCLSCOPE_COMMON_HOST_H_
#define NCCLSCOPE_COMMON_HOST_H_

#include <unistd.h>

#include <string>

namespace ncclscope {

// The host name as gethostname() reports it; "unknown" when it fails.
inline std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "unknown";
  return host;
}

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_HOST_H_
