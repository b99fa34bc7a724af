// The OTLP push: the encoder's bytes taken apart by field number (otlp_wire.h) for each family type, the
// variables' parsing and precedence, and the POST and the exporter against an in-test receiver that answers,
// refuses or never answers: a push never outlives its timeout and a failure is counted, never retried.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/params.h"
#include "exporters/otlp/http_post.h"
#include "exporters/otlp/otlp_config.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/otlp/otlp_exporter.h"
#include "exporters/otlp/proto_writer.h"
#include "exporters/prometheus/family_builders.h"
#include "otlp_wire.h"

namespace ncclscope::otlp {
namespace {

using namespace ncclscope::otlp::testing;  // NOLINT: the wire reader's small vocabulary
using Clock = std::chrono::steady_clock;

TEST(OtlpProtoWriter, VarintsAndFixedWidthsAreTheWireFormats) {
  ProtoWriter w;
  w.Varint(300);
  EXPECT_EQ(w.bytes(), std::string("\xac\x02", 2));
  w.Clear();
  w.Varint(0);
  w.Varint(uint64_t{1} << 63);
  EXPECT_EQ(w.bytes(), std::string("\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11));
  w.Clear();
  w.Fixed64Field(2, 0x0102030405060708ull);  // tag (2 << 3) | 1, then little-endian
  EXPECT_EQ(w.bytes(), std::string("\x11\x08\x07\x06\x05\x04\x03\x02\x01", 9));
  w.Clear();
  w.BytesField(1, "abc");
  EXPECT_EQ(w.bytes(), std::string("\x0a\x03" "abc", 5));
}

std::vector<prometheus::MetricFamily> SampleFamilies() {
  std::vector<prometheus::MetricFamily> out;
  auto counter = prom::Family("ncclscope_x_total", "a counter", prometheus::MetricType::Counter);
  prom::AddCounter(&counter, 42, {{"comm", "c1"}, {"kind", "coll"}});
  prom::AddCounter(&counter, 7.5, {{"comm", "c2"}, {"kind", "p2p"}});
  out.push_back(counter);
  auto gauge = prom::Family("ncclscope_g", "a gauge", prometheus::MetricType::Gauge);
  prom::AddGauge(&gauge, -3.25, {});
  out.push_back(gauge);
  auto hist = prom::Family("ncclscope_h_seconds", "a histogram", prometheus::MetricType::Histogram);
  prometheus::ClientMetric m;
  m.label = {{"comm", "c1"}};
  m.histogram.bucket = {{2, 0.001}, {5, 0.01}, {9, 0.1}, {10, std::numeric_limits<double>::infinity()}};
  m.histogram.sample_count = 10;
  m.histogram.sample_sum = 0.42;
  hist.metric.push_back(m);
  out.push_back(hist);
  out.push_back(prom::Family("ncclscope_empty", "no series", prometheus::MetricType::Gauge));
  auto summary = prom::Family("ncclscope_s", "a summary", prometheus::MetricType::Summary);
  summary.metric.emplace_back();
  out.push_back(summary);
  return out;
}

ExportContext SampleContext() {
  ExportContext ctx;
  ctx.resource = {{"service.name", "ncclscope"}, {"ncclscope_job", "j1"}, {"global_rank", "3"}};
  ctx.scope_version = "9.9.9";
  ctx.start_time_ns = 1'000'000'000;
  ctx.time_ns = 2'000'000'000;
  return ctx;
}

// The metrics of the request's one ResourceMetrics' one ScopeMetrics, after checking resource and scope.
std::vector<std::vector<WireField>> MetricsOf(const std::string& request) {
  const auto resource_metrics = Decode(One(Decode(request), 1).bytes);
  const auto resource = Decode(One(resource_metrics, 1).bytes);
  const auto attributes = StringAttributes(resource, 1);
  EXPECT_EQ(attributes, (std::vector<std::pair<std::string, std::string>>{
                            {"service.name", "ncclscope"}, {"ncclscope_job", "j1"}, {"global_rank", "3"}}));
  const auto scope_metrics = Decode(One(resource_metrics, 2).bytes);
  const auto scope = Decode(One(scope_metrics, 1).bytes);
  EXPECT_EQ(One(scope, 1).bytes, "ncclscope");
  EXPECT_EQ(One(scope, 2).bytes, "9.9.9");
  std::vector<std::vector<WireField>> metrics;
  for (const WireField& m : All(scope_metrics, 2)) metrics.push_back(Decode(m.bytes));
  return metrics;
}

TEST(OtlpEncoder, CounterIsACumulativeMonotonicSum) {
  const auto metrics = MetricsOf(EncodeMetricsRequest(SampleFamilies(), SampleContext()));
  ASSERT_EQ(metrics.size(), 3u) << "the empty family and the summary are left out";
  const auto& counter = metrics[0];
  EXPECT_EQ(One(counter, 1).bytes, "ncclscope_x_total");
  EXPECT_EQ(One(counter, 2).bytes, "a counter");
  EXPECT_FALSE(Has(counter, 5));
  const auto sum = Decode(One(counter, 7).bytes);
  EXPECT_EQ(One(sum, 2).value, 2u) << "AGGREGATION_TEMPORALITY_CUMULATIVE";
  EXPECT_EQ(One(sum, 3).value, 1u) << "is_monotonic";
  const auto points = All(sum, 1);
  ASSERT_EQ(points.size(), 2u);
  const auto p0 = Decode(points[0].bytes);
  EXPECT_EQ(One(p0, 4).AsDouble(), 42.0);
  EXPECT_EQ(One(p0, 2).value, 1'000'000'000u);
  EXPECT_EQ(One(p0, 3).value, 2'000'000'000u);
  EXPECT_EQ(StringAttributes(p0, 7),
            (std::vector<std::pair<std::string, std::string>>{{"comm", "c1"}, {"kind", "coll"}}));
  EXPECT_EQ(One(Decode(points[1].bytes), 4).AsDouble(), 7.5);
}

TEST(OtlpEncoder, GaugeHasNoStartTime) {
  const auto metrics = MetricsOf(EncodeMetricsRequest(SampleFamilies(), SampleContext()));
  ASSERT_EQ(metrics.size(), 3u);
  EXPECT_EQ(One(metrics[1], 1).bytes, "ncclscope_g");
  EXPECT_FALSE(Has(metrics[1], 7));
  const auto point = Decode(One(Decode(One(metrics[1], 5).bytes), 1).bytes);
  EXPECT_EQ(One(point, 4).AsDouble(), -3.25);
  EXPECT_FALSE(Has(point, 2));
  EXPECT_EQ(One(point, 3).value, 2'000'000'000u);
  EXPECT_FALSE(Has(point, 7)) << "no labels, no attributes";
}

TEST(OtlpEncoder, HistogramCountsPerBucketWithFiniteBounds) {
  const auto metrics = MetricsOf(EncodeMetricsRequest(SampleFamilies(), SampleContext()));
  ASSERT_EQ(metrics.size(), 3u);
  const auto hist = Decode(One(metrics[2], 9).bytes);
  EXPECT_EQ(One(hist, 2).value, 2u);
  const auto point = Decode(One(hist, 1).bytes);
  EXPECT_EQ(StringAttributes(point, 9), (std::vector<std::pair<std::string, std::string>>{{"comm", "c1"}}));
  EXPECT_EQ(One(point, 4).value, 10u);
  EXPECT_DOUBLE_EQ(One(point, 5).AsDouble(), 0.42);
  EXPECT_EQ(Packed64(One(point, 6).bytes), (std::vector<uint64_t>{2, 3, 4, 1}));
  std::vector<double> bounds;
  for (uint64_t bits : Packed64(One(point, 7).bytes)) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    bounds.push_back(d);
  }
  EXPECT_EQ(bounds, (std::vector<double>{0.001, 0.01, 0.1}));
}

TEST(OtlpConfig, UrlsAreHttpOrHttps) {
  std::string why;
  auto url = ParseHttpUrl("http://vm.example:8428/opentelemetry/v1/metrics", &why);
  ASSERT_TRUE(url) << why;
  EXPECT_EQ(url->host, "vm.example");
  EXPECT_EQ(url->port, 8428);
  EXPECT_EQ(url->path, "/opentelemetry/v1/metrics");
  url = ParseHttpUrl("http://collector", &why);
  ASSERT_TRUE(url) << why;
  EXPECT_EQ(url->port, 80);
  EXPECT_EQ(url->path, "/");
  EXPECT_FALSE(url->https);
  url = ParseHttpUrl("https://collector/v1/metrics", &why);
  ASSERT_TRUE(url) << why;
  EXPECT_TRUE(url->https);
  EXPECT_EQ(url->port, 443);
  EXPECT_FALSE(ParseHttpUrl("ftp://collector:4318", &why));
  EXPECT_NE(why.find("https://"), std::string::npos) << why;
  EXPECT_FALSE(ParseHttpUrl("collector:4318", &why));
  EXPECT_FALSE(ParseHttpUrl("http://:4318/", &why));
  EXPECT_FALSE(ParseHttpUrl("http://c:99999/", &why));
  EXPECT_FALSE(ParseHttpUrl("http://c:43x8/", &why));
}

TEST(OtlpConfig, KeyValueListsArePercentDecodedAndBadEntriesSkipped) {
  std::string skipped;
  const KeyValues kv = ParseKeyValueList(" api-key = s%3Dcr%2Ct ,broken, =v,team=ml%20infra,,", &skipped);
  EXPECT_EQ(kv, (KeyValues{{"api-key", "s=cr,t"}, {"team", "ml infra"}}));
  EXPECT_EQ(skipped, "'broken', '=v'");
}

class OtlpEnv : public ::testing::Test {
 protected:
  void Set(const char* name, const char* value) {
    setenv(name, value, 1);
    names_.push_back(name);
    ReloadParams();
  }
  void TearDown() override {
    for (const char* n : names_) unsetenv(n);
    ReloadParams();
  }
  ProcessIdentity Identity() const {
    ProcessIdentity id;
    id.job = "job-7";
    id.host = "node-1";
    id.global_rank = "5";
    id.local_rank = "1";
    return id;
  }

 private:
  std::vector<const char*> names_;
};

TEST_F(OtlpEnv, OffWithoutAnEndpoint) { EXPECT_FALSE(OtlpConfigFromParams(Identity())); }

TEST_F(OtlpEnv, BaseEndpointGetsV1MetricsAndTheFullOneWins) {
  Set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/");
  auto c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->url.path, "/v1/metrics");
  EXPECT_EQ(c->interval_ms, 15000);
  EXPECT_EQ(c->timeout_ms, 10000);
  Set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://vm:8428/opentelemetry/v1/metrics");
  c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->url.host, "vm");
  EXPECT_EQ(c->url.path, "/opentelemetry/v1/metrics");
  Set("NCCLSCOPE_OTLP_METRICS_ENDPOINT", "http://mine:1/x");
  c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->url.host, "mine");
}

TEST_F(OtlpEnv, BadNumbersKeepTheDefault) {
  Set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  Set("OTEL_METRIC_EXPORT_INTERVAL", "soon");
  Set("OTEL_EXPORTER_OTLP_TIMEOUT", "0");
  auto c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->interval_ms, 15000);
  EXPECT_EQ(c->timeout_ms, 10000);
  EXPECT_FALSE(Params().Problem(ParamId::kOtlpIntervalMs).empty());
  Set("OTEL_METRIC_EXPORT_INTERVAL", "500");
  Set("NCCLSCOPE_OTLP_TIMEOUT_MS", "250");
  c = OtlpConfigFromParams(Identity());
  EXPECT_EQ(c->interval_ms, 500);
  EXPECT_EQ(c->timeout_ms, 250);
}

TEST_F(OtlpEnv, MetricsVariablesWinOverTheGeneralOnes) {
  Set("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318");
  Set("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20general,X-Team=ml");
  Set("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "authorization=Bearer%20metrics");
  Set("OTEL_EXPORTER_OTLP_TIMEOUT", "3000");
  Set("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "2000");
  Set("OTEL_EXPORTER_OTLP_COMPRESSION", "none");
  Set("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "GZIP");
  Set("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem");
  Set("OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "/etc/metrics-ca.pem");
  auto c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->url.https);
  EXPECT_EQ(c->headers, (KeyValues{{"X-Team", "ml"}, {"authorization", "Bearer metrics"}}));
  EXPECT_EQ(c->timeout_ms, 2000);
  EXPECT_TRUE(c->gzip);
  EXPECT_EQ(c->tls.ca_file, "/etc/metrics-ca.pem");
  EXPECT_EQ(c->tls.client_cert_file, "");
}

TEST_F(OtlpEnv, OnlyHttpProtobufIsSpokenAndAClientCertificateNeedsItsKey) {
  Set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  Set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
  EXPECT_TRUE(OtlpConfigFromParams(Identity()));
  Set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc");
  EXPECT_FALSE(OtlpConfigFromParams(Identity()));
  Set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json");
  EXPECT_FALSE(OtlpConfigFromParams(Identity()));
  Set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf");
  Set("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/etc/client.pem");
  EXPECT_FALSE(OtlpConfigFromParams(Identity()));
  Set("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/etc/client.key");
  auto c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->tls.client_key_file, "/etc/client.key");
  EXPECT_FALSE(c->gzip);
  Set("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli");  // warned, uncompressed
  c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->gzip);
}

TEST_F(OtlpEnv, ResourceHasServiceNameUserAttributesThenIdentity) {
  Set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  auto c = OtlpConfigFromParams(Identity());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->resource, (KeyValues{{"service.name", "ncclscope"}, {"ncclscope_job", "job-7"}, {"host", "node-1"},
                                    {"global_rank", "5"}, {"local_rank", "1"}}));
  Set("OTEL_RESOURCE_ATTRIBUTES", "service.name=trainer,host=override,deployment.environment=prod");
  c = OtlpConfigFromParams(Identity());
  EXPECT_EQ(c->resource, (KeyValues{{"service.name", "trainer"}, {"host", "override"},
                                    {"deployment.environment", "prod"}, {"ncclscope_job", "job-7"},
                                    {"global_rank", "5"}, {"local_rank", "1"}}));
  Set("OTEL_SERVICE_NAME", "llm");
  c = OtlpConfigFromParams(Identity());
  EXPECT_EQ(c->resource.front(), (std::pair<std::string, std::string>{"service.name", "llm"}));
  Set("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20t0k,X-Scope-OrgID=team");
  c = OtlpConfigFromParams(Identity());
  EXPECT_EQ(c->headers, (KeyValues{{"Authorization", "Bearer t0k"}, {"X-Scope-OrgID", "team"}}));
}

// A one-connection-at-a-time HTTP receiver on loopback: answers `status`, or reads and never answers.
class FakeReceiver {
 public:
  enum class Mode { kAnswer, kSilent };
  // `serve` false: listening, but no thread until Serve() (so that the process can still fork single-threaded).
  FakeReceiver(Mode mode, int status, bool serve = true) : FakeReceiver(mode, std::vector<int>{status}, serve) {}
  // One status per request in turn, the last one from then on; a 429 or 503 says "Retry-After: 0".
  FakeReceiver(Mode mode, std::vector<int> statuses, bool serve = true) : mode_(mode), statuses_(std::move(statuses)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 16);
    if (serve) Serve();
  }
  void Serve() { thread_ = std::thread([this] { Loop(); }); }
  ~FakeReceiver() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/metrics"; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Loop() {
    std::vector<int> held;  // kSilent: connections kept open, unanswered, until the end
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      for (;;) {  // until the headers and Content-Length bytes of body are in
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 1000) <= 0) break;
        const ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
        const size_t end = req.find("\r\n\r\n");
        const size_t cl = req.find("Content-Length: ");
        if (end != std::string::npos && cl != std::string::npos &&
            req.size() >= end + 4 + std::stoul(req.substr(cl + 16))) {
          break;
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(req);
      }
      if (mode_ == Mode::kSilent) {
        held.push_back(c);
        continue;
      }
      const int status = statuses_[std::min(answered_++, statuses_.size() - 1)];
      const std::string body = status == 200 ? "" : "cannot parse";
      const std::string retry = status == 429 || status == 503 ? "Retry-After: 0\r\n" : "";
      const std::string resp = "HTTP/1.1 " + std::to_string(status) + " X\r\n" + retry + "Content-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
      (void)!send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
      close(c);
    }
    for (int c : held) close(c);
  }

  Mode mode_;
  std::vector<int> statuses_;
  size_t answered_ = 0;  // the receiver thread's
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

