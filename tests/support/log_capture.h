// Captures what the plugin logs through the logger hook NCCL would install (SetNcclLogger, or a table's
// init): every line, and the warnings apart. One capture at a time per process; the lines are kept under a
// mutex, so plugin threads may log while a test reads.
#ifndef NCCLSCOPE_TESTS_SUPPORT_LOG_CAPTURE_H_
#define NCCLSCOPE_TESTS_SUPPORT_LOG_CAPTURE_H_

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "ncclscope/abi/common.h"

namespace ncclscope::testing {

class LogCapture {
 public:
  // The logger to hand the plugin; it feeds the current capture.
  static void Logger(ncclscope_log_level_t level, unsigned long, const char*, int, const char* fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    std::lock_guard<std::mutex> lock(Mu());
    Lines().push_back(buf);
    if (level == NCCLSCOPE_LOG_WARN) Warnings().push_back(buf);
  }
  static void Clear() {
    std::lock_guard<std::mutex> lock(Mu());
    Lines().clear();
    Warnings().clear();
  }
  static std::vector<std::string> AllLines() {
    std::lock_guard<std::mutex> lock(Mu());
    return Lines();
  }
  static std::vector<std::string> AllWarnings() {
    std::lock_guard<std::mutex> lock(Mu());
    return Warnings();
  }
  // True when some line contains `needle`.
  static bool Logged(const std::string& needle) {
    for (const std::string& l : AllLines()) {
      if (l.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  static void Print(FILE* out) {
    for (const std::string& l : AllLines()) std::fprintf(out, "  log: %s\n", l.c_str());
  }

 private:
  static std::mutex& Mu() {
    static std::mutex mu;
    return mu;
  }
  static std::vector<std::string>& Lines() {
    static std::vector<std::string> lines;
    return lines;
  }
  static std::vector<std::string>& Warnings() {
    static std::vector<std::string> warnings;
    return warnings;
  }
};

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_SUPPORT_LOG_CAPTURE_H_
