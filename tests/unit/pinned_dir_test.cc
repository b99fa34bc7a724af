// The output folder is resolved once (common/pinned_dir.h): after the first write every file is created and
// renamed relative to the folder's handle. A folder swapped for a link mid-job keeps receiving the files (the
// link's target gets none); one removed and replaced by a link is refused with one warning; one removed is
// re-created where it was; a chdir() moves nothing.
#include "common/pinned_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/log.h"
#include "common/output_dir.h"
#include "log_capture.h"

namespace ncclscope {
namespace {

namespace fs = std::filesystem;

std::string MakeTempDir(const char* tag) {
  std::string templ = std::string("/tmp/ncclscope-") + tag + "-XXXXXX";
  EXPECT_NE(mkdtemp(templ.data()), nullptr);
  return templ;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

OutputDir* Open(const std::string& dir) {
  Result<OutputDir*> out = OutputDir::Get(dir);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : nullptr;
}

TEST(PinnedDir, SplitParent) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(SplitParent("a/b/c"), (P{"a/b", "c"}));
  EXPECT_EQ(SplitParent("a/b/c//"), (P{"a/b", "c"}));
  EXPECT_EQ(SplitParent("c"), (P{".", "c"}));
  EXPECT_EQ(SplitParent("/c"), (P{"/", "c"}));
  EXPECT_EQ(SplitParent("/"), (P{"/", "."}));
}

// The issue: `mv dumps dumps.old; ln -s elsewhere dumps` mid-job. The next files go on into the folder first
// opened (now dumps.old), none into `elsewhere`.
TEST(PinnedDir, AFolderSwappedForALinkAfterTheFirstWriteIsNotFollowed) {
  const std::string top = MakeTempDir("pinned"), victim = MakeTempDir("victim");
  const std::string dir = top + "/dumps";
  OutputDir* out = Open(dir);
  ASSERT_NE(out, nullptr);
  ASSERT_TRUE(out->WriteAtomically("first.json", "1\n").ok());
  ASSERT_TRUE(out->WriteAtomicallyIn("host", "first.json", "1\n").ok());

  ASSERT_EQ(rename(dir.c_str(), (top + "/dumps.old").c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), dir.c_str()), 0);
  ASSERT_TRUE(OutputDir::Get(dir).ok()) << "the folder held open is still there";
  EXPECT_TRUE(out->WriteAtomically("second.json", "2\n").ok());
  EXPECT_TRUE(out->WriteAtomicallyIn("host", "second.json", "2\n").ok());
  EXPECT_EQ(ReadFile(top + "/dumps.old/second.json"), "2\n");
  EXPECT_EQ(ReadFile(top + "/dumps.old/host/second.json"), "2\n");
  EXPECT_TRUE(fs::is_empty(victim)) << "a file went to the link's target";
  fs::remove_all(top);
  fs::remove_all(victim);
}

// Removed, then a link put at its name: refused (one warning), never followed; removed alone: re-created
// where it was.
TEST(PinnedDir, ARemovedFolderIsRecreatedInPlaceButNeverThroughALink) {
  const std::string top = MakeTempDir("pinned"), victim = MakeTempDir("victim");
  const std::string dir = top + "/dumps";
  OutputDir* out = Open(dir);
  ASSERT_NE(out, nullptr);
  ASSERT_TRUE(out->WriteAtomically("a.json", "1\n").ok());

  fs::remove_all(dir);
  ASSERT_EQ(symlink(victim.c_str(), dir.c_str()), 0);
  testing::LogCapture::Clear();
  SetNcclLogger(&testing::LogCapture::Logger);
  EXPECT_FALSE(out->WriteAtomically("a.json", "2\n").ok());
  EXPECT_FALSE(out->WriteAtomically("a.json", "3\n").ok());
  SetNcclLogger(nullptr);
  EXPECT_TRUE(fs::is_empty(victim)) << "a file went through the link";
  const std::vector<std::string> warnings = testing::LogCapture::AllWarnings();
  ASSERT_EQ(warnings.size(), 1u) << "warned once";
  EXPECT_NE(warnings[0].find("where it was first opened"), std::string::npos) << warnings[0];

  ASSERT_EQ(unlink(dir.c_str()), 0);
  EXPECT_TRUE(out->WriteAtomically("a.json", "4\n").ok());
  EXPECT_EQ(ReadFile(dir + "/a.json"), "4\n") << "re-created in place";
  fs::remove_all(top);
  fs::remove_all(victim);
}

// A relative folder (the default ./ncclscope-<job id>) stays where it was first resolved after a chdir().
TEST(PinnedDir, ARelativeFolderStaysPutAcrossAChdir) {
  const std::string a = MakeTempDir("cwd-a"), b = MakeTempDir("cwd-b");
  const fs::path cwd = fs::current_path();
  ASSERT_EQ(chdir(a.c_str()), 0);
  const std::string rel = "rel-" + std::to_string(getpid());
  OutputDir* out = Open(rel);
  ASSERT_NE(out, nullptr);
  ASSERT_TRUE(out->WriteAtomically("x.json", "1\n").ok());
  ASSERT_EQ(chdir(b.c_str()), 0);
  fs::remove_all(a + "/" + rel);  // removed: re-created in a, not under the new working directory
  EXPECT_TRUE(out->WriteAtomically("x.json", "2\n").ok());
  fs::current_path(cwd);
  EXPECT_EQ(ReadFile(a + "/" + rel + "/x.json"), "2\n");
  EXPECT_TRUE(fs::is_empty(b));
  fs::remove_all(a);
  fs::remove_all(b);
}

}  // namespace
}  // namespace ncclscope