// The names of every metric of a request, whatever its resource and scope.
std::vector<std::string> MetricsOfAnyResource(const std::string& request) {
  std::vector<std::string> names;
  for (const WireField& rm : All(Decode(request), 1)) {
    for (const WireField& sm : All(Decode(rm.bytes), 2)) {
      for (const WireField& m : All(Decode(sm.bytes), 2)) names.push_back(One(Decode(m.bytes), 1).bytes);
    }
  }
  return names;
}

HttpUrl UrlOf(const std::string& text) {
  std::string why;
  return *ParseHttpUrl(text, &why);
}

TEST(OtlpHttpPost, SendsProtobufWithHeadersAndReads2xx) {
  FakeReceiver rx(FakeReceiver::Mode::kAnswer, 200);
  HttpPoster poster(UrlOf(rx.url()), {{"Authorization", "Bearer x"}}, {});
  const PostResult r = poster.Post("application/x-protobuf", "", std::string("\x0a\x00", 2),
                                   Clock::now() + std::chrono::seconds(5));
  EXPECT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(rx.requests().size(), 1u);
  const std::string req = rx.requests()[0];
  EXPECT_EQ(req.rfind("POST /v1/metrics HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("Content-Type: application/x-protobuf\r\n"), std::string::npos);
  EXPECT_NE(req.find("Authorization: Bearer x\r\n"), std::string::npos);
  EXPECT_EQ(req.substr(req.size() - 2), std::string("\x0a\x00", 2));
}

TEST(OtlpHttpPost, A4xxIsAFailureNamingTheStatusAndBody) {
  FakeReceiver rx(FakeReceiver::Mode::kAnswer, 400);
  HttpPoster poster(UrlOf(rx.url()), {}, {});
  const PostResult r = poster.Post("application/x-protobuf", "", "x", Clock::now() + std::chrono::seconds(5));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.error.find("cannot parse"), std::string::npos) << r.error;
}

TEST(OtlpHttpPost, ASilentReceiverCostsNoMoreThanTheDeadline) {
  FakeReceiver rx(FakeReceiver::Mode::kSilent, 0);
  HttpPoster poster(UrlOf(rx.url()), {}, {});
  const auto t0 = Clock::now();
  const PostResult r = poster.Post("application/x-protobuf", "", "x", t0 + std::chrono::milliseconds(300));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
  EXPECT_GE(ms, 250);
  EXPECT_LT(ms, 1000);
}

TEST(OtlpHttpPost, NobodyListeningIsAnError) {
  int port = 0;
  {
    FakeReceiver rx(FakeReceiver::Mode::kAnswer, 200);
    port = std::stoi(rx.url().substr(17));
  }
  HttpPoster poster(UrlOf("http://127.0.0.1:" + std::to_string(port) + "/"), {}, {});
  const PostResult r = poster.Post("application/x-protobuf", "", "x", Clock::now() + std::chrono::seconds(2));
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("connect"), std::string::npos) << r.error;
}

