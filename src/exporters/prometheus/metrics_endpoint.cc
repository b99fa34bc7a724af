#include "exporters/prometheus/metrics_endpoint.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <nlohmann/json.hpp>
#include "exporters/prometheus/exposition.h"

#include "common/host.h"
#include "common/log.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "exporters/http/basic_auth.h"
#include "exporters/http/media_types.h"
#include "exporters/prometheus/metric_families.h"
#include "exporters/http/tls.h"
#include "exporters/http/web_config.h"
#include "host_nics/process_tcp.h"

namespace ncclscope {
namespace {

// Our listening socket. A child forked without exec (e.g. a DataLoader worker) inherits it and would keep
// the port bound after we stop; the atfork child handler closes it (close() is async-signal-safe).
std::atomic<int> g_listen_fd{-1};

void CloseListenerInChild() {
  int fd = g_listen_fd.exchange(-1);
  if (fd >= 0) close(fd);
}

// What Prometheus's client libraries serve beside /metrics: a landing page and a health path.
constexpr const char* kLandingPage =
    "<!DOCTYPE html>\n<html><head><title>ncclscope</title></head><body>\n"
    "<h1>ncclscope " NCCLSCOPE_VERSION "</h1>\n"
    "<p>NCCL telemetry of this process: <a href=\"/metrics\">/metrics</a> (Prometheus text or OpenMetrics), "
    "<a href=\"/healthz\">/healthz</a>.</p>\n</body></html>\n";

HttpServer::Reply ServeMetrics(const HttpServer::Request& request) {
  HttpServer::Reply reply;
  if (request.path == "/metrics") {
    // OpenMetrics only when preferred over the text format: a bare */* gets text, as from client_golang.
    const bool om = MediaTypeQuality(request.accept, "application/openmetrics-text") >
                    MediaTypeQuality(request.accept, "text/plain");
    reply.content_type = om ? kOpenMetricsContentType : kTextContentType;
    reply.body = SerializeExposition(CollectMetricFamilies(),
                                     om ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kText);
  } else if (request.path == "/healthz") {
    reply.body = "ok\n";
  } else if (request.path == "/") {
    reply.content_type = "text/html; charset=utf-8";
    reply.body = kLandingPage;
  } else {
    reply.found = false;
    reply.body = "not found: ncclscope serves /metrics, /healthz and /\n";
  }
  return reply;
}

// Only a dotted-quad IPv4 address can be bound. An empty value is set on purpose but names no interface:
// saying so beats binding every interface, and beats the misleading "no free port" of a failed bind.
bool IsIpv4Address(const std::string& text) {
  in_addr addr{};
  return inet_pton(AF_INET, text.c_str(), &addr) == 1;
}

// 127.0.0.0/8: reachable from this host only.
bool IsLoopback(const std::string& ipv4) {
  in_addr addr{};
  return inet_pton(AF_INET, ipv4.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

}  // namespace

MetricsEndpoint& MetricsEndpoint::Instance() {
  static MetricsEndpoint* endpoint = new MetricsEndpoint();  // -z nodelete global, never destroyed
  return *endpoint;
}

bool MetricsEndpoint::TryBind(const std::string& bind, int port, const HttpServer::Options& options) {
  Status s = server_.Start(bind, port, &ServeMetrics, options);
  if (!s.ok()) NCCLSCOPE_INFO(subsys::kInit, "metrics endpoint: %s", s.message().c_str());
  return s.ok();
}

void MetricsEndpoint::Start() {
  const ParamValues& params = Params();
  const int base = static_cast<int>(params.Int(ParamId::kPromPort));
  if (base < 0) return;
  const std::string bind = params.Str(ParamId::kPromBind);
  if (!IsIpv4Address(bind)) {
    NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROM_BIND='%s' is not an IPv4 address; metrics endpoint off",
                   bind.c_str());
    return;
  }
  // NCCLSCOPE_PROM_WEB_CONFIG: TLS and basic auth (web_config.h). A file that cannot be used turns the
  // endpoint off: never plain HTTP when TLS or authentication was asked for.
  HttpServer::Options options;
  const std::string web_config = params.Str(ParamId::kPromWebConfig);
  if (!web_config.empty()) {
    Result<WebConfig> config = LoadWebConfig(web_config);
    Status s = config.status();
    if (s.ok() && config->tls) {
      Result<std::shared_ptr<TlsContext>> tls = TlsContext::Create(config->tls_config);
      s = tls.status();
      if (s.ok()) options.tls = *tls;
    }
    if (config.status().ok()) {
      for (const auto& [name, value] : config->headers) options.headers += name + ": " + value + "\r\n";
    }
    if (s.ok() && !config->users.empty()) {
      Result<std::unique_ptr<BasicAuth>> auth = BasicAuth::Create(config->users);
      s = auth.status();
      if (s.ok()) options.auth = std::move(*auth);
    }
    if (!s.ok()) {
      NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROM_WEB_CONFIG=%s: %s; metrics endpoint off", web_config.c_str(),
                     s.message().c_str());
      return;
    }
  }
  const char* scheme = options.tls != nullptr ? "https" : "http";
  const int local_rank = LocalRankFromEnv();
  bool bound = false;
  bool taken = false;  // every port tried was in use (EADDRINUSE); any other failure keeps the endpoint off
  if (base == 0) {
    bound = TryBind(bind, 0, options);
  } else if (local_rank >= 0) {
    const int wanted = base + local_rank;
    bound = wanted <= 65535 && TryBind(bind, wanted, options);
    taken = !bound && wanted <= 65535 && server_.address_in_use();
  } else {
    taken = true;
    for (int p = base; !bound && p < base + 16 && p <= 65535; ++p) {
      bound = TryBind(bind, p, options);
      taken = taken && (bound || server_.address_in_use());
    }
  }
  if (!bound && taken) {
    // A second job on the node (or anything else) has our port. Without an endpoint the job would vanish from
    // Prometheus: no up == 0, no rank-down or hang alert. A kernel-chosen port keeps it visible wherever targets
    // are discovered through file_sd; a static scrape config cannot know it, hence the warning.
    bound = TryBind(bind, 0, options);
    if (bound) {
      const std::string wanted =
          local_rank >= 0 ? "port " + std::to_string(base + local_rank) + " (NCCLSCOPE_PROM_PORT " +
                                std::to_string(base) + " + local rank " + std::to_string(local_rank) + ")"
                          : "ports " + std::to_string(base) + "-" + std::to_string(std::min(base + 15, 65535)) +
                                " (NCCLSCOPE_PROM_PORT " + std::to_string(base) + ", no local rank)";
      NCCLSCOPE_WARN(subsys::kInit,
                     "metrics endpoint: %s at %s in use by another process (another job on this host?); "
                     "serving on port %d instead, %s",
                     wanted.c_str(), bind.c_str(), server_.port(),
                     params.Str(ParamId::kSdDir).empty()
                         ? "which no file_sd target announces (NCCLSCOPE_SD_DIR unset): a static scrape config "
                           "will not find it"
                         : "announced in this rank's file_sd target (NCCLSCOPE_SD_DIR)");
    }
  }
  if (!bound) {
    NCCLSCOPE_WARN(subsys::kInit,
                   "metrics endpoint disabled: no free port at %s:%d%s (set NCCLSCOPE_PROM_PORT, or -1 to silence)",
                   bind.c_str(), base, local_rank >= 0 ? " + LOCAL_RANK" : "..+15");
    return;
  }
  const int port = server_.port();
  port_.store(port, std::memory_order_release);
  SkipTcpLocalPort(port);  // scrapes are not the job's traffic
  g_listen_fd.store(server_.listen_fd());
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, &CloseListenerInChild); });
  WriteSdFile();
  NCCLSCOPE_INFO(subsys::kInit, "metrics endpoint at %s://%s:%d/metrics%s", scheme, HostName().c_str(), port,
                 options.auth != nullptr ? " (basic auth)" : "");
}

