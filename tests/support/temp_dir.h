// Test helpers shared by every suite: a temporary directory removed at scope exit (kept when
// NCCLSCOPE_TEST_KEEP is set, for post-mortems), and an environment variable set for one scope.
// Not thread-safe (setenv is not): use them on a test's main thread, before starting threads.
#ifndef NCCLSCOPE_TESTS_SUPPORT_TEMP_DIR_H_
#define NCCLSCOPE_TESTS_SUPPORT_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

namespace ncclscope::testing {

class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& prefix = "ncclscope-test") {
    std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path_ = mkdtemp(t.data()) != nullptr ? t : "";
  }
  ~ScopedTempDir() {
    std::error_code ec;
    if (!path_.empty() && getenv("NCCLSCOPE_TEST_KEEP") == nullptr) std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets (or, with nullopt, unsets) one variable and restores its previous value at scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1); else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_SUPPORT_TEMP_DIR_H_
