// ReadConfigFile: every file a user names is read the same bounded way. Each case is a real file system
// object: a FIFO nobody writes, /dev/zero, a directory, a file over the limit, a symbolic link.
#include "common/config_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace ncclscope {
namespace {

using Clock = std::chrono::steady_clock;

std::string ErrorOf(const std::string& path, size_t max_bytes = 1024) {
  const Result<std::string> r = ReadConfigFile("cert_file", path, {max_bytes});
  return r.ok() ? "ok" : r.status().message();
}

TEST(ConfigFile, ReadsARegularFileAndFollowsASymbolicLinkToOne) {
  testing::ScopedTempDir dir;
  const std::string file = dir.path() + "/cert.pem";
  std::ofstream(file) << "-----BEGIN CERTIFICATE-----\n";
  // How Kubernetes mounts a secret: the name is a link into a ..data directory.
  const std::string link = dir.path() + "/tls.crt";
  ASSERT_EQ(symlink(file.c_str(), link.c_str()), 0);
  for (const std::string& path : {file, link}) {
    const Result<std::string> r = ReadConfigFile("cert_file", path, {1024});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, "-----BEGIN CERTIFICATE-----\n");
  }
  EXPECT_EQ(ErrorOf(file, 10), "cert_file " + file + ": is 28 bytes, over the 10-byte limit for this file (refused, not truncated)");
}

TEST(ConfigFile, RefusesWhatIsNotARegularFileWithoutBlocking) {
  testing::ScopedTempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string dangling = dir.path() + "/dangling";
  ASSERT_EQ(symlink((dir.path() + "/nowhere").c_str(), dangling.c_str()), 0);
  const auto start = Clock::now();
  EXPECT_EQ(ErrorOf(fifo), "cert_file " + fifo + ": is a FIFO, not a regular file");
  EXPECT_EQ(ErrorOf("/dev/zero"), "cert_file /dev/zero: is a character device, not a regular file");
  EXPECT_EQ(ErrorOf(dir.path()), "cert_file " + dir.path() + ": is a directory, not a regular file");
  EXPECT_EQ(ErrorOf(dangling), "cert_file " + dangling + ": cannot open: No such file or directory");
  EXPECT_EQ(ErrorOf(""), "cert_file : empty path");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));  // a hang would time the test out, not fail it here
}

TEST(ConfigFile, AFileWithoutAKnownSizeIsStillCappedWhileRead) {
  // /proc files say size 0 and are regular: the cap holds while reading.
  const Result<std::string> r = ReadConfigFile("", "/proc/self/maps", {16});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/proc/self/maps: holds more than its stated size, over the 16-byte limit"),
            std::string::npos)
      << r.status().message();
}

TEST(ConfigFile, PrintableCutsAndMasksWhatAFileHolds) {
  EXPECT_EQ(Printable("forward", 80), "forward");
  EXPECT_EQ(Printable("a\x1b[2Jb\n", 80), "a?[2Jb?");
  EXPECT_EQ(Printable(std::string(100, 'x'), 4), "xxxx...");
}

}  // namespace
}  // namespace ncclscope
