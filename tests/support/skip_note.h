// A check that a loaded host makes impossible to judge (it held the test off the CPU past a deadline the check
// relies on) is left out with a line saying why, in GoogleTest's own "[ SKIPPED  ]" form so that a search of the
// log for skips finds it; the rest of the test still runs.
#ifndef NCCLSCOPE_TESTS_SUPPORT_SKIP_NOTE_H_
#define NCCLSCOPE_TESTS_SUPPORT_SKIP_NOTE_H_

#include <cstdarg>
#include <cstdio>

namespace ncclscope::testing {

__attribute__((format(printf, 1, 2))) inline void PrintSkip(const char* fmt, ...) {
  std::fputs("[ SKIPPED  ] ", stdout);
  va_list args;
  va_start(args, fmt);
  std::vprintf(fmt, args);
  va_end(args);
  std::fputc('\n', stdout);
}

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_SUPPORT_SKIP_NOTE_H_
