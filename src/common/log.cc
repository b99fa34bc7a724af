#include "common/log.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "common/host.h"
#include "common/safe_text.h"

namespace ncclscope {
namespace {

std::atomic<ncclscope_logger_t> g_logger{nullptr};
std::atomic<int> g_stderr_level{-1};  // -1: not read yet

int StderrLevelFromEnv() {
  const char* v = std::getenv("NCCL_DEBUG");
  if (v == nullptr) return static_cast<int>(LogLevel::kWarn);
  if (strcasecmp(v, "VERSION") == 0) return static_cast<int>(LogLevel::kVersion);
  if (strcasecmp(v, "WARN") == 0) return static_cast<int>(LogLevel::kWarn);
  if (strcasecmp(v, "INFO") == 0) return static_cast<int>(LogLevel::kInfo);
  if (strcasecmp(v, "TRACE") == 0) return static_cast<int>(LogLevel::kTrace);
  if (strcasecmp(v, "ABORT") == 0) return static_cast<int>(LogLevel::kAbort);
  return static_cast<int>(LogLevel::kWarn);
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
    default: return "LOG";
  }
}

}  // namespace

void SetNcclLogger(ncclscope_logger_t logger) { g_logger.store(logger, std::memory_order_release); }
ncclscope_logger_t NcclLogger() { return g_logger.load(std::memory_order_acquire); }
void ReloadStderrLogLevel() { g_stderr_level.store(StderrLevelFromEnv(), std::memory_order_relaxed); }

void Log(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char raw[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(raw, sizeof(raw), fmt, ap);
  va_end(ap);
  // Every caller covered at once: a NIC name, job id or environment value read from outside may hold a newline
  // (which would split NCCL's log line, and forge the next one) or a terminal escape.
  char msg[2048];
  EscapeControlBytes(raw, msg, sizeof(msg));

  if (ncclscope_logger_t logger = NcclLogger()) {
    // NCCL's WARN goes to every subsystem, as its own plugin macros do.
    unsigned long f = level == LogLevel::kWarn ? subsys::kAll : flags;
    logger(static_cast<ncclscope_log_level_t>(level), f, file, line, "ncclscope: %s", msg);
    return;
  }
  int threshold = g_stderr_level.load(std::memory_order_relaxed);
  if (threshold < 0) {
    threshold = StderrLevelFromEnv();
    g_stderr_level.store(threshold, std::memory_order_relaxed);
  }
  if (static_cast<int>(level) > threshold || level == LogLevel::kNone) return;
  std::fprintf(stderr, "%s:%d:%ld [ncclscope] %s %s\n", HostName().c_str(), static_cast<int>(getpid()),
               static_cast<long>(syscall(SYS_gettid)), LevelName(level), msg);
}

}  // namespace ncclscope
