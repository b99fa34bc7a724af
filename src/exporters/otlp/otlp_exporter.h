// The OTLP/HTTP push (docs/otlp.md): every NCCLSCOPE_OTLP_INTERVAL_MS (OTEL_METRIC_EXPORT_INTERVAL) one
// background thread collects the endpoint's metric families (CollectMetricFamilies: the same snapshots, no
// collection of its own), encodes them (otlp_encoder.h) and POSTs them to the receiver. Nothing queues: the
// thread holds at most the one export it is sending, and an export that fails or outlives
// NCCLSCOPE_OTLP_TIMEOUT_MS is dropped, counted in ncclscope_otlp_exports_failed_total and warned about (the
// first failure, then at most once a minute). NCCL's threads never wait on it, except the last finalize:
// Stop() lets the thread make one last push, and the in-flight and last push together are bounded by the
// timeout. A process that exits without that finalize makes the same last push from exit() (atexit). A runtime
// Service, off unless an endpoint is set. Thread-safe through the runtime's serialisation.
#ifndef NCCLSCOPE_EXPORTERS_OTLP_OTLP_EXPORTER_H_
#define NCCLSCOPE_EXPORTERS_OTLP_OTLP_EXPORTER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/runtime.h"
#include "exporters/otlp/otlp_config.h"

namespace ncclscope::otlp {

// The self-metrics, since the process started.
struct ExportCounts {
  uint64_t exports = 0;  // pushes tried
  uint64_t failed = 0;   // of those, dropped: a socket error, a timeout or a non-2xx status
  uint64_t bytes = 0;    // request bodies of the successful pushes (compressed where gzip is on)
  uint64_t retries = 0;  // further tries of a push after a transient failure (429, 502-504, no answer)
  uint64_t wall_ns = 0;  // collect, encode and POST, every push
  uint64_t cpu_ns = 0;   // of it, the push thread's CPU time
};

class OtlpExporter final : public Service {
 public:
  static OtlpExporter& Instance();
  const char* name() const override { return "otlp-push"; }
  void Start() override;
  void Stop() override;

  ExportCounts counts() const;

  // Stop(), when the push thread was started by process `pid` (the exit handler passes getpid()).
  void StopIfStartedBy(pid_t pid);

 private:
  OtlpExporter() = default;
  void Run(OtlpConfig config);
  bool WaitForStop(std::chrono::milliseconds timeout);

  std::mutex lifecycle_mu_;            // Start and Stop, from the runtime or from exit()
  std::atomic<pid_t> started_by_{0};  // the process whose push thread runs; 0 when none
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // When Stop() was called: the last push must be done by then + the timeout.
  std::chrono::steady_clock::time_point stop_at_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  std::atomic<uint64_t> exports_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> wall_ns_{0};
  std::atomic<uint64_t> cpu_ns_{0};
};

}  // namespace ncclscope::otlp

#endif  // NCCLSCOPE_EXPORTERS_OTLP_OTLP_EXPORTER_H_
