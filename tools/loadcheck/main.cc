// ncclscope-loadcheck PLUGIN: loads a net+profiler plugin as NCCL does, lists the tables it exports,
// initialises the newest net and profiler tables, prints the devices and their properties, and finalises.
// Exit status 0 means an NCCL job on this host could load and initialise it. Speaks only the ABI.
// PLUGIN is resolved as NCCL resolves NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN (plugin_names.h): a bare name
// `ncclscope` opens libnccl-net-ncclscope.so for the net half and libnccl-profiler-ncclscope.so for the
// profiler half through the dynamic loader's search (LD_LIBRARY_PATH); a path is opened as given.
// The check runs in a child process with a deadline (isolate.h): a plugin that crashes, calls exit() or hangs is
// reported as such, and the exit status stays 0 or 1.
// The check starts no metrics endpoint unless --metrics asks for one (NCCLSCOPE_PROM_PORT leaked in from a job's
// environment does not count: it is forced to -1, which ncclscope reads as "no endpoint").
#include <dlfcn.h>
#include <link.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/regular_file.h"
#include "isolate.h"
#include "ncclscope/abi/net.h"
#include "ncclscope/abi/profiler.h"
#include "plugin_names.h"

namespace {

using nlohmann::json;

// Human-readable progress goes to stdout, or to stderr under --json (stdout then carries the JSON only).
FILE* g_text = stdout;

void Say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(g_text, fmt, ap);
  va_end(ap);
}

void Logger(ncclscope_log_level_t level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level > NCCLSCOPE_LOG_INFO) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(g_text, "  [plugin %s] ", level == NCCLSCOPE_LOG_WARN ? "WARN" : "INFO");
  std::vfprintf(g_text, fmt, ap);
  std::fputc('\n', g_text);
  va_end(ap);
}

ncclscope_result_t NoCallback(void**, int, void*, int64_t, void*) { return NCCLSCOPE_SUCCESS; }

constexpr const char* kUsage =
    "usage: ncclscope-loadcheck [--metrics] [--json] [--timeout SECONDS] PLUGIN\n"
    "       ncclscope-loadcheck --help | --version\n"
    "Loads PLUGIN as NCCL does (dlopen RTLD_NOW|RTLD_LOCAL), lists every net and profiler table it exports\n"
    "(ncclNetPlugin_v6..v12, ncclProfiler_v1..v7), initialises the newest ones it can drive (net v12 or v11,\n"
    "profiler v7, v6 or v5), prints the net devices and finalises. Exit status 0: an NCCL job on this host\n"
    "could load and initialise it; 1: it could not; 2: bad command line.\n"
    "The check runs in a child process: a plugin that crashes (a signal), ends the process (exit()) or does not\n"
    "return (a hang past --timeout) fails the check (status 1), named with the step it was in.\n"
    "PLUGIN is what NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN would hold: a name containing '/' or of the form\n"
    "lib*.so is opened as given; another name NAME is tried as NAME, then as libnccl-net-NAME.so (net) and\n"
    "libnccl-profiler-NAME.so (profiler) through the loader's search path (LD_LIBRARY_PATH). When no profiler\n"
    "library is found, NCCL takes the profiler from the net library, and so does the check.\n"
    "  --metrics   let the plugin start its metrics endpoint as configured (NCCLSCOPE_PROM_PORT,\n"
    "              NCCLSCOPE_PROM_BIND); without it the check opens no port: NCCLSCOPE_PROM_PORT is set to -1\n"
    "              whatever the environment says\n"
    "  --json      print the result as one JSON object on stdout (the resolved libraries, every table found with\n"
    "              its ABI version and name, each init's result, the devices); the text goes to stderr\n"
    "  --timeout SECONDS  how long the whole check may take before it is called a hang and killed (default 30)\n"
    "  --version   print ncclscope-loadcheck <version>\n"
    "The check writes no files: NCCLSCOPE_PROM_TEXTFILE_DIR, NCCLSCOPE_SD_DIR, NCCLSCOPE_DUMP_DIR and\n"
    "NCCLSCOPE_RECORD_DIR are ignored.\n"
    "  -h, --help  this text\n";

