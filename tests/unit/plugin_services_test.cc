// InstallPluginServices (src/plugin): every service and dump hook of the build is registered exactly once,
// however often and from however many threads it is called, and NCCL's first init through any table (profiler
// or net) installs them. Nothing registers itself from a static initialiser, so a fresh process has none;
// ctest runs each TEST in its own process, which these tests rely on (run alone, a later one skips).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <thread>
#include <vector>

#include "common/output_janitor.h"
#include "common/params.h"
#include "common/runtime.h"
#include "core/registry.h"
#include "exporters/dump/chrome_trace.h"
#include "exporters/dump/comm_dump.h"
#include "ncclscope/abi/net.h"
#include "ncclscope/abi/profiler.h"
#include "plugin/services/plugin_services.h"
#include "watch/stall_watch.h"
#if NCCLSCOPE_WITH_PROMETHEUS
#include "exporters/prometheus/metrics_endpoint.h"
#include "exporters/prometheus/retired_comms.h"
#include "exporters/prometheus/textfile_writer.h"
#include "exporters/otlp/otlp_exporter.h"
#endif

extern "C" {
extern const ncclscope_profiler_v5_t ncclProfiler_v5;
extern const ncclscope_net_v8_t ncclNetPlugin_v8;
extern const ncclscope_net_v12_t ncclNetPlugin_v12;
}

namespace ncclscope {
namespace {

// The test build always has the JSON dumps (it needs nlohmann-json); the Prometheus half follows the option.
// Registering one of these again changes no count when it is already there.
std::vector<Service*> ExpectedServices() {
  std::vector<Service*> s = {&OutputJanitorService(), &profiler::StallWatch::Instance()};
#if NCCLSCOPE_WITH_PROMETHEUS
  s.push_back(&MetricsEndpoint::Instance());
  s.push_back(&TextfileWriter::Instance());
  s.push_back(&otlp::OtlpExporter::Instance());
#endif
  return s;
}

std::vector<CommDumpHook> ExpectedHooks() {
  std::vector<CommDumpHook> h = {&dump::CommDumpHook, &dump::ChromeTraceHook};
#if NCCLSCOPE_WITH_PROMETHEUS
  h.push_back(&KeepFinalTotals);
#endif
  return h;
}

bool NothingInstalled() { return Runtime::Instance().services() == 0 && CommRegistry::Instance().dump_hooks() == 0; }

// Exactly the build's services and hooks are registered, each once.
void ExpectInstalledOnce() {
  Runtime& runtime = Runtime::Instance();
  CommRegistry& registry = CommRegistry::Instance();
  EXPECT_EQ(runtime.services(), static_cast<int>(ExpectedServices().size()));
  EXPECT_EQ(registry.dump_hooks(), ExpectedHooks().size());
  const int services = runtime.services();
  const size_t hooks = registry.dump_hooks();
  for (Service* s : ExpectedServices()) runtime.RegisterService(s);
  for (CommDumpHook h : ExpectedHooks()) registry.AddDumpHook(h);
  EXPECT_EQ(runtime.services(), services) << "a service of the build was missing";
  EXPECT_EQ(registry.dump_hooks(), hooks) << "a dump hook of the build was missing";
}

#define SKIP_UNLESS_FRESH_PROCESS() \
  if (!NothingInstalled()) GTEST_SKIP() << "needs a process of its own (ctest runs each test alone)"

TEST(InstallPluginServices, NothingIsRegisteredBeforeTheFirstCall) {
  SKIP_UNLESS_FRESH_PROCESS();
  EXPECT_EQ(Runtime::Instance().services(), 0);
  EXPECT_EQ(CommRegistry::Instance().dump_hooks(), 0u);
}

TEST(InstallPluginServices, EachServiceAndHookOnceHoweverOftenCalled) {
  SKIP_UNLESS_FRESH_PROCESS();
  std::vector<std::thread> first_calls;  // NCCL may init several communicators at once
  for (int t = 0; t < 8; ++t) first_calls.emplace_back([] { InstallPluginServices(); });
  for (std::thread& t : first_calls) t.join();
  ExpectInstalledOnce();
  InstallPluginServices();
  InstallPluginServices();
  ExpectInstalledOnce();
}

TEST(InstallPluginServices, ProfilerTableInitInstallsThem) {
  SKIP_UNLESS_FRESH_PROCESS();
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(ncclProfiler_v5.init(&ctx, 0x5e41ce, &mask, "services", 1, 2, 0, nullptr), NCCLSCOPE_SUCCESS);
  ExpectInstalledOnce();
  EXPECT_EQ(ncclProfiler_v5.finalize(ctx), NCCLSCOPE_SUCCESS);
  ExpectInstalledOnce();  // a finalize unregisters nothing: the next cycle starts the same services
}

void UseLoopbackTcp() {
  setenv("NCCLSCOPE_TRANSPORT", "tcp", 1);
  setenv("NCCLSCOPE_SOCKET_IFNAME", "lo", 1);
  ReloadParams();
}

TEST(InstallPluginServices, LegacyNetTableInitInstallsThem) {
  SKIP_UNLESS_FRESH_PROCESS();
  UseLoopbackTcp();
  ASSERT_EQ(ncclNetPlugin_v8.init(nullptr), NCCLSCOPE_SUCCESS);
  ExpectInstalledOnce();
}

TEST(InstallPluginServices, PerCommNetTableInitInstallsThem) {
  SKIP_UNLESS_FRESH_PROCESS();
  UseLoopbackTcp();
  void* ctx = nullptr;
  ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
  ASSERT_EQ(ncclNetPlugin_v12.init(&ctx, 0xc0111d, &cfg, nullptr, nullptr), NCCLSCOPE_SUCCESS);
  ExpectInstalledOnce();
  EXPECT_EQ(ncclNetPlugin_v12.finalize(ctx), NCCLSCOPE_SUCCESS);
}

}  // namespace
}  // namespace ncclscope
