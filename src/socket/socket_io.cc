#include "socket/socket_io.h"

#include <poll.h>

#include <chrono>

namespace ncclscope::sock {

int Wait(int fd, short events, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int left = timeout_ms;
  for (;;) {
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, left);
    if (r >= 0) return r > 0 ? 1 : 0;
    if (errno != EINTR) return -1;
    if (timeout_ms < 0) continue;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(end - Clock::now()).count();
    left = ms > 0 ? static_cast<int>(ms) : 0;
  }
}

}  // namespace ncclscope::sock
