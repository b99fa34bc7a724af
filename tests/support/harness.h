// Process harness for the net conformance and fault tests: each side of a connection runs in its own
// fork()ed child that dlopens the built library (or uses the linked core library) and drives one
// ncclNetPlugin_vN table; the parent only forks, passes handles through a socketpair and reaps the
// children with a deadline, so a hang in the plugin fails the test instead of hanging it.
#ifndef NCCLSCOPE_TESTS_SUPPORT_HARNESS_H_
#define NCCLSCOPE_TESTS_SUPPORT_HARNESS_H_

#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plugin_net.h"

namespace ncclscope::testing {

#define CHILD_CHECK(cond)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "[pid %d] %s:%d: CHECK failed: %s (last warning: %s)\n", getpid(), __FILE__, \
              __LINE__, #cond, ::ncclscope::testing::LastWarning().c_str());                \
      fflush(stderr);                                                                       \
      _exit(1);                                                                             \
    }                                                                                       \
  } while (0)

// Environment every child gets: loopback only, TCP, no metrics endpoint.
std::vector<std::pair<std::string, std::string>> BaseEnv();

// Forks a child that applies `env` and exits with fn()'s value.
pid_t Spawn(const std::function<int()>& fn, const std::vector<std::pair<std::string, std::string>>& env);
// Waits up to timeout_s; kills the child on timeout. Returns the exit code, 128+signal, or -1 on timeout.
int Reap(pid_t pid, double timeout_s);

// Blocking byte exchange over one end of a socketpair.
bool SendBytes(int fd, const void* p, size_t n);
bool RecvBytes(int fd, void* p, size_t n, double timeout_s = 30);

// Child-side: the captured last WARN line of NCCL-style logging, and a logger that captures it.
std::string LastWarning();
void CaptureLogger(ncclscope_log_level_t level, unsigned long flags, const char* filefunc, int line,
                   const char* fmt, ...);

// Child-side: open + init the table (CHILD_CHECKs on failure).
std::unique_ptr<PluginNet> OpenAndInit(int version, TableSource source, uint64_t comm_id = 0x5eed,
                                       ncclscope_profiler_callback_t prof = nullptr);

// Child-side loops with deadlines. Return the plugin's result code, or -1 on deadline.
int ConnectLoop(PluginNet& net, void* handle, void** sc, double timeout_s = 20, int dev = 0);
int AcceptLoop(PluginNet& net, void* lc, void** rc, double timeout_s = 20);
// A pair's opening, receiving side: listen on device 0, hand the handle to the peer over `fd`, accept.
bool ListenAndAccept(PluginNet& net, int fd, void** lc, void** rc);
// A pair's opening, sending side: take the peer's handle from `fd` and connect.
bool ConnectToPeer(PluginNet& net, int fd, void** sc);
int WaitDone(PluginNet& net, void* req, int* sizes, double timeout_s = 60);
double NowS();

// Deterministic content: byte i of message `seed`.
inline uint8_t PatternByte(uint64_t seed, uint64_t i) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
  return static_cast<uint8_t>(x >> 29);
}
void FillPattern(void* p, size_t n, uint64_t seed);
// Checks every byte of small messages and a stride sample plus the tail of large ones.
bool CheckPattern(const void* p, size_t n, uint64_t seed);

// Runs a receiver and a sender child connected by a socketpair (fd passed to each function); returns
// {receiver status, sender status}.
struct PairResult {
  int recv_status;
  int send_status;
};
PairResult RunPair(const std::function<int(int)>& receiver, const std::function<int(int)>& sender,
                   const std::vector<std::pair<std::string, std::string>>& extra_env = {}, double timeout_s = 90);

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_SUPPORT_HARNESS_H_
