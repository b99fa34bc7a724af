#include "exporters/otlp/otlp_exporter.h"

#include <time.h>
#include <unistd.h>

#include <prometheus/metric_family.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/gzip_member.h"
#include "common/log.h"
#include "common/process_identity.h"
#include "common/tsan_lock.h"
#include "exporters/otlp/http_post.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/prometheus/family_builders.h"
#include "exporters/prometheus/metric_families.h"

namespace ncclscope::otlp {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The start of every cumulative count pushed: the plugin's load.
const uint64_t kStartNs = RealtimeNs();

void AppendSelfFamilies(std::vector<prometheus::MetricFamily>* out) {
  const ExportCounts c = OtlpExporter::Instance().counts();
  prometheus::MetricFamily exports = prom::Family(
      "ncclscope_otlp_exports_total", "OTLP metric pushes tried by this process", prometheus::MetricType::Counter);
  prom::AddCounter(&exports, static_cast<double>(c.exports), {});
  out->push_back(std::move(exports));
  prometheus::MetricFamily failed =
      prom::Family("ncclscope_otlp_exports_failed_total",
                   "OTLP metric pushes dropped: socket error, timeout (NCCLSCOPE_OTLP_TIMEOUT_MS) or non-2xx status",
                   prometheus::MetricType::Counter);
  prom::AddCounter(&failed, static_cast<double>(c.failed), {});
  out->push_back(std::move(failed));
  prometheus::MetricFamily bytes =
      prom::Family("ncclscope_otlp_export_bytes_total",
                   "Body bytes of the OTLP metric pushes the receiver accepted (gzipped where compression is on)",
                   prometheus::MetricType::Counter);
  prom::AddCounter(&bytes, static_cast<double>(c.bytes), {});
  out->push_back(std::move(bytes));
  prometheus::MetricFamily retries = prom::Family(
      "ncclscope_otlp_export_retries_total",
      "Further tries of OTLP metric pushes after a transient failure (429, 502, 503, 504, no answer), within the "
      "push's timeout",
      prometheus::MetricType::Counter);
  prom::AddCounter(&retries, static_cast<double>(c.retries), {});
  out->push_back(std::move(retries));
  // What the pushes cost this process (docs/otlp.md gives the figures).
  prometheus::MetricFamily wall = prom::Family("ncclscope_otlp_export_seconds_total",
                                               "Wall time of the OTLP pushes: collect, encode and POST",
                                               prometheus::MetricType::Counter);
  prom::AddCounter(&wall, static_cast<double>(c.wall_ns) / 1e9, {});
  out->push_back(std::move(wall));
  prometheus::MetricFamily cpu = prom::Family("ncclscope_otlp_export_cpu_seconds_total",
                                              "CPU time of the OTLP push thread: collect, encode and POST",
                                              prometheus::MetricType::Counter);
  prom::AddCounter(&cpu, static_cast<double>(c.cpu_ns) / 1e9, {});
  out->push_back(std::move(cpu));
}

// Warns of the first failure, then at most once a minute with the number dropped in between.
class FailureWarning {
 public:
  void Report(const HttpUrl& url, const std::string& why) {
    ++since_;
    const Clock::time_point now = Clock::now();
    if (warned_ && now - last_ < std::chrono::minutes(1)) return;
    NCCLSCOPE_WARN(subsys::kInit, "OTLP push to %s failed (%s); dropped %llu export(s)%s", url.text.c_str(),
                   why.c_str(), static_cast<unsigned long long>(since_),
                   warned_ ? " in the last minute" : ", warning at most once a minute");
    warned_ = true;
    last_ = now;
    since_ = 0;
  }

 private:
  bool warned_ = false;
  Clock::time_point last_;
  uint64_t since_ = 0;
};

}  // namespace

OtlpExporter& OtlpExporter::Instance() {
  static OtlpExporter* exporter = new OtlpExporter();  // -z nodelete global, never destroyed
  return *exporter;
}

ExportCounts OtlpExporter::counts() const {
  return {exports_.load(std::memory_order_relaxed), failed_.load(std::memory_order_relaxed),
          bytes_.load(std::memory_order_relaxed), retries_.load(std::memory_order_relaxed),
          wall_ns_.load(std::memory_order_relaxed), cpu_ns_.load(std::memory_order_relaxed)};
}

// A process that exits without destroying its communicators (common in training scripts) never reaches the last
// finalize: the push stops at exit() instead, with the same bounded last push. Not in a forked child, which
// has no push thread (its std::thread object is a copy of the parent's).
namespace {
void StopAtExit() { OtlpExporter::Instance().StopIfStartedBy(getpid()); }
}  // namespace

void OtlpExporter::StopIfStartedBy(pid_t pid) {
  if (started_by_.load(std::memory_order_acquire) == pid) Stop();
}