TEST_F(OtlpEnv, ExporterPushesOnItsIntervalAndOnceAtStop) {
  FakeReceiver rx(FakeReceiver::Mode::kAnswer, 200);
  Set("NCCLSCOPE_OTLP_METRICS_ENDPOINT", rx.url().c_str());
  Set("NCCLSCOPE_OTLP_INTERVAL_MS", "100");
  OtlpExporter& exporter = OtlpExporter::Instance();
  const ExportCounts before = exporter.counts();
  exporter.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  exporter.Stop();
  const ExportCounts after = exporter.counts();
  EXPECT_GE(after.exports - before.exports, 2u);  // ~4 on the interval (fewer on a loaded host), one at Stop
  EXPECT_EQ(after.failed, before.failed);
  EXPECT_GT(after.bytes, before.bytes);
  ASSERT_EQ(rx.requests().size(), after.exports - before.exports);
  // The last request is a well-formed ExportMetricsServiceRequest carrying the self-metrics.
  const std::string req = rx.requests().back();
  const std::string body = req.substr(req.find("\r\n\r\n") + 4);
  bool self_metric = false;
  for (const auto& m : MetricsOfAnyResource(body)) self_metric |= m == "ncclscope_otlp_exports_total";
  EXPECT_TRUE(self_metric);
}

