// NCCL's debug logger as the sim hands it to plugin init functions: lines look like NCCL's
// (`host:pid:tid [rank] NCCL INFO …`), filtered by NCCL_DEBUG (VERSION, WARN, INFO, TRACE) and
// NCCL_DEBUG_SUBSYS. Thread-safe: each line is formatted into a local buffer and written with one write().
#ifndef NCCLSCOPE_TOOLS_SIM_LOGGER_H_
#define NCCLSCOPE_TOOLS_SIM_LOGGER_H_

#include "ncclscope/abi/common.h"

namespace ncclscope::sim {

// The logger function pointer passed to net and profiler init (C varargs, as NCCL's).
extern "C" void SimNcclLogger(ncclscope_log_level_t level, unsigned long flags, const char* filefunc, int line,
                              const char* fmt, ...) __attribute__((format(printf, 5, 6)));

// Sets the rank shown in log lines (-1 before the rank is known).
void SetLogRank(int rank);

// The sim's own messages go through the same filter and format.
#define SIM_WARN(...) ::ncclscope::sim::SimNcclLogger(NCCLSCOPE_LOG_WARN, NCCLSCOPE_SUBSYS_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define SIM_INFO(flags, ...) ::ncclscope::sim::SimNcclLogger(NCCLSCOPE_LOG_INFO, (flags), __func__, __LINE__, __VA_ARGS__)

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_LOGGER_H_
