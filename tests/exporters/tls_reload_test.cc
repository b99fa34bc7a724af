// The endpoint's TLS files: read by the bounded reader (a FIFO or a directory is refused at start and at
// reload), reloaded on a thread of their own, and a reload that never returns does not hold Stop().
// Certificates are real (the openssl CLI); the one injected failure is a reader that blocks in open(2) on
// a FIFO nobody writes — what the old reader did, and what a hung network file system does to the new one,
// which cannot be made here. It is unblocked at the end of each test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "exporters/http/http_server.h"
#include "exporters/http/tls.h"
#include "log_capture.h"
#include "temp_dir.h"

namespace ncclscope {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A self-signed certificate and its key at dir/name.crt and dir/name.key.
void MakeCertificate(const std::string& dir, const std::string& name) {
  const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
                          "-subj /CN=localhost -keyout '" + dir + "/" + name + ".key' -out '" + dir + "/" + name +
                          ".crt' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the openssl CLI is needed (scripts/install-deps.sh installs it)";
}

bool AnyContains(const std::vector<std::string>& lines, const std::string& what) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

template <class Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds limit) {
  for (const auto end = Clock::now() + limit; Clock::now() < end; std::this_thread::sleep_for(10ms)) {
    if (pred()) return true;
  }
  return pred();
}

class TlsReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeCertificate(dir_.path(), "a");
    config_.cert_file = dir_.path() + "/a.crt";
    config_.key_file = dir_.path() + "/a.key";
    testing::LogCapture::Clear();
    SetNcclLogger(&testing::LogCapture::Logger);
  }
  void TearDown() override { SetNcclLogger(nullptr); }

  // Makes the certificate look changed to the reloader (new mtime and inode).
  void ReplaceCertificate() {
    MakeCertificate(dir_.path(), "b");
    ASSERT_EQ(rename((dir_.path() + "/b.key").c_str(), config_.key_file.c_str()), 0);
    ASSERT_EQ(rename((dir_.path() + "/b.crt").c_str(), config_.cert_file.c_str()), 0);
  }

  testing::ScopedTempDir dir_;
  TlsServerConfig config_;
};

// Before 2026-11-27, a FIFO as the certificate at start blocked the net plugin's init.
TEST_F(TlsReloadTest, AFifoOrADirectoryAsACertificateIsRefusedAtStart) {
  const std::string fifo = dir_.path() + "/fifo.crt";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  TlsServerConfig config = config_;
  config.cert_file = fifo;
  Result<std::shared_ptr<TlsContext>> tls = TlsContext::Create(config);
  ASSERT_FALSE(tls.ok());
  EXPECT_EQ(tls.status().message(), "cert_file " + fifo + ": is a FIFO, not a regular file");
  config = config_;
  config.key_file = dir_.path();
  tls = TlsContext::Create(config);
  ASSERT_FALSE(tls.ok());
  EXPECT_EQ(tls.status().message(), "key_file " + dir_.path() + ": is a directory, not a regular file");
}

TEST_F(TlsReloadTest, AChangedCertificateIsReloadedAndAFifoInItsPlaceIsRefusedKeepingTheOld) {
  Result<std::shared_ptr<TlsContext>> tls = TlsContext::Create(config_);
  ASSERT_TRUE(tls.ok()) << tls.status().message();
  (*tls)->StartReloads(20ms);
  ReplaceCertificate();
  EXPECT_TRUE(WaitFor([&] { return (*tls)->reloads() == 1; }, 5s));

  // Before 2026-11-27, the certificate replaced by a FIFO while the job runs hung the serving loop for ever.
  ASSERT_EQ(unlink(config_.cert_file.c_str()), 0);
  ASSERT_EQ(mkfifo(config_.cert_file.c_str(), 0600), 0);
  EXPECT_TRUE(WaitFor([] { return AnyContains(testing::LogCapture::AllWarnings(), "is a FIFO, not a regular file"); },
                      5s))
      << ::testing::PrintToString(testing::LogCapture::AllWarnings());
  EXPECT_TRUE(AnyContains(testing::LogCapture::AllWarnings(), "keeping the previous certificate"));
  EXPECT_EQ((*tls)->reloads(), 1);
  EXPECT_NE((*tls)->NewSession(-1), nullptr);  // the previous context still serves
  (*tls)->StopReloads(1s);
}

// A reader that blocks in open(2) on a FIFO from its second call on, until Release().
class StuckReader {
 public:
  explicit StuckReader(std::string fifo) : fifo_(std::move(fifo)) { mkfifo(fifo_.c_str(), 0600); }
  TlsContext::FileReader reader() {
    return [this](const char* key, const std::string& path) -> Result<std::string> {
      if (calls_.fetch_add(1) == 2) {  // Create reads cert and key; the first reload blocks, once
        stuck_ = true;
        const int fd = open(fifo_.c_str(), O_RDONLY);  // blocks until Release() opens the other end
        if (fd >= 0) close(fd);
        stuck_ = false;
      }
      return TlsContext::ReadFile(key, path);
    };
  }
  bool stuck() const { return stuck_; }
  void Release() {
    const int fd = open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
  }

