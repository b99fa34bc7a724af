#include "clock_offset.h"

#include <dlfcn.h>
#include <link.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace ncclscope::sim {
namespace {

using ClockFn = int (*)(clockid_t, struct timespec*);

// libc's clock_gettime, looked up before main (the dynamic linker is single-threaded then).
ClockFn g_real = reinterpret_cast<ClockFn>(dlsym(RTLD_NEXT, "clock_gettime"));

std::atomic<int64_t> g_realtime_ns{0};
std::atomic<int64_t> g_monotonic_ns{0};

// Executable segments of the libraries whose clock reads are classified: [lo, hi) and whether reads from
// there are shifted (a plugin library) or not (everything else). Appended under g_mu, read without it (a slot
// is published by g_count after it is stored). A read from code not classified yet is classified by dladdr
// once: plugin libraries are recognised by file name, registered before the dlopen that runs their static
// initialisers (which may read the clocks already).
constexpr int kMaxRanges = 256;
std::atomic<uintptr_t> g_lo[kMaxRanges], g_hi[kMaxRanges];
std::atomic<bool> g_shift[kMaxRanges];
std::atomic<int> g_count{0};
std::mutex g_mu;
constexpr int kMaxNames = 16;
char g_names[kMaxNames][256];  // basenames of the plugin libraries, under g_mu
int g_nnames = 0;

const char* Basename(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

// Index of the range holding pc, or -1.
int Lookup(uintptr_t pc) {
  int n = g_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (pc >= g_lo[i].load(std::memory_order_relaxed) && pc < g_hi[i].load(std::memory_order_relaxed)) return i;
  }
  return -1;
}

void AddRange(uintptr_t lo, uintptr_t hi, bool shift) {  // under g_mu
  int n = g_count.load(std::memory_order_relaxed);
  for (int k = 0; k < n; ++k) {
    if (g_lo[k].load(std::memory_order_relaxed) == lo) return;
  }
  if (n == kMaxRanges) return;
  g_lo[n].store(lo, std::memory_order_relaxed);
  g_hi[n].store(hi, std::memory_order_relaxed);
  g_shift[n].store(shift, std::memory_order_relaxed);
  g_count.store(n + 1, std::memory_order_release);
}

// The executable segments of one library, found by dl_iterate_phdr.
struct Search {
  const char* name;
  int n = 0;
  uintptr_t lo[8] = {}, hi[8] = {};
};

int FindSegments(struct dl_phdr_info* info, size_t, void* arg) {
  auto* s = static_cast<Search*>(arg);
  if (info->dlpi_name == nullptr || strcmp(info->dlpi_name, s->name) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum && s->n < 8; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    s->lo[s->n] = info->dlpi_addr + ph.p_vaddr;
    s->hi[s->n++] = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
  }
  return 1;
}

// Whether a clock read from pc is shifted; classifies its library the first time. dladdr and dl_iterate_phdr
// take the dynamic loader's lock, and a thread inside dlopen (running a plugin's static initialisers) holds it
// while it reads the clock, so they run outside g_mu: g_mu is only ever taken last.
bool FromPlugin(uintptr_t pc) {
  int i = Lookup(pc);
  if (i >= 0) return g_shift[i].load(std::memory_order_relaxed);
  Dl_info info;
  char name[4096] = "";
  if (dladdr(reinterpret_cast<void*>(pc), &info) != 0 && info.dli_fname != nullptr && info.dli_fname[0] != '\0' &&
      strlen(info.dli_fname) < sizeof(name)) {
    strcpy(name, info.dli_fname);
  }
  Search s{name};
  if (name[0] != '\0') dl_iterate_phdr(FindSegments, &s);
  std::lock_guard<std::mutex> lock(g_mu);
  bool shift = false;
  for (int k = 0; k < g_nnames && name[0] != '\0'; ++k) shift |= strcmp(Basename(name), g_names[k]) == 0;
  for (int k = 0; k < s.n; ++k) AddRange(s.lo[k], s.hi[k], shift);
  // The main program (no name in the link map) or code outside any library: that page alone, not shifted.
  if (s.n == 0) AddRange(pc & ~uintptr_t{4095}, (pc & ~uintptr_t{4095}) + 4096, shift);
  return shift;
}

bool IsRealtime(clockid_t id) {
  return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}
bool IsMonotonic(clockid_t id) {
  return id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE || id == CLOCK_MONOTONIC_RAW || id == CLOCK_BOOTTIME;
}

}  // namespace

void SetClockOffsetNs(int64_t offset_ns) {
  g_realtime_ns.store(offset_ns, std::memory_order_relaxed);
  g_monotonic_ns.store(offset_ns < 0 ? offset_ns + kMaxClockOffsetMs * 1'000'000 : offset_ns,
                       std::memory_order_relaxed);
}

int64_t ClockOffsetNs() { return g_realtime_ns.load(std::memory_order_relaxed); }

}  // namespace ncclscope::sim

using namespace ncclscope::sim;

extern "C" void NcclscopeSimExpectPlugin(const char* path) {
  if (path == nullptr || path[0] == '\0') return;  // the main program (STATIC_PLUGIN): the sim's own code
  std::lock_guard<std::mutex> lock(g_mu);
  const char* base = Basename(path);
  for (int k = 0; k < g_nnames; ++k) {
    if (strcmp(g_names[k], base) == 0) return;
  }
  if (g_nnames == kMaxNames || strlen(base) >= sizeof(g_names[0])) return;
  strcpy(g_names[g_nnames++], base);
}

// The process's clock_gettime (exported from the executable, so the plugins' calls bind here).
extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec* ts) __THROW {
  ClockFn real = g_real != nullptr ? g_real : reinterpret_cast<ClockFn>(dlsym(RTLD_NEXT, "clock_gettime"));
  int rc = real(id, ts);
  if (rc != 0) return rc;
  int64_t shift = IsRealtime(id) ? g_realtime_ns.load(std::memory_order_relaxed)
                  : IsMonotonic(id) ? g_monotonic_ns.load(std::memory_order_relaxed)
                                    : 0;
  if (shift == 0 || !FromPlugin(reinterpret_cast<uintptr_t>(__builtin_return_address(0)))) return rc;
  int64_t ns = static_cast<int64_t>(ts->tv_sec) * 1'000'000'000 + ts->tv_nsec + shift;
  ts->tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts->tv_nsec = static_cast<long>(ns % 1'000'000'000);
  return rc;
}
