// The metrics endpoint follows the runtime: it serves /metrics (valid for promtool) while a user exists, is
// gone after the last release, and a child forked without exec does not keep its port bound. A port held by
// another process (a real listening socket) moves the endpoint to a kernel-chosen port, named in a warning and
// in the file_sd target; any other bind failure leaves it off.
#include "exporters/prometheus/metrics_endpoint.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/params.h"
#include "common/runtime.h"
#include "http_get.h"
#include "http_load.h"
#include "profiler/profiler.h"
#include "log_capture.h"
#include "plugin/services/plugin_services.h"

namespace ncclscope {
namespace {

using testing::HttpGet;



class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCLSCOPE_PROM_PORT", "0", 1);
    setenv("NCCLSCOPE_PROM_BIND", "127.0.0.1", 1);
    InstallPluginServices();  // as NCCL's first init does: the runtime then runs the endpoint
  }
};

// The job's teardown never waits on a client: with 50 slow and 50 idle clients connected to the endpoint,
// a scrape is answered and the last communicator's finalize (which stops the server) returns within 1.9 s, far
// under the 10 s header deadline a wait on any one client would cost (the old server served one client at a time
// with a per-byte timeout: 25-43 s extra teardown); a loaded host can hold the test itself past a second.
TEST_F(MetricsEndpointTest, LastFinalizeReturnsAtOnceWithSlowAndIdleClientsConnected) {
  int mask = 0;
  profiler::InitArgs args;
  args.comm_hash = 0x51041;
  args.activation_mask = &mask;
  void* ctx = nullptr;
  ASSERT_TRUE(profiler::Init(args, &ctx).ok());
  const int port = MetricsEndpoint::Instance().port();
  ASSERT_GT(port, 0);
  using Clock = std::chrono::steady_clock;
  constexpr double kPromptS = 1.9;
  {
    testing::ClientLoad load(port, 50, 50, std::chrono::milliseconds(150), /*reconnect=*/false);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    int status = 0;
    Clock::time_point t0 = Clock::now();
    std::string body = HttpGet(port, "/metrics", &status);
    EXPECT_EQ(status, 200);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kPromptS)
        << "scrape behind hostile clients";
    t0 = Clock::now();
    profiler::Finalize(ctx);  // the last user: stops the endpoint
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kPromptS)
        << "finalize waited on a client";
  }
  EXPECT_EQ(MetricsEndpoint::Instance().port(), 0);
}

TEST_F(MetricsEndpointTest, ServesWhileTheRuntimeRunsAndStopsAfter) {
  Runtime::Instance().Acquire("endpoint test");
  const int port = MetricsEndpoint::Instance().port();
  ASSERT_GT(port, 0);
  int status = 0;
  std::string body = HttpGet(port, "/metrics", &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(body.find("# TYPE ncclscope_build_info gauge"), std::string::npos) << body;
  EXPECT_NE(body.find("ncclscope_process_start_time_seconds"), std::string::npos) << body;

  // promtool (from Debian's prometheus package) lints the exposition as Prometheus would.
  if (system("command -v promtool >/dev/null 2>&1") == 0) {
    char path[] = "/tmp/ncclscope-metrics-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
    close(fd);
    std::string cmd = std::string("promtool check metrics < ") + path + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    char out[4096] = {};
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    int rc = pclose(p);
    unlink(path);
    EXPECT_EQ(rc, 0) << "promtool check metrics: " << std::string(out, n) << "\n" << body;
  } else {
    printf("promtool not installed: exposition lint skipped (scripts/install-deps.sh installs it)\n");
  }

  Runtime::Instance().Release("endpoint test");
  EXPECT_EQ(MetricsEndpoint::Instance().port(), 0);
  HttpGet(port, "/metrics", &status);
  EXPECT_LT(status, 0) << "endpoint still answers after the last release";
}

TEST_F(MetricsEndpointTest, ForkedChildDoesNotKeepThePort) {
  Runtime::Instance().Acquire("fork test");
  const int port = MetricsEndpoint::Instance().port();
  ASSERT_GT(port, 0);
  int pipefd[2], ready[2];
  ASSERT_EQ(pipe(pipefd), 0);
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {  // a DataLoader-style worker: forked, no exec, lives on
    close(pipefd[1]);
    // fork() has returned here, so the atfork child handlers have run: tell the parent.
    (void)!write(ready[1], "r", 1);
    char c;
    (void)!read(pipefd[0], &c, 1);
    _exit(0);
  }
  close(pipefd[0]);
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  Runtime::Instance().Release("fork test");
  // The parent's endpoint is gone; the port must be free although the child still lives.
  setenv("NCCLSCOPE_PROM_PORT", std::to_string(port).c_str(), 1);
  Runtime::Instance().Acquire("rebind");
  EXPECT_EQ(MetricsEndpoint::Instance().port(), port) << "the forked child kept the listening socket";
  Runtime::Instance().Release("rebind");
  close(pipefd[1]);
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
}

TEST_F(MetricsEndpointTest, DisabledWithMinusOne) {
  setenv("NCCLSCOPE_PROM_PORT", "-1", 1);
  Runtime::Instance().Acquire("disabled");
  EXPECT_EQ(MetricsEndpoint::Instance().port(), 0);
  Runtime::Instance().Release("disabled");
}

// Sockets this process holds: a listener left behind by a refused bind address would show here.
int OpenSockets() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  while (dirent* e = readdir(dir)) {
    char target[256] = {};
    std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(link.c_str(), target, sizeof(target) - 1) > 0 && std::string(target).rfind("socket:", 0) == 0) {
      ++n;
    }
  }
  closedir(dir);
  return n;
}