TEST_F(OtlpEnv, TransientFailuresAreTriedAgainWithinThePushsTimeout) {
  FakeReceiver rx(FakeReceiver::Mode::kAnswer, std::vector<int>{503, 429, 200});
  Set("NCCLSCOPE_OTLP_METRICS_ENDPOINT", rx.url().c_str());
  Set("NCCLSCOPE_OTLP_INTERVAL_MS", "3600000");  // only the push at Stop
  OtlpExporter& exporter = OtlpExporter::Instance();
  const ExportCounts before = exporter.counts();
  exporter.Start();
  exporter.Stop();
  const ExportCounts after = exporter.counts();
  EXPECT_EQ(after.exports - before.exports, 1u);
  EXPECT_EQ(after.retries - before.retries, 2u);
  EXPECT_EQ(after.failed, before.failed);
  EXPECT_EQ(rx.requests().size(), 3u);
}

TEST_F(OtlpEnv, ARefusedPushIsNotTriedAgain) {
  FakeReceiver rx(FakeReceiver::Mode::kAnswer, 400);
  Set("NCCLSCOPE_OTLP_METRICS_ENDPOINT", rx.url().c_str());
  Set("NCCLSCOPE_OTLP_INTERVAL_MS", "3600000");
  OtlpExporter& exporter = OtlpExporter::Instance();
  const ExportCounts before = exporter.counts();
  exporter.Start();
  exporter.Stop();
  const ExportCounts after = exporter.counts();
  EXPECT_EQ(after.failed - before.failed, 1u);
  EXPECT_EQ(after.retries, before.retries);
  EXPECT_EQ(rx.requests().size(), 1u);
}

