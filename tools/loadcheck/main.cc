// ncclscope-loadcheck PLUGIN.so: loads a net+profiler plugin as NCCL does (dlopen RTLD_NOW|RTLD_LOCAL), lists the
// tables it exports, initialises the newest net and profiler tables, prints the devices and their properties,
// and finalises. Exit status 0 means an NCCL job on this host could load and initialise it. Speaks only the ABI.
// The check starts no metrics endpoint unless --metrics asks for one (NCCLSCOPE_PROM_PORT leaked in from a job's
// environment does not count: it is forced to -1, which ncclscope reads as "no endpoint").
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

constexpr const char* kUsage =
    "usage: ncclscope-loadcheck [--metrics] PLUGIN.so\n"
    "       ncclscope-loadcheck --help\n"
    "Loads PLUGIN.so as NCCL does (dlopen RTLD_NOW|RTLD_LOCAL), lists the net and profiler tables it exports,\n"
    "initialises the newest ones, prints the net devices and finalises. Exit status 0: an NCCL job on this host\n"
    "could load and initialise it; 1: it could not; 2: bad command line.\n"
    "  --metrics   let the plugin start its metrics endpoint as configured (NCCLSCOPE_PROM_PORT,\n"
    "              NCCLSCOPE_PROM_BIND); without it the check opens no port: NCCLSCOPE_PROM_PORT is set to -1\n"
    "              whatever the environment says\n"
    "The check writes no files: NCCLSCOPE_PROM_TEXTFILE_DIR, NCCLSCOPE_SD_DIR, NCCLSCOPE_DUMP_DIR and\n"
    "NCCLSCOPE_RECORD_DIR are ignored.\n"
    "  -h, --help  this text\n";

int UsageError(const std::string& what) {
  std::fprintf(stderr, "ncclscope-loadcheck: %s (try --help)\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const char* plugin = nullptr;
  bool metrics = false;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!options_done && a[0] == '-' && a[1] != '\0') {
      if (std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help") == 0) {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (std::strcmp(a, "--metrics") == 0) metrics = true;
      else if (std::strcmp(a, "--") == 0) options_done = true;
      else return UsageError(std::string("unknown option '") + a + "'");
    } else if (plugin == nullptr) {
      plugin = a;
    } else {
      return UsageError(std::string("unexpected argument '") + a + "'");
    }
  }
  if (plugin == nullptr) return UsageError("missing PLUGIN.so");
  // Before dlopen: the plugin reads its tunables at load or first init.
  const char* port = std::getenv("NCCLSCOPE_PROM_PORT");
  if (metrics) {
    if (port != nullptr) std::printf("metrics endpoint: as configured (--metrics; NCCLSCOPE_PROM_PORT=%s)\n", port);
    else std::printf("metrics endpoint: as configured (--metrics; NCCLSCOPE_PROM_PORT unset: the plugin's default)\n");
  } else {
    std::printf("metrics endpoint: off for the check (NCCLSCOPE_PROM_PORT=-1%s%s%s; --metrics starts it)\n",
                port ? ", overriding " : "", port ? port : "", port ? " from the environment" : "");
    setenv("NCCLSCOPE_PROM_PORT", "-1", 1);
  }
  // A check writes no files either: a job's output folders leaked into this shell stay untouched.
  for (const char* var : {"NCCLSCOPE_PROM_TEXTFILE_DIR", "NCCLSCOPE_SD_DIR", "NCCLSCOPE_DUMP_DIR", "NCCLSCOPE_RECORD_DIR"}) {
    if (std::getenv(var) != nullptr) std::printf("%s: ignored for the check\n", var);
    unsetenv(var);
  }
  void* lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
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
  std::printf("OK: %s loads and initialises on this host\n", plugin);
  return 0;
}
