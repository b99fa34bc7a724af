// ncclscope-cleanup DIR... [--grace S]: removes, in each DIR (a NCCLSCOPE_PROM_TEXTFILE_DIR or NCCLSCOPE_SD_DIR),
// the outputs of every ncclscope process whose owner lock is free and whose grace has passed (S seconds,
// default NCCLSCOPE_OUTPUT_GRACE_S, 60), and prints each file it removed. Files of live processes (lock
// held) are never touched; links are never followed. Meant for a job epilog or a cron job.
// Exit status: 0 done, 1 a DIR (or a work folder in it) could not be read, 2 usage error.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/output_dir.h"
#include "common/params.h"

namespace {

constexpr const char* kUsage =
    "usage: ncclscope-cleanup DIR... [--grace S]\n"
    "       ncclscope-cleanup --help | --version\n"
    "Removes the textfiles and file_sd targets that ncclscope processes left in each DIR once their process is\n"
    "gone (its owner lock is free) and S seconds have passed since it was last alive (default\n"
    "NCCLSCOPE_OUTPUT_GRACE_S, 60). Prints every file removed. Exit status: 0 done, 1 a folder could not be\n"
    "read, 2 usage error.\n";

int UsageError(const std::string& what) {
  std::fprintf(stderr, "ncclscope-cleanup: %s (try --help)\n", what.c_str());
  return 2;
}

// A non-negative decimal integer up to a day, strictly.
bool ParseGrace(const std::string& text, long* out) {
  if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::strtol(text.c_str(), nullptr, 10);
  return *out <= 86400;
}

}  // namespace

int main(int argc, char** argv) {
  long grace = static_cast<long>(ncclscope::Params().Int(ncclscope::ParamId::kOutputGraceS));
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--version") {
      std::printf("ncclscope-cleanup %s\n", NCCLSCOPE_VERSION);
      return 0;
    }
    std::string value;
    if (a == "--grace") {
      if (i + 1 >= argc) return UsageError("--grace needs a number of seconds");
      value = argv[++i];
    } else if (a.rfind("--grace=", 0) == 0) {
      value = a.substr(8);
    } else if (a.rfind("-", 0) == 0) {
      return UsageError("unknown option '" + a + "'");
    } else {
      dirs.push_back(a);
      continue;
    }
    if (!ParseGrace(value, &grace)) return UsageError("--grace '" + value + "' is not a number of seconds 0..86400");
  }
  if (dirs.empty()) return UsageError("no DIR given");
  int rc = 0;
  for (const std::string& dir : dirs) {
    std::vector<std::string> removed;
    ncclscope::Status s = ncclscope::SweepStaleOutputs(dir, grace, &removed);
    for (const std::string& name : removed) std::printf("removed %s/%s\n", dir.c_str(), name.c_str());
    if (!s.ok()) {
      std::fprintf(stderr, "ncclscope-cleanup: %s\n", s.message().c_str());
      rc = 1;
    }
  }
  return rc;
}