TEST_F(OtlpEnv, GzipCompressesTheBodyAndSaysSo) {
  FakeReceiver rx(FakeReceiver::Mode::kAnswer, 200);
  Set("NCCLSCOPE_OTLP_METRICS_ENDPOINT", rx.url().c_str());
  Set("NCCLSCOPE_OTLP_INTERVAL_MS", "3600000");
  Set("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip");
  OtlpExporter::Instance().Start();
  OtlpExporter::Instance().Stop();
  ASSERT_EQ(rx.requests().size(), 1u);
  const std::string req = rx.requests()[0];
  EXPECT_NE(req.find("\r\nContent-Encoding: gzip\r\n"), std::string::npos) << req.substr(0, 300);
  EXPECT_EQ(req.substr(req.find("\r\n\r\n") + 4, 2), "\x1f\x8b");
}

TEST_F(OtlpEnv, StopWithASilentReceiverIsBoundedByTheTimeout) {
  FakeReceiver rx(FakeReceiver::Mode::kSilent, 0);
  Set("NCCLSCOPE_OTLP_METRICS_ENDPOINT", rx.url().c_str());
  Set("NCCLSCOPE_OTLP_INTERVAL_MS", "100");
  Set("NCCLSCOPE_OTLP_TIMEOUT_MS", "400");
  OtlpExporter& exporter = OtlpExporter::Instance();
  const ExportCounts before = exporter.counts();
  exporter.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the first push is in flight
  const auto t0 = Clock::now();
  exporter.Stop();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(ms, 400 + 300) << "the in-flight and the last push share one timeout";
  const ExportCounts after = exporter.counts();
  EXPECT_GE(after.failed - before.failed, 1u);
  EXPECT_EQ(after.exports - before.exports, after.failed - before.failed);
}

TEST_F(OtlpEnv, AProcessThatExitsWithoutFinalizePushesOnceAtExit) {
  // The receiver's thread starts after the fork: a child of a multi-threaded process may not start threads
  // under ThreadSanitizer. Until then the child's connection waits in the listen backlog.
  FakeReceiver rx(FakeReceiver::Mode::kAnswer, 200, /*serve=*/false);
  Set("NCCLSCOPE_OTLP_METRICS_ENDPOINT", rx.url().c_str());
  Set("NCCLSCOPE_OTLP_INTERVAL_MS", "3600000");  // no push on the interval: only the one at exit
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OtlpExporter::Instance().Start();
    std::exit(0);  // no Stop(): as a script that never destroys its communicators
  }
  rx.Serve();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(rx.requests().size(), 1u);
  EXPECT_EQ(rx.requests()[0].rfind("POST /v1/metrics HTTP/1.1\r\n", 0), 0u);
}

}  // namespace
}  // namespace ncclscope::otlp