 private:
  std::string fifo_;
  std::atomic<int> calls_{0};
  std::atomic<bool> stuck_{false};
};

TEST_F(TlsReloadTest, AReloadThatNeverReturnsDoesNotHoldTheServersStop) {
  StuckReader stuck(dir_.path() + "/stuck");
  Result<std::shared_ptr<TlsContext>> tls = TlsContext::Create(config_, stuck.reader());
  ASSERT_TRUE(tls.ok()) << tls.status().message();
  const std::weak_ptr<TlsContext> weak = *tls;
  HttpServer::Options options;
  options.tls = std::move(*tls);  // the server's reference (and the reloader's) are the only ones
  HttpServer server;
  ASSERT_TRUE(server.Start("127.0.0.1", 0, [](const HttpServer::Request&) { return HttpServer::Reply(); }, options)
                  .ok());
  options = HttpServer::Options();
  ReplaceCertificate();
  ASSERT_TRUE(WaitFor([&] { return stuck.stuck(); }, 5s)) << "the reloader never started the reload";
  const auto start = Clock::now();
  server.Stop();
  const auto stop_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_TRUE(AnyContains(testing::LogCapture::AllWarnings(), "has not returned within 50 ms; stopping without it"))
      << ::testing::PrintToString(testing::LogCapture::AllWarnings());
  std::printf("Stop() with a reload stuck in open(2): %lld ms\n", static_cast<long long>(stop_ms));
  EXPECT_FALSE(weak.expired());  // the stuck reloader still holds the context it reads for
  stuck.Release();
  EXPECT_TRUE(WaitFor([&] { return weak.expired(); }, 5s)) << "the reloader did not end once unblocked";
}

// What `cmd` prints (stdout and stderr).
std::string Output(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// The files go to OpenSSL from memory: a chain with an intermediate and the client CAs of mutual TLS must
// still reach a real client (the openssl CLI) as they did when OpenSSL opened the files itself.
TEST_F(TlsReloadTest, AChainAndClientCasReadFromMemoryServeARealClient) {
  const std::string d = dir_.path();
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
  const std::string script =
      "cd '" + d + "' && printf 'basicConstraints=critical,CA:true\\nkeyUsage=keyCertSign\\n' > ca.ext && "
      "printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext && "
      "openssl req -x509" + ec + "-days 2 -subj /CN=root -keyout root.key -out root.crt && "
      "openssl req" + ec + "-subj /CN=inter -keyout inter.key -out inter.csr && "
      "openssl x509 -req -in inter.csr -CA root.crt -CAkey root.key -CAcreateserial -days 2 -extfile ca.ext "
      "-out inter.crt && "
      "openssl req" + ec + "-subj /CN=localhost -keyout server.key -out server.csr && "
      "openssl x509 -req -in server.csr -CA inter.crt -CAkey inter.key -CAcreateserial -days 2 -extfile server.ext "
      "-out server.crt && cat server.crt inter.crt > chain.crt && "
      "openssl req" + ec + "-subj /CN=client -keyout client.key -out client.csr && "
      "openssl x509 -req -in client.csr -CA root.crt -CAkey root.key -CAcreateserial -days 2 -out client.crt";
  ASSERT_EQ(std::system(("(" + script + ") >/dev/null 2>&1").c_str()), 0) << script;
  TlsServerConfig config;
  config.cert_file = d + "/chain.crt";
  config.key_file = d + "/server.key";
  config.client_ca_file = d + "/root.crt";
  config.client_auth = ClientAuth::kRequireAndVerify;
  Result<std::shared_ptr<TlsContext>> tls = TlsContext::Create(config);
  ASSERT_TRUE(tls.ok()) << tls.status().message();
  HttpServer::Options options;
  options.tls = *tls;
  HttpServer server;
  const HttpServer::Handler up = [](const HttpServer::Request&) {
    return HttpServer::Reply{true, "text/plain", "up\n"};
  };
  ASSERT_TRUE(server.Start("127.0.0.1", 0, up, options).ok());
  const std::string client = "printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' | timeout 20 openssl s_client -quiet -tls1_2 "
                             "-connect 127.0.0.1:" + std::to_string(server.port()) + " -CAfile '" + d +
                             "/root.crt' -verify_return_error";
  // The server sent its intermediate (the client trusts the root only) and accepted the client's certificate.
  EXPECT_NE(Output(client + " -cert '" + d + "/client.crt' -key '" + d + "/client.key'").find("HTTP/1.0 200"),
            std::string::npos);
  // No client certificate: refused in the handshake.
  const std::string refused = Output(client);
  EXPECT_EQ(refused.find("HTTP/1.0 200"), std::string::npos) << refused;
  server.Stop();
}

}  // namespace
}  // namespace ncclscope
