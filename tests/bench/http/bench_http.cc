// bench_http: how long HttpServer::Stop() takes, and how long a scrape of /metrics takes, with no other
// client and with 50 slow clients (one byte of a never-ending request header every 150 ms) plus 50 idle
// ones (connected, silent) — the clients that held the old one-at-a-time server for seconds each; and
// Stop() of a TLS endpoint with 50 idle TLS clients, with and without a certificate reload stuck in a read.
// Real loopback sockets; the server runs with its shipped options (64 connections, 2 s / 10 s deadlines).
// The body is a fixed 32 KiB exposition, so the figures are the server's, not the metric families'.
// Usage: bench_http [--benchmark_filter=…]
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "exporters/http/http_server.h"
#include "exporters/http/tls.h"
#include "http_get.h"
#include "http_load.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using ncclscope::HttpServer;
using ncclscope::testing::ClientLoad;

const std::string& Body() {
  static const std::string* body = [] {
    auto* s = new std::string();
    for (int i = 0; s->size() < 32 * 1024; ++i) {
      *s += "ncclscope_bench_bytes_total{comm=\"c" + std::to_string(i) + "\",peer=\"7\"} 123456789\n";
    }
    return s;
  }();
  return *body;
}

HttpServer::Reply Handler(const HttpServer::Request& request) {
  HttpServer::Reply reply;
  reply.found = request.path == "/metrics";
  if (reply.found) reply.body = Body();
  return reply;
}

void AddPercentiles(benchmark::State& state, std::vector<double> us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))]; };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
  state.counters["max_us"] = us.back();
}

// Arg 0: no other client; 1: 50 slow + 50 idle clients connected when Stop() is called.
void BM_Stop(benchmark::State& state) {
  const bool loaded = state.range(0) != 0;
  std::vector<double> us;
  for (auto _ : state) {
    HttpServer server;
    if (!server.Start("127.0.0.1", 0, &Handler).ok()) {
      state.SkipWithError("cannot start the server");
      return;
    }
    std::unique_ptr<ClientLoad> load;
    if (loaded) {
      load = std::make_unique<ClientLoad>(server.port(), 50, 50, 150ms, /*reconnect=*/false);
      std::this_thread::sleep_for(400ms);  // accepted, and the slow ones a few bytes into their request
    }
    const Clock::time_point t0 = Clock::now();
    server.Stop();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(s);
    us.push_back(s * 1e6);
    load.reset();
  }
  AddPercentiles(state, us);
}
BENCHMARK(BM_Stop)->ArgName("slow50_idle50")->Arg(0)->Arg(1)->UseManualTime()->Iterations(20)->Unit(benchmark::kMicrosecond);

// Arg 0: no other client; 1: 50 slow + 50 idle clients kept connected (replaced when their deadline
// drops them) during every scrape.
void BM_Scrape(benchmark::State& state) {
  HttpServer server;
  if (!server.Start("127.0.0.1", 0, &Handler).ok()) {
    state.SkipWithError("cannot start the server");
    return;
  }
  std::unique_ptr<ClientLoad> load;
  if (state.range(0) != 0) {
    load = std::make_unique<ClientLoad>(server.port(), 50, 50, 150ms, /*reconnect=*/true);
    std::this_thread::sleep_for(400ms);
  }
  std::vector<double> us;
  for (auto _ : state) {
    const Clock::time_point t0 = Clock::now();
    int status = 0;
    std::string body = ncclscope::testing::HttpGet(server.port(), "/metrics", &status);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (status != 200 || body.size() != Body().size()) {
      state.SkipWithError("scrape failed");
      break;
    }
  }
  if (load) state.counters["clients_dropped_by_deadline"] = load->dropped();
  AddPercentiles(state, us);
  load.reset();
  server.Stop();
}
BENCHMARK(BM_Scrape)->ArgName("slow50_idle50")->Arg(0)->Arg(1)->Iterations(2000)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- Stop() of a TLS endpoint while a certificate reload is stuck ----

// A TLS client through libssl, opened like the plugin opens it (no OpenSSL header needed at build time).
struct SslClientApi {
  const void* (*TLS_client_method)();
  void* (*SSL_CTX_new)(const void*);
  void* (*SSL_new)(void*);
  void (*SSL_free)(void*);
  int (*SSL_set_fd)(void*, int);
  int (*SSL_connect)(void*);
};

const SslClientApi* ClientApi() {
  static const SslClientApi* api = []() -> const SslClientApi* {
    void* lib = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return nullptr;
    auto* a = new SslClientApi;
    a->TLS_client_method = reinterpret_cast<decltype(a->TLS_client_method)>(dlsym(lib, "TLS_client_method"));
    a->SSL_CTX_new = reinterpret_cast<decltype(a->SSL_CTX_new)>(dlsym(lib, "SSL_CTX_new"));
    a->SSL_new = reinterpret_cast<decltype(a->SSL_new)>(dlsym(lib, "SSL_new"));
    a->SSL_free = reinterpret_cast<decltype(a->SSL_free)>(dlsym(lib, "SSL_free"));
    a->SSL_set_fd = reinterpret_cast<decltype(a->SSL_set_fd)>(dlsym(lib, "SSL_set_fd"));
    a->SSL_connect = reinterpret_cast<decltype(a->SSL_connect)>(dlsym(lib, "SSL_connect"));
    return a;
  }();
  return api;
}

