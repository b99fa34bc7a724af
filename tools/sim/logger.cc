#include "logger.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace ncclscope::sim {
namespace {

std::atomic<int> g_rank{-1};

struct Filter {
  int level = NCCLSCOPE_LOG_WARN;  // NCCL prints WARN by default only when NCCL_DEBUG is set; we keep WARN on
  unsigned long subsys = ~0UL;
};

unsigned long ParseSubsys(const char* s) {
  // NCCL's syntax: comma list, optional leading '^' inverts. Unknown names are ignored.
  static const struct { const char* name; unsigned long bit; } kNames[] = {
      {"INIT", 0x1},   {"COLL", 0x2},    {"P2P", 0x4},     {"SHM", 0x8},     {"NET", 0x10},
      {"GRAPH", 0x20}, {"TUNING", 0x40}, {"ENV", 0x80},    {"ALLOC", 0x100}, {"CALL", 0x200},
      {"PROXY", 0x400}, {"NVLS", 0x800}, {"BOOTSTRAP", 0x1000}, {"REG", 0x2000}, {"PROFILE", 0x4000},
      {"RAS", 0x8000}, {"ALL", ~0UL}};
  bool invert = s[0] == '^';
  if (invert) ++s;
  unsigned long mask = 0;
  std::string list(s);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    std::string tok = list.substr(pos, end - pos);
    for (const auto& n : kNames) {
      if (strcasecmp(tok.c_str(), n.name) == 0) mask |= n.bit;
    }
    pos = end + 1;
  }
  return invert ? ~mask : mask;
}

const Filter& GetFilter() {
  static const Filter filter = [] {
    Filter f;
    if (const char* d = getenv("NCCL_DEBUG")) {
      if (strcasecmp(d, "VERSION") == 0) f.level = NCCLSCOPE_LOG_VERSION;
      else if (strcasecmp(d, "WARN") == 0) f.level = NCCLSCOPE_LOG_WARN;
      else if (strcasecmp(d, "INFO") == 0) f.level = NCCLSCOPE_LOG_INFO;
      else if (strcasecmp(d, "TRACE") == 0) f.level = NCCLSCOPE_LOG_TRACE;
      else if (strcasecmp(d, "NONE") == 0) f.level = NCCLSCOPE_LOG_NONE;
    }
    if (const char* s = getenv("NCCL_DEBUG_SUBSYS")) f.subsys = ParseSubsys(s);
    else f.subsys = 0x1 | 0x1000 | 0x80 | 0x10 | 0x4000;  // INIT|BOOTSTRAP|ENV plus NET and PROFILE for plugins
    return f;
  }();
  return filter;
}

}  // namespace

void SetLogRank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }

extern "C" void SimNcclLogger(ncclscope_log_level_t level, unsigned long flags, const char* filefunc, int line,
                              const char* fmt, ...) {
  const Filter& f = GetFilter();
  if (level == NCCLSCOPE_LOG_NONE || static_cast<int>(level) > f.level) return;
  // WARN always passes the subsystem filter, as in NCCL.
  if (level != NCCLSCOPE_LOG_WARN && (flags & f.subsys) == 0) return;
  static char host[64] = {0};
  if (host[0] == 0) {
    gethostname(host, sizeof(host) - 1);
    if (char* dot = strchr(host, '.')) *dot = 0;
  }
  char buf[2048];
  int n;
  const char* lvl = level == NCCLSCOPE_LOG_WARN ? "WARN" : level == NCCLSCOPE_LOG_TRACE ? "TRACE"
                                                        : level == NCCLSCOPE_LOG_VERSION ? "VERSION" : "INFO";
  int rank = g_rank.load(std::memory_order_relaxed);
  long tid = syscall(SYS_gettid);
  if (level == NCCLSCOPE_LOG_WARN) {
    n = snprintf(buf, sizeof(buf), "%s:%d:%ld [%d] %s:%d NCCL WARN ", host, getpid(), tid, rank,
                 filefunc ? filefunc : "?", line);
  } else {
    n = snprintf(buf, sizeof(buf), "%s:%d:%ld [%d] NCCL %s ", host, getpid(), tid, rank, lvl);
  }
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) m = 0;
  size_t len = std::min(sizeof(buf) - 2, static_cast<size_t>(n + m));
  buf[len++] = '\n';
  ssize_t w = write(STDERR_FILENO, buf, len);
  (void)w;
}

}  // namespace ncclscope::sim