TEST_F(MetricsEndpointTest, EmptyOrInvalidBindAddressTurnsTheEndpointOffAndSaysWhy) {
  // The empty value used to bind 0.0.0.0 silently; an invalid one warned "no free port".
  for (const char* bind : {"", "node7", "10.0.0", "::1"}) {
    setenv("NCCLSCOPE_PROM_BIND", bind, 1);
    testing::LogCapture::Clear();
    SetNcclLogger(&testing::LogCapture::Logger);
    const int sockets_before = OpenSockets();
    Runtime::Instance().Acquire("bad bind");
    EXPECT_EQ(MetricsEndpoint::Instance().port(), 0) << "'" << bind << "'";
    EXPECT_EQ(OpenSockets(), sockets_before) << "'" << bind << "' left a socket open";
    Runtime::Instance().Release("bad bind");
    SetNcclLogger(nullptr);
    const std::vector<std::string> warnings = testing::LogCapture::AllWarnings();
    const std::string expected = std::string("NCCLSCOPE_PROM_BIND='") + bind + "' is not an IPv4 address";
    bool named = false;
    for (const std::string& w : warnings) named = named || w.find(expected) != std::string::npos;
    EXPECT_TRUE(named) << "no warning naming " << expected << "; got " << ::testing::PrintToString(warnings);
  }
}

// A listening socket on 127.0.0.1:port (0: any), as another job's endpoint holds it; -1 when the port is taken.
int Listen(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 4) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int PortOf(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

// Every file_sd target file under `dir`, concatenated.
std::string SdTargets(const std::string& dir) {
  std::string all;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    std::stringstream text;
    text << std::ifstream(e.path()).rdbuf();
    all += text.str();
  }
  return all;
}

// Starts the endpoint with the current environment; returns its port (0: off) and the warnings logged.
int StartCapturing(std::vector<std::string>* warnings) {
  testing::LogCapture::Clear();
  SetNcclLogger(&testing::LogCapture::Logger);
  Runtime::Instance().Acquire("taken port");
  const int port = MetricsEndpoint::Instance().port();
  SetNcclLogger(nullptr);
  *warnings = testing::LogCapture::AllWarnings();
  return port;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& l : lines) all += l + "\n";
  return all;
}

// Two jobs on one node with the same base port: the second job's rank used to warn "no free port" and serve
// nothing, so Prometheus showed nothing of that job (no up == 0, no rank-down or hang alert).
TEST_F(MetricsEndpointTest, ATakenPortFallsBackToAKernelChosenPortAnnouncedInFileSd) {
  const int held = Listen(0);
  ASSERT_GE(held, 0);
  const int wanted = PortOf(held);
  char dir[] = "/tmp/ncclscope-taken-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("NCCLSCOPE_SD_DIR", dir, 1);
  setenv("NCCLSCOPE_PROM_PORT", std::to_string(wanted - 2).c_str(), 1);
  setenv("LOCAL_RANK", "2", 1);
  std::vector<std::string> warnings;
  const int port = StartCapturing(&warnings);
  EXPECT_GT(port, 0) << Joined(warnings);
  EXPECT_NE(port, wanted);
  int status = 0;
  HttpGet(port, "/metrics", &status);
  EXPECT_EQ(status, 200);
  const std::string expected = "metrics endpoint: port " + std::to_string(wanted) + " (NCCLSCOPE_PROM_PORT " +
                               std::to_string(wanted - 2) + " + local rank 2) at 127.0.0.1 in use by another " +
                               "process (another job on this host?); serving on port " + std::to_string(port) +
                               " instead, announced in this rank's file_sd target (NCCLSCOPE_SD_DIR)";
  EXPECT_NE(Joined(warnings).find(expected), std::string::npos) << Joined(warnings);
  EXPECT_NE(SdTargets(dir).find("\"127.0.0.1:" + std::to_string(port) + "\""), std::string::npos)
      << SdTargets(dir);
  Runtime::Instance().Release("taken port");
  unsetenv("LOCAL_RANK");
  unsetenv("NCCLSCOPE_SD_DIR");
  close(held);
  std::filesystem::remove_all(dir);
}

