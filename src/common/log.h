// Logging through the logger NCCL passes to init, with NCCL's subsystem flags (NET for the net half,
// PROFILE for the profiler half). Before any init (tools, tests) messages go to stderr, filtered by
// NCCL_DEBUG (WARN, INFO, TRACE) like NCCL's own. A message never carries a raw control character: each is
// written as a C escape (\n, \t, \x1b), so text read from outside cannot split or forge a log line.
// Thread-safe; the logger pointer is an atomic.
#ifndef NCCLSCOPE_COMMON_LOG_H_
#define NCCLSCOPE_COMMON_LOG_H_

#include <atomic>

#include "ncclscope/abi/common.h"

namespace ncclscope {

enum class LogLevel { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kAbort = 4, kTrace = 5 };

namespace subsys {
inline constexpr unsigned long kInit = NCCLSCOPE_SUBSYS_INIT;
inline constexpr unsigned long kNet = NCCLSCOPE_SUBSYS_NET;
inline constexpr unsigned long kEnv = NCCLSCOPE_SUBSYS_ENV;
inline constexpr unsigned long kProfile = NCCLSCOPE_SUBSYS_PROFILE;
inline constexpr unsigned long kAll = NCCLSCOPE_SUBSYS_ALL;
}  // namespace subsys

// Installs NCCL's logger (the last one wins; both halves receive the same function). NULL restores
// the stderr fallback.
void SetNcclLogger(ncclscope_logger_t logger);
ncclscope_logger_t NcclLogger();

// The stderr fallback's threshold, read from NCCL_DEBUG once per call of this function.
void ReloadStderrLogLevel();

void Log(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

}  // namespace ncclscope

#define NCCLSCOPE_WARN(flags, ...) \
  ::ncclscope::Log(::ncclscope::LogLevel::kWarn, (flags), __FILE__, __LINE__, __VA_ARGS__)
#define NCCLSCOPE_INFO(flags, ...) \
  ::ncclscope::Log(::ncclscope::LogLevel::kInfo, (flags), __func__, __LINE__, __VA_ARGS__)
#define NCCLSCOPE_TRACE(flags, ...) \
  ::ncclscope::Log(::ncclscope::LogLevel::kTrace, (flags), __func__, __LINE__, __VA_ARGS__)

// Logs at most once per call site for the life of the process (e.g. a dropped event per reason).
#define NCCLSCOPE_LOG_ONCE(level_macro, flags, ...)                                      \
  do {                                                                                  \
    static std::atomic<bool> ncclscope_logged_once_{false};                            \
    if (!ncclscope_logged_once_.exchange(true, std::memory_order_relaxed)) {            \
      level_macro(flags, __VA_ARGS__);                                                  \
    }                                                                                   \
  } while (0)

#endif  // NCCLSCOPE_COMMON_LOG_H_