int UsageError(const std::string& what) {
  std::fprintf(stderr, "ncclscope-loadcheck: %s (try --help)\n", what.c_str());
  return 2;
}

// One half's library: the names tried, in NCCL's order, up to the first that opened, and the file it mapped.
struct Library {
  std::vector<std::string> tried;
  std::string opened_as;   // the name that opened ("" when none did)
  std::string path;        // the file the loader mapped
  std::vector<std::string> errors;  // dlerror() of each name that failed
  void* handle = nullptr;
};

Library Open(const std::vector<std::string>& names) {
  Library lib;
  for (const std::string& name : names) {
    lib.tried.push_back(name);
    // A FIFO would block dlopen forever (the deadline would catch it, but this says what it is).
    const ncclscope::Status regular =
        name.find('/') != std::string::npos ? ncclscope::CheckRegularFile(name) : ncclscope::Status::Ok();
    if (!regular.ok()) {
      lib.errors.push_back(regular.message());
      continue;
    }
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      lib.errors.push_back(e != nullptr ? e : "dlopen failed");
      continue;
    }
    lib.handle = h;
    lib.opened_as = name;
    struct link_map* map = nullptr;
    lib.path = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr ? map->l_name : name;
    break;
  }
  return lib;
}

json LibraryJson(const Library& lib) {
  json j = {{"tried", lib.tried}, {"errors", lib.errors}};
  j["opened_as"] = lib.handle != nullptr ? json(lib.opened_as) : json(nullptr);
  j["path"] = lib.handle != nullptr ? json(lib.path) : json(nullptr);
  return j;
}

// Every table of one kind the library exports, newest first, with its ABI version and its name slot (the
// first member of every net and profiler table is `const char* name`).
json ListTables(void* lib, const char* prefix, int newest, int oldest) {
  json tables = json::array();
  for (int v = newest; v >= oldest; --v) {
    const std::string symbol = prefix + std::to_string(v);
    void* table = dlsym(lib, symbol.c_str());
    Say("%-20s %s", symbol.c_str(), table != nullptr ? "exported" : "absent");
    if (table == nullptr) {
      Say("\n");
      continue;
    }
    const char* name = *static_cast<const char* const*>(table);
    Say(" (name \"%s\")\n", name != nullptr ? name : "");
    tables.push_back({{"symbol", symbol}, {"abi_version", v}, {"name", name != nullptr ? json(name) : json(nullptr)}});
  }
  return tables;
}

struct Outcome {
  json doc;
  int rc = 0;
  int Fail(const std::string& why) {
    Say("FAIL: %s\n", why.c_str());
    doc["ok"] = false;
    doc["error"] = why;
    return rc = 1;
  }
};

template <class Props>
json Devices(ncclscope_result_t (*get)(int, Props*), int ndev, Outcome* out, bool* ok) {
  json devices = json::array();
  for (int d = 0; d < ndev; ++d) {
    Props p;
    std::memset(&p, 0, sizeof(p));
    if (get(d, &p) != NCCLSCOPE_SUCCESS) {
      out->Fail("getProperties(" + std::to_string(d) + ")");
      *ok = false;
      return devices;
    }
    Say("net device %d: %s speed %d Mbps ptrSupport 0x%x maxRecvs %d pci %s\n", d, p.name, p.speed, p.ptrSupport,
        p.maxRecvs, p.pciPath ? p.pciPath : "(virtual)");
    devices.push_back({{"index", d}, {"name", p.name != nullptr ? p.name : ""}, {"speed_mbps", p.speed},
                       {"ptr_support", p.ptrSupport}, {"max_recvs", p.maxRecvs},
                       {"pci_path", p.pciPath != nullptr ? json(p.pciPath) : json(nullptr)}});
  }
  *ok = true;
  return devices;
}