// Without a local rank the 16 ports from the base are tried first; only when all are in use is the port the
// kernel's, and the warning says so without file_sd to announce it.
TEST_F(MetricsEndpointTest, SixteenTakenPortsWithoutALocalRankFallBackToo) {
  unsetenv("LOCAL_RANK");
  std::vector<int> held;
  int base = 0;
  for (int attempt = 0; attempt < 50 && held.size() < 16; ++attempt) {  // 16 consecutive free ports
    for (int fd : held) close(fd);
    held.clear();
    const int first = Listen(0);
    ASSERT_GE(first, 0);
    base = PortOf(first);
    held.push_back(first);
    if (base > 65535 - 15) continue;
    for (int p = base + 1; p < base + 16; ++p) {
      const int fd = Listen(p);
      if (fd < 0) break;
      held.push_back(fd);
    }
  }
  ASSERT_EQ(held.size(), 16u) << "no 16 consecutive free ports";
  setenv("NCCLSCOPE_PROM_PORT", std::to_string(base).c_str(), 1);
  std::vector<std::string> warnings;
  const int port = StartCapturing(&warnings);
  EXPECT_TRUE(port > 0 && (port < base || port >= base + 16)) << port << "\n" << Joined(warnings);
  const std::string expected = "ports " + std::to_string(base) + "-" + std::to_string(base + 15) +
                               " (NCCLSCOPE_PROM_PORT " + std::to_string(base) + ", no local rank) at 127.0.0.1 " +
                               "in use by another process (another job on this host?); serving on port " +
                               std::to_string(port) + " instead, which no file_sd target announces";
  EXPECT_NE(Joined(warnings).find(expected), std::string::npos) << Joined(warnings);
  Runtime::Instance().Release("taken port");
  for (int fd : held) close(fd);
}

// Only a port in use moves the endpoint: an address this host does not have (TEST-NET-1) keeps it off.
TEST_F(MetricsEndpointTest, ABindFailureOtherThanAPortInUseStaysOff) {
  setenv("NCCLSCOPE_PROM_BIND", "192.0.2.1", 1);
  setenv("NCCLSCOPE_PROM_PORT", "9850", 1);
  setenv("LOCAL_RANK", "0", 1);
  std::vector<std::string> warnings;
  EXPECT_EQ(StartCapturing(&warnings), 0);
  Runtime::Instance().Release("taken port");
  unsetenv("LOCAL_RANK");
  EXPECT_NE(Joined(warnings).find("metrics endpoint disabled: no free port at 192.0.2.1:9850 + LOCAL_RANK"),
            std::string::npos)
      << Joined(warnings);
  EXPECT_EQ(Joined(warnings).find("instead"), std::string::npos) << Joined(warnings);
}

TEST(LocalRank, ReadFromLauncherVariables) {
  unsetenv("LOCAL_RANK");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  unsetenv("SLURM_LOCALID");
  unsetenv("MPI_LOCALRANKID");
  EXPECT_EQ(LocalRankFromEnv(), -1);
  setenv("SLURM_LOCALID", "3", 1);
  EXPECT_EQ(LocalRankFromEnv(), 3);
  setenv("LOCAL_RANK", "5", 1);
  EXPECT_EQ(LocalRankFromEnv(), 5);
  setenv("LOCAL_RANK", "x", 1);
  EXPECT_EQ(LocalRankFromEnv(), 3);
  unsetenv("LOCAL_RANK");
  unsetenv("SLURM_LOCALID");
}

}  // namespace
}  // namespace ncclscope
