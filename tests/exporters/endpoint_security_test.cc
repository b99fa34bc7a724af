// The metrics endpoint with NCCLSCOPE_PROM_WEB_CONFIG, through the runtime as NCCL drives it:
//  - a file that cannot be used (bad syntax, missing certificate) turns the endpoint off with a warning that
//    names the file and the cause: never plain HTTP when TLS or auth was asked for;
//  - a flood of 1,000 wrong passwords from 16 concurrent clients neither stalls scrapes with the right
//    password nor the last finalize (which stops the server while the verifier is inside a bcrypt hash).
// The TLS side with a real Prometheus is tests/prometheus/tls_auth_scrape.sh.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/runtime.h"
#include "exporters/http/basic_auth.h"
#include "exporters/prometheus/metrics_endpoint.h"
#include "http_load.h"
#include "log_capture.h"
#include "plugin/services/plugin_services.h"

namespace ncclscope {
namespace {

using Clock = std::chrono::steady_clock;
using testing::ConnectLoopback;
using testing::RawRequest;
using testing::StatusOf;

std::string Base64(const std::string& in) {
  static const char kA[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kA[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kA[(acc << (6 - bits)) & 63]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

std::string Request(const std::string& user, const std::string& password) {
  return "GET /metrics HTTP/1.0\r\nAuthorization: Basic " + Base64(user + ":" + password) + "\r\n\r\n";
}

class EndpointSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCLSCOPE_PROM_PORT", "0", 1);
    setenv("NCCLSCOPE_PROM_BIND", "127.0.0.1", 1);
    InstallPluginServices();  // as NCCL's first init does: the runtime then runs the endpoint
    char dir[] = "/tmp/ncclscope-websec-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    unsetenv("NCCLSCOPE_PROM_WEB_CONFIG");
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  std::string WriteConfig(const std::string& text) {
    const std::string path = dir_ + "/web.yml";
    std::ofstream(path) << text;
    setenv("NCCLSCOPE_PROM_WEB_CONFIG", path.c_str(), 1);
    return path;
  }

  // Starts the endpoint with the current environment; returns its port (0: off) and the warnings logged.
  int StartEndpoint(std::vector<std::string>* warnings) {
    testing::LogCapture::Clear();
    SetNcclLogger(&testing::LogCapture::Logger);
    Runtime::Instance().Acquire("websec");
    const int port = MetricsEndpoint::Instance().port();
    SetNcclLogger(nullptr);
    *warnings = testing::LogCapture::AllWarnings();
    return port;
  }

  std::string dir_;
};

bool AnyContains(const std::vector<std::string>& lines, const std::string& what) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

TEST_F(EndpointSecurityTest, AnUnusableFileTurnsTheEndpointOffAndSaysWhy) {
  struct Case {
    std::string text;
    std::string cause;
  };
  const Case cases[] = {
      {"tls_server_config:\n  cert_file: server.crt\n", "web.yml:1: tls_server_config: missing key_file"},
      {"tls_server_config:\n  cert_file: nowhere.crt\n  key_file: nowhere.key\n", "cert_file "},
      {"basic_auth_users:\n  prometheus: password\n", "web.yml:2: basic_auth_users.prometheus: not a bcrypt hash"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteConfig(c.text);
    std::vector<std::string> warnings;
    EXPECT_EQ(StartEndpoint(&warnings), 0) << c.text;
    Runtime::Instance().Release("websec");
    EXPECT_TRUE(AnyContains(warnings, "NCCLSCOPE_PROM_WEB_CONFIG=" + path)) << ::testing::PrintToString(warnings);
    EXPECT_TRUE(AnyContains(warnings, c.cause)) << c.cause << " not in " << ::testing::PrintToString(warnings);
    EXPECT_TRUE(AnyContains(warnings, "metrics endpoint off"));
  }
  setenv("NCCLSCOPE_PROM_WEB_CONFIG", (dir_ + "/absent.yml").c_str(), 1);
  std::vector<std::string> warnings;
  EXPECT_EQ(StartEndpoint(&warnings), 0);
  Runtime::Instance().Release("websec");
  EXPECT_TRUE(AnyContains(warnings, "absent.yml: cannot open: No such file or directory"))
      << ::testing::PrintToString(warnings);
}

// The hostile-file cases through the runtime as NCCL's init drives it: a file nested 120,000 deep (was SIGSEGV),
// a number out of range (was an exception out of the net plugin's init), a directory (was plain HTTP
// without auth), a FIFO (was a hang) and /dev/zero (was out of memory). Each leaves the endpoint off with
// one warning, and the runtime (the job) goes on.
TEST_F(EndpointSecurityTest, NothingABadFileHoldsReachesTheJob) {
  std::string deep;
  for (int i = 0; i < 120'000; ++i) deep += "{\"a\":";
  deep += "1" + std::string(120'000, '}');
  const std::string fifo = dir_ + "/fifo.yml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string path;
    std::string text;  // written to `path` when not empty
    std::string cause;
  };
  const Case cases[] = {
      {dir_ + "/deep.yml", deep, "deep.yml:1: nested deeper than 8 levels"},
      {dir_ + "/huge.json", "{\"basic_auth_users\":{\"prom\":1e999}}", "huge.json: invalid JSON: "},
      {dir_, "", dir_ + ": is a directory, not a regular file"},
      {fifo, "", fifo + ": is a FIFO, not a regular file"},
      {"/dev/zero", "", "/dev/zero: is a character device, not a regular file"},
  };
  for (const Case& c : cases) {
    if (!c.text.empty()) std::ofstream(c.path) << c.text;
    setenv("NCCLSCOPE_PROM_WEB_CONFIG", c.path.c_str(), 1);
    std::vector<std::string> warnings;
    EXPECT_EQ(StartEndpoint(&warnings), 0) << c.path;
    EXPECT_EQ(Runtime::Instance().users(), 1);
    Runtime::Instance().Release("websec");
    EXPECT_EQ(std::count_if(warnings.begin(), warnings.end(),
                            [](const std::string& w) { return w.find("metrics endpoint off") != std::string::npos; }),
              1)
        << ::testing::PrintToString(warnings);
    EXPECT_TRUE(AnyContains(warnings, c.cause)) << c.cause << " not in " << ::testing::PrintToString(warnings);
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

TEST_F(EndpointSecurityTest, AFloodOfWrongPasswordsStallsNeitherScrapesNorTheLastFinalize) {
  Result<std::string> hash = BcryptHash("good", 10);  // ~100 ms per check here
  ASSERT_TRUE(hash.ok()) << hash.status().message();
  WriteConfig("basic_auth_users:\n  prometheus: " + *hash + "\n");
  std::vector<std::string> warnings;
  const int port = StartEndpoint(&warnings);
  ASSERT_GT(port, 0) << ::testing::PrintToString(warnings);

  // Unauthenticated, wrong and right.
  const std::string no_auth = RawRequest(port, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(StatusOf(no_auth), 401);
  EXPECT_NE(no_auth.find("WWW-Authenticate: Basic realm=\"ncclscope\"\r\n"), std::string::npos) << no_auth;
  EXPECT_EQ(StatusOf(RawRequest(port, Request("prometheus", "bad"))), 401);
  EXPECT_EQ(StatusOf(RawRequest(port, Request("nobody", "good"))), 401);
  const std::string good = RawRequest(port, Request("prometheus", "good"));
  ASSERT_EQ(StatusOf(good), 200) << good.substr(0, 200);
  EXPECT_NE(good.find("ncclscope_"), std::string::npos);

  constexpr int kAttempts = 1000;
  constexpr int kClients = 16;
  std::atomic<int> next{0};
  std::atomic<int> unauthorized{0}, limited{0}, other{0};
  std::mutex other_mu;
  std::map<int, int> other_statuses;  // -1: no response
  std::atomic<bool> flooding{true};
  std::vector<double> scrape_ms;
  int scrape_failures = 0;
  std::thread scraper([&] {
    while (flooding.load()) {
      const Clock::time_point t0 = Clock::now();
      const int status = StatusOf(RawRequest(port, Request("prometheus", "good")));
      scrape_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      scrape_failures += status != 200;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const Clock::time_point flood_start = Clock::now();
  std::vector<std::thread> clients;
  for (int k = 0; k < kClients; ++k) {
    clients.emplace_back([&] {
      for (int i = next.fetch_add(1); i < kAttempts; i = next.fetch_add(1)) {
        const int status =
            StatusOf(RawRequest(port, Request(i % 2 ? "prometheus" : "admin", "guess" + std::to_string(i)),
                                std::chrono::milliseconds(10000)));
        (status == 401 ? unauthorized : status == 429 ? limited : other).fetch_add(1);
        if (status != 401 && status != 429) {
          std::lock_guard<std::mutex> lock(other_mu);
          ++other_statuses[status];
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const double flood_s = std::chrono::duration<double>(Clock::now() - flood_start).count();
  flooding = false;
  scraper.join();
  printf("flood: %d wrong-password requests from %d clients in %.2f s: %d x 401, %d x 429, %d other\n", kAttempts,
         kClients, flood_s, unauthorized.load(), limited.load(), other.load());
  printf("scrapes with the right password during the flood: %zu, failed %d, p50 %.1f ms, max %.1f ms\n",
         scrape_ms.size(), scrape_failures, Percentile(scrape_ms, 0.5), Percentile(scrape_ms, 1.0));
  for (const auto& [status, count] : other_statuses) printf("  status %d: %d\n", status, count);
  // On a shared 2-core host (load average 15 seen) a client can lose its header deadline; 1 % may.
  EXPECT_LE(other.load(), kAttempts / 100);
  EXPECT_GT(limited.load(), 0) << "the rate limit never answered";
  ASSERT_GE(scrape_ms.size(), 3u);
  EXPECT_EQ(scrape_failures, 0);
  EXPECT_LT(Percentile(scrape_ms, 1.0), 1000) << "a scrape waited behind the flood";

  // The last finalize while the verifier hashes: let the bucket refill, queue wrong passwords without
  // waiting for their answers, and stop.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::vector<int> fds;
  for (int i = 0; i < 6; ++i) {
    const int fd = ConnectLoopback(port);
    const std::string req = Request("prometheus", "late" + std::to_string(i));
    if (fd >= 0 && send(fd, req.data(), req.size(), MSG_NOSIGNAL) > 0) fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const Clock::time_point t0 = Clock::now();
  Runtime::Instance().Release("websec");
  const double stop_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  printf("last finalize (endpoint Stop) with the verifier busy: %.1f ms\n", stop_ms);
  EXPECT_LT(stop_ms, 1000);
  EXPECT_EQ(MetricsEndpoint::Instance().port(), 0);
  for (int fd : fds) close(fd);
}

}  // namespace
}  // namespace ncclscope