void OtlpExporter::Start() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  // Computed here, on the init thread, where the CUDA device is current (common/process_identity.h).
  std::optional<OtlpConfig> config = OtlpConfigFromParams(Identity());
  if (!config) return;
  AddFamilySource(&AppendSelfFamilies);
  {
    AnnotatedLock lock(&mu_);
    stop_ = false;
  }
  NCCLSCOPE_INFO(subsys::kInit, "OTLP metrics push to %s every %lld ms (timeout %lld ms%s)", config->url.text.c_str(),
                 static_cast<long long>(config->interval_ms), static_cast<long long>(config->timeout_ms),
                 config->gzip ? ", gzip" : "");
  thread_ = std::thread([this, c = std::move(*config)]() mutable { Run(std::move(c)); });
  started_by_.store(getpid(), std::memory_order_release);
  static std::once_flag at_exit_once;
  std::call_once(at_exit_once, [] { std::atexit(&StopAtExit); });
}

void OtlpExporter::Stop() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);  // the runtime's Stop and exit()'s may race
  if (!thread_.joinable()) return;
  started_by_.store(0, std::memory_order_release);
  {
    AnnotatedLock lock(&mu_);
    stop_ = true;
    stop_at_ = Clock::now();
  }
  cv_.SignalAll();
  thread_.join();  // the in-flight push and the last one: bounded by the timeout from now
}

bool OtlpExporter::WaitForStop(std::chrono::milliseconds timeout) {
  AnnotatedLock lock(&mu_);
  return AnnotatedWaitFor(&cv_, &mu_, &stop_, absl::FromChrono(timeout));
}

void OtlpExporter::Run(OtlpConfig config) {
  HttpPoster poster(config.url, config.headers, config.tls);
  std::minstd_rand jitter(static_cast<uint32_t>(getpid()) ^ static_cast<uint32_t>(RealtimeNs()));
  FailureWarning warning;
  const std::chrono::milliseconds interval(config.interval_ms);
  const std::chrono::milliseconds timeout(config.timeout_ms);
  ExportContext ctx;
  ctx.resource = config.resource;
  ctx.scope_version = NCCLSCOPE_VERSION;
  ctx.start_time_ns = kStartNs;
  bool last = false;
  while (!last) {
    last = WaitForStop(interval);
    Clock::time_point deadline = Clock::now() + timeout;
    if (last) {
      AnnotatedLock lock(&mu_);
      deadline = stop_at_ + timeout;  // a push in flight at Stop() has used part of it
    }
    if (Clock::now() >= deadline) {
      exports_.fetch_add(1, std::memory_order_relaxed);
      failed_.fetch_add(1, std::memory_order_relaxed);
      warning.Report(config.url, "no time left for the last push at finalize");
      break;
    }
    const Clock::time_point began = Clock::now();
    const uint64_t cpu_began = ThreadCpuNs();
    ctx.time_ns = RealtimeNs();
    std::string body = EncodeMetricsRequest(CollectMetricFamilies(IdentityPlacement::kTextfile), ctx);
    std::string encoding;
    if (config.gzip) {
      std::string packed;
      if (AppendGzipMember(body, &packed).ok()) {
        body.swap(packed);
        encoding = "gzip";
      }
    }
    exports_.fetch_add(1, std::memory_order_relaxed);
    PostResult r = poster.Post("application/x-protobuf", encoding, body, deadline);
    // Transient failures are tried again within the push's own deadline, after 0.5, 1, 2 ... s (at most 5 s,
    // 20 % jitter, so that the ranks of a job do not come back in step) or the receiver's Retry-After. A stop
    // during the wait ends the retries of a push on the interval: the last push follows at once, with its own.
    for (int attempt = 0; r.retryable(); ++attempt) {
      std::chrono::milliseconds wait(std::min(5000, 500 << std::min(attempt, 4)));
      wait += std::chrono::milliseconds(jitter() % (wait.count() / 5 + 1));
      if (r.retry_after_s >= 0) wait = std::chrono::seconds(r.retry_after_s);
      if (Clock::now() + wait >= deadline) break;
      if (last) {
        std::this_thread::sleep_for(wait);
      } else if (WaitForStop(wait)) {
        break;
      }
      retries_.fetch_add(1, std::memory_order_relaxed);
      r = poster.Post("application/x-protobuf", encoding, body, deadline);
    }
    if (r.ok()) {
      bytes_.fetch_add(body.size(), std::memory_order_relaxed);
    } else {
      failed_.fetch_add(1, std::memory_order_relaxed);
      warning.Report(config.url, r.error);
    }
    wall_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - began).count(),
                       std::memory_order_relaxed);
    cpu_ns_.fetch_add(ThreadCpuNs() - cpu_began, std::memory_order_relaxed);
  }
}

}  // namespace ncclscope::otlp