// Initialises the newest net table the check can drive (v12, else v11: the same slots, other properties).
// On success *finalize and *ctx are what to finalise with.
template <class Table>
int InitNet(const Table* t, Outcome* out, void** ctx, ncclscope_result_t (**finalize)(void*),
            const ncclscope::loadcheck::Reporter& rep) {
  json& init = out->doc["init"]["net"];
  ncclscope_net_comm_config_t cfg = {NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
  ncclscope_result_t rc = t->init(ctx, 0x1234, &cfg, &Logger, &NoCallback);
  init["result"] = static_cast<int>(rc);
  init["ok"] = rc == NCCLSCOPE_SUCCESS;
  if (rc != NCCLSCOPE_SUCCESS) return out->Fail("net init returned " + std::to_string(rc));
  int ndev = 0;
  rep.Stage("net devices and properties");
  rc = t->devices(&ndev);
  init["device_count"] = ndev;
  bool ok = false;
  if (rc != NCCLSCOPE_SUCCESS || ndev < 1) out->Fail("devices reported " + std::to_string(ndev));
  else init["devices"] = Devices(t->getProperties, ndev, out, &ok);
  if (!ok) {
    t->finalize(*ctx);
    *ctx = nullptr;
    return 1;
  }
  *finalize = t->finalize;
  return 0;
}

int CheckNet(void* lib, Outcome* out, void** ctx, ncclscope_result_t (**finalize)(void*),
             const ncclscope::loadcheck::Reporter& rep) {
  rep.Stage("net init");
  if (auto* v12 = static_cast<const ncclscope_net_v12_t*>(dlsym(lib, "ncclNetPlugin_v12"))) {
    out->doc["init"]["net"]["table"] = "ncclNetPlugin_v12";
    return InitNet(v12, out, ctx, finalize, rep);
  }
  if (auto* v11 = static_cast<const ncclscope_net_v11_t*>(dlsym(lib, "ncclNetPlugin_v11"))) {
    out->doc["init"]["net"]["table"] = "ncclNetPlugin_v11";
    return InitNet(v11, out, ctx, finalize, rep);
  }
  return out->Fail("no ncclNetPlugin_v12 or _v11 table (the check drives those)");
}

// Initialises the newest profiler table the check can drive (v7, v6, v5: one init signature), then finalises.
int CheckProfiler(void* lib, Outcome* out, const ncclscope::loadcheck::Reporter& rep) {
  rep.Stage("profiler init");
  json& init = out->doc["init"]["profiler"];
  const ncclscope_profiler_v6_t* table = nullptr;
  for (const char* symbol : {"ncclProfiler_v7", "ncclProfiler_v6", "ncclProfiler_v5"}) {
    // v5, v6 and v7 share the slot layout (profiler.h); only the descriptor behind startEvent differs.
    table = static_cast<const ncclscope_profiler_v6_t*>(dlsym(lib, symbol));
    if (table != nullptr) {
      init["table"] = symbol;
      break;
    }
  }
  if (table == nullptr) return out->Fail("no ncclProfiler_v7, _v6 or _v5 table (the check drives those)");
  void* ctx = nullptr;
  int mask = 0;
  ncclscope_result_t rc = table->init(&ctx, 0x1234, &mask, "loadcheck", 1, 1, 0, &Logger);
  init["result"] = static_cast<int>(rc);
  init["ok"] = rc == NCCLSCOPE_SUCCESS;
  if (rc != NCCLSCOPE_SUCCESS) return out->Fail("profiler init returned " + std::to_string(rc));
  init["activation_mask"] = mask;
  Say("profiler (%s) activation mask 0x%x\n", init["table"].get<std::string>().c_str(), mask);
  rep.Stage("profiler finalize");
  if (ctx != nullptr) table->finalize(ctx);
  return 0;
}

void Print(const json& doc) {
  std::fputs((doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n").c_str(), stdout);
}

// The exit status from what became of the child: its own verdict when it finished; otherwise a failure that
// names what the plugin did (a signal, an exit, a hang) and the step it was in.
int Verdict(const ncclscope::loadcheck::Isolated& run, double timeout_s, Outcome* out) {
  using ncclscope::loadcheck::Isolated;
  if (run.has_result) {
    json child = json::parse(run.result, nullptr, /*allow_exceptions=*/false);
    if (!child.is_discarded()) out->doc = std::move(child);
  }
  const std::string in = run.stage.empty() ? "" : " in " + run.stage;
  const std::string after = run.has_result ? " after the check, at the process's exit" : in;
  json& iso = out->doc["isolation"];
  iso = {{"timeout_s", timeout_s}, {"stage", run.stage.empty() ? json(nullptr) : json(run.stage)}};
  switch (run.kind) {
    case Isolated::Kind::kFinished:
      iso["outcome"] = "finished";
      // The child's own verdict, unless the plugin's exit handlers ended the process with another status.
      if (run.exit_code == (out->doc.value("ok", false) ? 0 : 1)) return run.exit_code;
      iso["outcome"] = "exit";
      iso["exit_code"] = run.exit_code;
      return out->Fail("the plugin ended the check's process with exit(" + std::to_string(run.exit_code) + ")" +
                       after);
    case Isolated::Kind::kExit:
      iso["outcome"] = "exit";
      iso["exit_code"] = run.exit_code;
      return out->Fail("the plugin ended the check's process with exit(" + std::to_string(run.exit_code) + ")" + in);
    case Isolated::Kind::kSignal:
      iso["outcome"] = "signal";
      iso["signal"] = ncclscope::loadcheck::SignalName(run.signal);
      return out->Fail("the plugin crashed: " + ncclscope::loadcheck::SignalName(run.signal) + after);
    case Isolated::Kind::kTimeout: {
      iso["outcome"] = "timeout";
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", timeout_s);
      return out->Fail(std::string("the plugin did not return within ") + secs + " s" + after +
                       " (a hang; the check's process was killed; --timeout sets the limit)");
    }
    case Isolated::Kind::kNoChild:
      iso["outcome"] = "not run";
      return out->Fail("cannot run the check in a child process: " + run.error);
  }
  return out->Fail("unknown outcome");
}

// The check proper, in the child: its text as it goes, its JSON document to the parent at the end.
int Check(const char* plugin, Outcome& out, const ncclscope::loadcheck::Reporter& rep) {
  rep.Stage("dlopen of the net library");
  Library net = Open(ncclscope::loadcheck::CandidateNames(plugin, "net"));
  out.doc["net_library"] = LibraryJson(net);
  if (net.handle == nullptr) {
    for (size_t i = 0; i < net.tried.size(); ++i) {
      Say("net: cannot open %s: %s\n", net.tried[i].c_str(), net.errors[i].c_str());
    }
    out.Fail("dlopen: no net library for '" + std::string(plugin) + "'");
    return 1;
  }
  Say("net library: %s (opened as %s)\n", net.path.c_str(), net.opened_as.c_str());
  // NCCL opens the profiler on its own names; where none opens it takes the net library (nccl-abi §1.4).
  rep.Stage("dlopen of the profiler library");
  Library prof = Open(ncclscope::loadcheck::CandidateNames(plugin, "profiler"));
  out.doc["profiler_library"] = LibraryJson(prof);
  out.doc["profiler_library"]["from_net_library"] = prof.handle == nullptr;
  void* prof_lib = prof.handle != nullptr ? prof.handle : net.handle;
  if (prof.handle != nullptr) Say("profiler library: %s (opened as %s)\n", prof.path.c_str(), prof.opened_as.c_str());
  else Say("profiler library: none of the profiler names opens; NCCL takes the profiler from the net library\n");

  rep.Stage("looking up the tables");
  out.doc["net_tables"] = ListTables(net.handle, "ncclNetPlugin_v", 12, 6);
  out.doc["profiler_tables"] = ListTables(prof_lib, "ncclProfiler_v", 7, 1);
  out.doc["init"] = json::object();

  void* net_ctx = nullptr;
  ncclscope_result_t (*net_finalize)(void*) = nullptr;
  if (CheckNet(net.handle, &out, &net_ctx, &net_finalize, rep) == 0 && CheckProfiler(prof_lib, &out, rep) == 0) {
    out.doc["ok"] = true;
    Say("OK: %s loads and initialises on this host\n", plugin);
  }
  rep.Stage("net finalize");
  if (net_ctx != nullptr && net_finalize != nullptr) net_finalize(net_ctx);
  rep.Stage("dlclose");
  if (prof.handle != nullptr) dlclose(prof.handle);
  dlclose(net.handle);
  return out.rc;
}

}  // namespace

int main(int argc, char** argv) {
  const char* plugin = nullptr;
  bool metrics = false, as_json = false;
  double timeout_s = 30;  // a healthy plugin loads in well under a second; a job's init waits minutes, not forever
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!options_done && a[0] == '-' && a[1] != '\0') {
      if (std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help") == 0) {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (std::strcmp(a, "--version") == 0) {
        std::printf("ncclscope-loadcheck %s\n", NCCLSCOPE_VERSION);
        return 0;
      }
      if (std::strcmp(a, "--metrics") == 0) metrics = true;
      else if (std::strcmp(a, "--json") == 0) as_json = true;
      else if (std::strcmp(a, "--timeout") == 0) {
        if (i + 1 >= argc) return UsageError("--timeout needs a number of seconds");
        const char* v = argv[++i];
        char* end = nullptr;
        timeout_s = std::strtod(v, &end);
        if (end == v || *end != '\0' || !(timeout_s > 0) || timeout_s > 86400) {
          return UsageError(std::string("--timeout '") + v + "': seconds, more than 0 and at most 86400");
        }
      }
      else if (std::strcmp(a, "--") == 0) options_done = true;
      else return UsageError(std::string("unknown option '") + a + "'");
    } else if (plugin == nullptr) {
      plugin = a;
    } else {
      return UsageError(std::string("unexpected argument '") + a + "'");
    }
  }
  if (plugin == nullptr) return UsageError("missing PLUGIN");
  if (!ncclscope::loadcheck::NamesAPlugin(plugin)) {
    return UsageError(std::string("'") + plugin + "' names no plugin library (NCCL would load none)");
  }
  if (as_json) g_text = stderr;
  Outcome out;
  out.doc = {{"tool", "ncclscope-loadcheck"}, {"version", NCCLSCOPE_VERSION}, {"plugin", plugin}};
  // Before dlopen: the plugin reads its tunables at load or first init.
  const char* port = std::getenv("NCCLSCOPE_PROM_PORT");
  if (metrics) {
    if (port != nullptr) Say("metrics endpoint: as configured (--metrics; NCCLSCOPE_PROM_PORT=%s)\n", port);
    else Say("metrics endpoint: as configured (--metrics; NCCLSCOPE_PROM_PORT unset: the plugin's default)\n");
  } else {
    Say("metrics endpoint: off for the check (NCCLSCOPE_PROM_PORT=-1%s%s%s; --metrics starts it)\n",
        port ? ", overriding " : "", port ? port : "", port ? " from the environment" : "");
    setenv("NCCLSCOPE_PROM_PORT", "-1", 1);
  }
  out.doc["metrics_endpoint"] = metrics;
  // A check writes no files either: a job's output folders leaked into this shell stay untouched.
  for (const char* var :
       {"NCCLSCOPE_PROM_TEXTFILE_DIR", "NCCLSCOPE_SD_DIR", "NCCLSCOPE_DUMP_DIR", "NCCLSCOPE_RECORD_DIR"}) {
    if (std::getenv(var) != nullptr) Say("%s: ignored for the check\n", var);
    unsetenv(var);
  }
  using ncclscope::loadcheck::Isolated;
  const Isolated run = ncclscope::loadcheck::RunIsolated(timeout_s, [&](const ncclscope::loadcheck::Reporter& rep) {
    const int rc = Check(plugin, out, rep);
    rep.Result(out.doc.dump(-1, ' ', false, json::error_handler_t::replace));
    std::fflush(nullptr);
    return rc;
  });
  const int rc = Verdict(run, timeout_s, &out);
  if (as_json) Print(out.doc);
  return rc;
}
