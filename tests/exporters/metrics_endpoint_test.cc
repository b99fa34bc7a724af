// The metrics endpoint follows the runtime: it serves /metrics (valid for promtool) while a user exists, is
// gone after the last release, and a child forked without exec does not keep its port bound.
#include "exporters/prometheus/metrics_endpoint.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <fstream>
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
// a scrape is answered and the last communicator's finalize (which stops the server) returns within 1 s.
// (The old server served one client at a time with a per-byte timeout: 25-43 s extra teardown.)
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
  {
    testing::ClientLoad load(port, 50, 50, std::chrono::milliseconds(150), /*reconnect=*/false);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    int status = 0;
    Clock::time_point t0 = Clock::now();
    std::string body = HttpGet(port, "/metrics", &status);
    EXPECT_EQ(status, 200);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0) << "scrape behind hostile clients";
    t0 = Clock::now();
    profiler::Finalize(ctx);  // the last user: stops the endpoint
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0) << "finalize waited on a client";
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
