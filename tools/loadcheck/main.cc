// ncclscope-loadcheck PLUGIN.so: loads a net+profiler plugin as NCCL does (dlopen RTLD_NOW|RTLD_LOCAL), lists the
// tables it exports, initialises the newest net and profiler tables, prints the devices and their properties,
// and finalises. Exit status 0 means an NCCL job on this host could load and initialise it. Speaks only the ABI.
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>

#include "ncclscope/abi/net.h"
#include "ncclscope/abi/profiler.h"

namespace {

void Logger(ncclscope_log_level_t level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level > NCCLSCOPE_LOG_INFO) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stdout, "  [plugin %s] ", level == NCCLSCOPE_LOG_WARN ? "WARN" : "INFO");
  std::vfprintf(stdout, fmt, ap);
  std::fputc('\n', stdout);
  va_end(ap);
}

ncclscope_result_t NoCallback(void**, int, void*, int64_t, void*) { return NCCLSCOPE_SUCCESS; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::printf("FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  const char* tables[] = {"ncclNetPlugin_v12", "ncclNetPlugin_v11", "ncclNetPlugin_v10", "ncclNetPlugin_v9",
                          "ncclNetPlugin_v8",  "ncclProfiler_v6",   "ncclProfiler_v5",   "ncclProfiler_v4"};
  for (const char* t : tables) std::printf("%-20s %s\n", t, dlsym(lib, t) ? "exported" : "absent");

  auto* net = static_cast<const ncclscope_net_v12_t*>(dlsym(lib, "ncclNetPlugin_v12"));
  auto* prof = static_cast<const ncclscope_profiler_v6_t*>(dlsym(lib, "ncclProfiler_v6"));
  if (net == nullptr || prof == nullptr) {
    std::printf("FAIL: ncclNetPlugin_v12 or ncclProfiler_v6 missing\n");
    return 1;
  }
  void* net_ctx = nullptr;
  ncclscope_net_comm_config_t cfg = {NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
  if (net->init(&net_ctx, 0x1234, &cfg, &Logger, &NoCallback) != NCCLSCOPE_SUCCESS) {
    std::printf("FAIL: net init\n");
    return 1;
  }
  int ndev = 0;
  if (net->devices(&ndev) != NCCLSCOPE_SUCCESS || ndev < 1) {
    std::printf("FAIL: devices reported %d\n", ndev);
    return 1;
  }
  for (int d = 0; d < ndev; ++d) {
    ncclscope_net_properties_v12_t p;
    if (net->getProperties(d, &p) != NCCLSCOPE_SUCCESS) {
      std::printf("FAIL: getProperties(%d)\n", d);
      return 1;
    }
    std::printf("net device %d: %s speed %d Mbps ptrSupport 0x%x maxRecvs %d pci %s\n", d, p.name, p.speed,
                p.ptrSupport, p.maxRecvs, p.pciPath ? p.pciPath : "(virtual)");
  }
  void* prof_ctx = nullptr;
  int mask = 0;
  if (prof->init(&prof_ctx, 0x1234, &mask, "loadcheck", 1, 1, 0, &Logger) != NCCLSCOPE_SUCCESS) {
    std::printf("FAIL: profiler init\n");
    return 1;
  }
  std::printf("profiler activation mask 0x%x\n", mask);
  if (prof_ctx != nullptr) prof->finalize(prof_ctx);
  net->finalize(net_ctx);
  dlclose(lib);
  std::printf("OK: %s loads and initialises on this host\n", argv[1]);
  return 0;
}