void MetricsEndpoint::WriteSdFile() {
  // Computed here, on the init thread (where NCCL has set the CUDA device), even without file_sd: a first use
  // on a scrape thread would find no current context and no GPU UUID.
  (void)Identity();
  const std::string dir = Params().Str(ParamId::kSdDir);
  if (dir.empty()) return;
  // Prometheus must reach the address we bound: the host name when bound to all interfaces.
  const std::string bind = Params().Str(ParamId::kPromBind);
  const std::string target = (bind == "0.0.0.0" ? HostName() : bind) + ":" + std::to_string(port());
  if (IsLoopback(bind)) {
    // file_sd targets are for a Prometheus that may run on another host, which cannot reach a loopback address.
    NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kInit,
                       "NCCLSCOPE_SD_DIR=%s publishes target %s, a loopback address (NCCLSCOPE_PROM_BIND=%s): "
                       "a Prometheus on another host cannot scrape it; bind an address it can reach "
                       "(docs/endpoint-security.md), or ignore this where Prometheus runs on this host",
                       dir.c_str(), target.c_str(), bind.c_str());
  }
  Result<OutputDir*> out = OutputDir::Get(dir);
  if (!out.ok()) {
    ReportWriteFailure(dir, out.status(), subsys::kInit);
    return;
  }
  // The identity labels are target labels here, and then in no series of the exposition (docs/metrics.md).
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [label, value] : Identity().Labels()) labels[label] = value;
  nlohmann::json sd = nlohmann::json::array();
  sd.push_back({{"targets", {target}}, {"labels", labels}});
  // Never an empty or half target list: a failed write warns once and publishes nothing. The file is bound
  // to this process's owner lock and outlives it by NCCLSCOPE_OUTPUT_GRACE_S (a crashed rank shows as down).
  const std::string name = (*out)->OwnedName(".json");
  if ((*out)->WriteAtomically(name, sd.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").ok()) {
    SetIdentityOnTarget(true);
  }
}

void MetricsEndpoint::Stop() {
  // The file_sd target stays: removed once our owner lock is free and NCCLSCOPE_OUTPUT_GRACE_S has passed
  // (common/output_dir.h), so that Prometheus sees the end of a rank as a target going down.
  g_listen_fd.store(-1);
  port_.store(0, std::memory_order_release);
  server_.Stop();  // joins the server thread
}

}  // namespace ncclscope
