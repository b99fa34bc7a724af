#include "plugin/services/plugin_services.h"

#include <mutex>

#include "common/clock.h"
#include "common/log.h"
#include "common/nccl_version.h"
#include "common/output_janitor.h"
#include "common/params.h"
#include "common/runtime.h"
#include "core/registry.h"
#include "watch/stall_watch.h"
#if NCCLSCOPE_HAVE_DUMP_EXPORTERS
#include "exporters/dump/chrome_trace.h"
#include "exporters/dump/comm_dump.h"
#include "host_nics/nic_deltas.h"
#endif
#if NCCLSCOPE_HAVE_PROMETHEUS_EXPORTERS
#include "exporters/prometheus/metrics_endpoint.h"
#include "exporters/prometheus/retired_comms.h"
#include "exporters/prometheus/textfile_writer.h"
#endif
#if NCCLSCOPE_HAVE_OTLP_EXPORTER
#include "exporters/otlp/otlp_exporter.h"
#endif

namespace ncclscope {
namespace {

// Dump hooks run in this order on each snapshot. The flight-recorder dump comes first: it is what a
// post-mortem needs, so a rank killed while a stall dumps most likely has it written.
void InstallDumpHooks() {
  [[maybe_unused]] CommRegistry& registry = CommRegistry::Instance();
#if NCCLSCOPE_HAVE_DUMP_EXPORTERS
  registry.AddDumpHook(&dump::CommDumpHook);
  registry.AddDumpHook(&dump::ChromeTraceHook);
  // The dumps carry the host's NIC events since now (host_nics/nic_deltas.h).
  if (!Params().Str(ParamId::kDumpDir).empty()) RecordHostNicBaseline();
#endif
#if NCCLSCOPE_HAVE_PROMETHEUS_EXPORTERS
  registry.AddDumpHook(&KeepFinalTotals);
#endif
}

// Services start in this order at a cycle's first init and stop in reverse at its last finalize: the OTLP
// push stops first (its last push), the textfile writer next (its final write), the endpoint next, then the
// stall watch; the output janitor stops last, so its final pass over the output folders comes after every
// other thread's last write.
void RegisterServices() {
  Runtime& runtime = Runtime::Instance();
  runtime.RegisterService(&OutputJanitorService());
  runtime.RegisterService(&profiler::StallWatch::Instance());
#if NCCLSCOPE_HAVE_PROMETHEUS_EXPORTERS
  runtime.RegisterService(&MetricsEndpoint::Instance());
  runtime.RegisterService(&TextfileWriter::Instance());
#endif
#if NCCLSCOPE_HAVE_OTLP_EXPORTER
  runtime.RegisterService(&otlp::OtlpExporter::Instance());
#endif
}

}  // namespace

void InstallPluginServices() {
  static std::once_flag once;  // -z nodelete: once per process, whatever the number of init/finalize cycles
  // Hooks before services: a service started here (when a user already holds the runtime) may dump at once.
  std::call_once(once, [] {
    // The first line the plugin logs: which ncclscope, under which NCCL.
    const std::string nccl = NcclVersionInProcess();
    NCCLSCOPE_INFO(subsys::kInit, "version %s (NCCL %s)", NCCLSCOPE_VERSION,
                   nccl.empty() ? "not found in this process" : nccl.c_str());
    const std::string clock = EnableTscClock(Params().Str(ParamId::kHostClock));
    NCCLSCOPE_INFO(subsys::kInit, "event times from %s", clock.c_str());
    InstallDumpHooks();
    RegisterServices();
  });
}

}  // namespace ncclscope
