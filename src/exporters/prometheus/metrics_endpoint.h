// The per-process Prometheus endpoint: an HTTP /metrics server (http_server.h) whose scrape computes
// every family from ncclscope's snapshots at that moment, on the server thread, serialised by our own
// exposition writer (exposition.h).
// It is a runtime Service: started with the first init of a load cycle, stopped (server threads joined)
// by the last finalize. Port = NCCLSCOPE_PROM_PORT + local rank (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
// SLURM_LOCALID, MPI_LOCALRANKID); without a local rank the next 15 ports are tried. A port in use (a
// second job on the node) falls back to a kernel-chosen port, named in one warning and in the file_sd
// target, so that the job never goes dark in Prometheus. Any other bind failure, or a NCCLSCOPE_PROM_BIND
// that is not an IPv4 address, is a warning and no endpoint, never an error for the job. NCCLSCOPE_PROM_WEB_CONFIG adds TLS and basic auth (web_config.h); a file that
// cannot be used is a warning and no endpoint, never plain HTTP in its place. Thread-safe through the
// runtime's serialisation.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_METRICS_ENDPOINT_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_METRICS_ENDPOINT_H_

#include <atomic>
#include <string>

#include "common/output_dir.h"
#include "common/process_identity.h"  // LocalRankFromEnv
#include "common/runtime.h"
#include "exporters/http/http_server.h"

namespace ncclscope {

class MetricsEndpoint : public Service {
 public:
  static MetricsEndpoint& Instance();

  const char* name() const override { return "prometheus-endpoint"; }
  void Start() override;
  void Stop() override;

  // The bound port, or 0 when no endpoint runs.
  int port() const { return port_.load(std::memory_order_acquire); }

 private:
  MetricsEndpoint() = default;
  bool TryBind(const std::string& bind, int port, const HttpServer::Options& options);
  void WriteSdFile();

  HttpServer server_;
  std::atomic<int> port_{0};
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_METRICS_ENDPOINT_H_