// `n` clients that complete the TLS handshake and then say nothing.
class IdleTlsClients {
 public:
  IdleTlsClients(int port, int n) {
    const SslClientApi* api = ClientApi();
    void* ctx = api->SSL_CTX_new(api->TLS_client_method());  // kept for the process: a bench
    for (int i = 0; i < n; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      void* ssl = api->SSL_new(ctx);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && api->SSL_set_fd(ssl, fd) == 1 &&
          api->SSL_connect(ssl) == 1) {
        ++connected_;
      }
      clients_.push_back({fd, ssl});
    }
  }
  ~IdleTlsClients() {
    for (auto [fd, ssl] : clients_) {
      ClientApi()->SSL_free(ssl);
      close(fd);
    }
  }
  int connected() const { return connected_; }

 private:
  std::vector<std::pair<int, void*>> clients_;
  int connected_ = 0;
};

// A certificate and key made once with the openssl CLI, and a FIFO to block the reader on.
struct TlsFiles {
  std::string dir, cert, key, fifo;
};
const TlsFiles* Files() {
  static const TlsFiles* files = []() -> const TlsFiles* {
    char tmpl[] = "/tmp/ncclscope-bench-tls-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return nullptr;
    auto* f = new TlsFiles{tmpl, std::string(tmpl) + "/s.crt", std::string(tmpl) + "/s.key", std::string(tmpl) + "/stuck"};
    const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
                            "-subj /CN=localhost -keyout " + f->key + " -out " + f->cert + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0 || mkfifo(f->fifo.c_str(), 0600) != 0) return nullptr;
    return f;
  }();
  return files;
}

// Arg 0: 50 idle TLS clients; 1: the same and a certificate reload stuck in open(2) on a FIFO nobody
// writes. The stuck read is injected (the old reader's blocking open; the bounded reader refuses FIFOs,
// and a hung network file system, which it cannot refuse, cannot be made here).
void BM_StopTls(benchmark::State& state) {
  const TlsFiles* files = Files();
  if (files == nullptr || ClientApi() == nullptr) {
    state.SkipWithError("needs the openssl CLI and libssl.so.3");
    return;
  }
  const bool stuck = state.range(0) != 0;
  ncclscope::TlsServerConfig config;
  config.cert_file = files->cert;
  config.key_file = files->key;
  std::vector<double> us;
  for (auto _ : state) {
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto in_read = std::make_shared<std::atomic<bool>>(false);
    auto reader = [=](const char* key, const std::string& path) -> ncclscope::Result<std::string> {
      if (stuck && calls->fetch_add(1) == 2) {  // Create's two reads pass; the first reload blocks, once
        *in_read = true;
        const int fd = open(files->fifo.c_str(), O_RDONLY);
        if (fd >= 0) close(fd);
      }
      return ncclscope::TlsContext::ReadFile(key, path);
    };
    auto tls = ncclscope::TlsContext::Create(config, reader);
    if (!tls.ok()) {
      state.SkipWithError(tls.status().message().c_str());
      return;
    }
    const std::weak_ptr<ncclscope::TlsContext> weak = *tls;
    HttpServer::Options options;
    options.tls = std::move(*tls);
    HttpServer server;
    if (!server.Start("127.0.0.1", 0, &Handler, options).ok()) {
      state.SkipWithError("cannot start the server");
      return;
    }
    options = HttpServer::Options();
    if (stuck) {
      utimensat(AT_FDCWD, files->cert.c_str(), nullptr, 0);  // a new mtime: the reloader reads again
      for (int i = 0; i < 300 && !*in_read; ++i) std::this_thread::sleep_for(10ms);
    }
    auto clients = std::make_unique<IdleTlsClients>(server.port(), 50);
    state.counters["tls_clients"] = clients->connected();
    const Clock::time_point t0 = Clock::now();
    server.Stop();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(s);
    us.push_back(s * 1e6);
    clients.reset();
    const int fd = open(files->fifo.c_str(), O_WRONLY | O_NONBLOCK);  // unblock the stuck reader
    if (fd >= 0) close(fd);
    for (int i = 0; i < 300 && !weak.expired(); ++i) std::this_thread::sleep_for(10ms);
  }
  AddPercentiles(state, us);
}
BENCHMARK(BM_StopTls)->ArgName("stuck_reload")->Arg(0)->Arg(1)->UseManualTime()->Iterations(10)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
