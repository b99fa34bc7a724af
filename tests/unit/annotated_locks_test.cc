// Debian's abseil is not built with TSan, so an absl::Mutex taken through absl's own scoped locks is invisible
// to the sanitizer: what it guards is reported as racing, but only in the runs where no other edge happens to
// order the threads (a CI run failed that way). Every lock in src/ goes through AnnotatedLock
// (common/tsan_lock.h); this test names any file that does not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

TEST(AnnotatedLocks, NoSourceTakesAnAbseilMutexBehindTsansBack) {
  const std::vector<std::string> unannotated = {"absl::MutexLock ", "absl::ReaderMutexLock ",
                                                "absl::WriterMutexLock ", "absl::MutexLockMaybe ",
                                                "absl::ReleasableMutexLock "};
  int scanned = 0;
  std::vector<std::string> offenders;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(NCCLSCOPE_SOURCE_DIR) / "src")) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    if (entry.path().filename() == "tsan_lock.h") continue;  // the wrapper itself
    ++scanned;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    for (const std::string& lock : unannotated) {
      if (text.str().find(lock) != std::string::npos) offenders.push_back(entry.path().string() + ": " + lock);
    }
  }
  EXPECT_GT(scanned, 100) << "src/ not found under " << NCCLSCOPE_SOURCE_DIR;
  for (const std::string& o : offenders) ADD_FAILURE() << o << "— use ncclscope::AnnotatedLock";
}

}  // namespace
