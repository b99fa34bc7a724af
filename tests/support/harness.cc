#include "harness.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include <cstring>

namespace ncclscope::testing {
namespace {
char last_warning[1024] = "";
}

std::vector<std::pair<std::string, std::string>> BaseEnv() {
  return {{"NCCLSCOPE_SOCKET_IFNAME", "lo"},
          {"NCCLSCOPE_TRANSPORT", "tcp"},
          {"NCCLSCOPE_PROM_PORT", "-1"}};
}

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

pid_t Spawn(const std::function<int()>& fn, const std::vector<std::pair<std::string, std::string>>& env) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  int rc = fn();
  fflush(stderr);
  _exit(rc);
}

int Reap(pid_t pid, double timeout_s) {
  double deadline = NowS() + timeout_s;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -2;
    }
    if (NowS() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(5000);
  }
}

bool SendBytes(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool RecvBytes(int fd, void* p, size_t n, double timeout_s) {
  char* c = static_cast<char*>(p);
  double deadline = NowS() + timeout_s;
  while (n > 0) {
    pollfd pf{fd, POLLIN, 0};
    int left_ms = static_cast<int>((deadline - NowS()) * 1000);
    if (left_ms <= 0 || poll(&pf, 1, left_ms) <= 0) return false;
    ssize_t k = recv(fd, c, n, 0);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

std::string LastWarning() { return last_warning; }

void CaptureLogger(ncclscope_log_level_t level, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (level == NCCLSCOPE_LOG_WARN) snprintf(last_warning, sizeof(last_warning), "%s", buf);
  if (getenv("NET_TEST_VERBOSE") != nullptr || level == NCCLSCOPE_LOG_WARN) {
    fprintf(stderr, "[pid %d] %s\n", getpid(), buf);
  }
}

std::unique_ptr<PluginNet> OpenAndInit(int version, TableSource source, uint64_t comm_id,
                                       ncclscope_profiler_callback_t prof) {
  std::string err;
  std::unique_ptr<PluginNet> net = PluginNet::Open(version, source, &err);
  if (net == nullptr) fprintf(stderr, "open v%d: %s\n", version, err.c_str());
  CHILD_CHECK(net != nullptr);
  CHILD_CHECK(net->Init(comm_id, CaptureLogger, prof) == 0);
  int n = 0;
  CHILD_CHECK(net->Devices(&n) == 0 && n >= 1);
  return net;
}

int ConnectLoop(PluginNet& net, void* handle, void** sc, double timeout_s, int dev) {
  double deadline = NowS() + timeout_s;
  *sc = nullptr;
  while (*sc == nullptr) {
    int r = net.Connect(dev, handle, sc);
    if (r != 0) return r;
    if (NowS() > deadline) return -1;
    if (*sc == nullptr) usleep(100);
  }
  return 0;
}

int AcceptLoop(PluginNet& net, void* lc, void** rc, double timeout_s) {
  double deadline = NowS() + timeout_s;
  *rc = nullptr;
  while (*rc == nullptr) {
    int r = net.Accept(lc, rc);
    if (r != 0) return r;
    if (NowS() > deadline) return -1;
    if (*rc == nullptr) usleep(100);
  }
  return 0;
}

bool ListenAndAccept(PluginNet& net, int fd, void** lc, void** rc) {
  char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
  return net.Listen(0, handle, lc) == 0 && SendBytes(fd, handle, sizeof(handle)) && AcceptLoop(net, *lc, rc) == 0;
}

bool ConnectToPeer(PluginNet& net, int fd, void** sc) {
  char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
  return RecvBytes(fd, handle, sizeof(handle)) && ConnectLoop(net, handle, sc) == 0;
}

int WaitDone(PluginNet& net, void* req, int* sizes, double timeout_s) {
  double deadline = NowS() + timeout_s;
  for (;;) {
    int done = 0;
    int r = net.Test(req, &done, sizes);
    if (r != 0) return r;
    if (done) return 0;
    if (NowS() > deadline) return -1;
    sched_yield();  // as NCCL's proxy progress thread does when idle
  }
}

void FillPattern(void* p, size_t n, uint64_t seed) {
  uint8_t* b = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = PatternByte(seed, i);
}

bool CheckPattern(const void* p, size_t n, uint64_t seed) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  size_t stride = n <= (1u << 22) ? 1 : 4093;
  for (size_t i = 0; i < n; i += stride) {
    if (b[i] != PatternByte(seed, i)) return false;
  }
  for (size_t i = n > 4096 ? n - 4096 : 0; i < n; ++i) {
    if (b[i] != PatternByte(seed, i)) return false;
  }
  return true;
}

PairResult RunPair(const std::function<int(int)>& receiver, const std::function<int(int)>& sender,
                   const std::vector<std::pair<std::string, std::string>>& extra_env, double timeout_s) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return {-3, -3};
  auto env = BaseEnv();
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  pid_t r = Spawn([&] { close(sv[1]); return receiver(sv[0]); }, env);
  pid_t s = Spawn([&] { close(sv[0]); return sender(sv[1]); }, env);
  close(sv[0]);
  close(sv[1]);
  double start = NowS();
  int rs = Reap(r, timeout_s);
  int ss = Reap(s, std::max(1.0, timeout_s - (NowS() - start)));
  return {rs, ss};
}

}  // namespace ncclscope::testing
