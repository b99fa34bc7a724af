// RCCL detection: the loaded object named librccl.so* (RCCL's library name; RCCL's public API is NCCL's nccl*
// functions, so no exported rccl* symbol marks it), its NCCL-based version (ncclGetVersion) and whether it has the
// per-call config API (ncclAllReduceConfig, NCCL 2.31's carrier of the user profiler tag that v7 adds).
#include "plugin/profiler/rccl_layout.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>

#include "common/params.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {
namespace {

constexpr int kFirstRcclV7 = 23100;  // RCCL's v7 came with its NCCL 2.31 base

int FindLibrary(struct dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name == nullptr || *name == '\0') return 0;
  const char* base = strrchr(name, '/');
  base = base != nullptr ? base + 1 : name;
  if (strncmp(base, "librccl.so", strlen("librccl.so")) != 0) return 0;
  *static_cast<std::string*>(out) = name;
  return 1;
}

}  // namespace

RcclHost FindRccl() {
  RcclHost h;
  dl_iterate_phdr(&FindLibrary, &h.library);
  if (h.library.empty()) return h;
  h.version = NcclVersionCode();  // RCCL's own ncclGetVersion: the only one in an RCCL process
  if (void* lib = dlopen(h.library.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
    h.coll_config = dlsym(lib, "ncclAllReduceConfig") != nullptr;
    dlclose(lib);
  }
  return h;
}

V7Reading V7ReadingFor(const RcclHost& h, std::string* why, const std::string& forced) {
  why->clear();
  if (h.library.empty()) return V7Reading::kNvidia;
  char version[32];
  if (h.version > 0) {
    snprintf(version, sizeof(version), "%d.%d.%d", h.version / 10000, h.version / 100 % 100, h.version % 100);
  } else {
    snprintf(version, sizeof(version), "of unknown version");
  }
  const char* lack = forced == "v7"                ? nullptr
                     : forced == "v6"                ? "is set to be read as v6 (NCCLSCOPE_RCCL_V7=v6)"
                     : h.version < kFirstRcclV7      ? "predates NCCL 2.31's v7"
                     : !h.coll_config                ? "has no ncclAllReduceConfig, so no user tag to pass"
                                                     : nullptr;
  char line[768];
  if (lack == nullptr) {
    snprintf(line, sizeof(line),
             "RCCL (NCCL %s base, %s): profiler v7 read with NVIDIA's layout, its prefix%s; RCCL's "
             "ProxyOp additions and ProxyDiag updates are ignored",
             version, h.library.c_str(), forced == "v7" ? " (NCCLSCOPE_RCCL_V7=v7)" : "");
    *why = line;
    return V7Reading::kRcclAppended;
  }
  snprintf(line, sizeof(line),
           "RCCL (NCCL %s base, %s) %s: declining profiler v7's additions (its v7 layout is not known "
           "to carry userTag); its events are read through the v6 layout: no user tags, no kernel phases",
           version, h.library.c_str(), lack);
  *why = line;
  return V7Reading::kRcclAsV6;
}

namespace {
// The process's RCCL, looked for once (a walk of the loaded objects and a dlopen) for both questions below.
const RcclHost& ProcessRccl() {
  static const RcclHost h = FindRccl();
  return h;
}
}  // namespace

const V7Verdict& ProcessV7Verdict() {
  static const V7Verdict v = [] {
    V7Verdict out;
    out.reading = V7ReadingFor(ProcessRccl(), &out.why, Params().Str(ParamId::kRcclV7));
    return out;
  }();
  return v;
}

bool RcclInProcess() { return !ProcessRccl().library.empty(); }

}  // namespace ncclscope::profiler::abi
