// NCCLSCOPE_TAG_NAMES parsing: good pairs kept, every bad one skipped with a warning naming it, the file form.
#include "core/tag_names.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace ncclscope {
namespace {

TagNameMap Parse(const std::string& text, std::vector<std::string>* warnings) {
  return ParseTagNames(text, [warnings](const std::string& w) { warnings->push_back(w); });
}

TEST(TagNames, PairsInDecimalAndHex) {
  std::vector<std::string> warnings;
  TagNameMap m = Parse("1=forward, 0x2=backward ,0x7fffffffffffffff=optimizer.step", &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(m, (TagNameMap{{1, "forward"}, {2, "backward"}, {0x7fffffffffffffffull, "optimizer.step"}}));
}

TEST(TagNames, BadPairsAreSkippedNamingThem) {
  std::vector<std::string> warnings;
  TagNameMap m = Parse("1=ok,2,0=zero,0x8000000000000001=reserved,-3=neg,4x=junk,5=bad name,6=,1=again,"
                       "7=" + std::string(65, 'a'),
                       &warnings);
  EXPECT_EQ(m, (TagNameMap{{1, "ok"}}));
  ASSERT_EQ(warnings.size(), 9u);
  EXPECT_NE(warnings[0].find("'2' skipped: want VALUE=NAME"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("'0=zero' skipped"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[2].find("reserves the top bit"), std::string::npos) << warnings[2];
  EXPECT_NE(warnings[4].find("VALUE must be an integer from 1 to 2^63-1, decimal or 0x hex"), std::string::npos) << warnings[4];
  EXPECT_NE(warnings[5].find("NAME must be"), std::string::npos) << warnings[5];
  EXPECT_NE(warnings[7].find("given twice"), std::string::npos) << warnings[7];
}

TEST(TagNames, FileWithComments) {
  testing::ScopedTempDir dir;
  const std::string path = dir.path() + "/tags";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("# training phases\n1 = forward\n\n2=backward  # the second\n3=bad name\n", f);
  fclose(f);
  std::vector<std::string> warnings;
  EXPECT_EQ(Parse("@" + path, &warnings), (TagNameMap{{1, "forward"}, {2, "backward"}}));
  EXPECT_EQ(warnings.size(), 1u);
  warnings.clear();
  EXPECT_TRUE(Parse("@" + path + ".missing", &warnings).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("tag-name file " + path + ".missing: cannot open"), std::string::npos) << warnings[0];
}

// Before 2026-11-27, @/dev/zero grew each rank to ~1 GB and @FIFO hung the job. Both are refused at once.
TEST(TagNames, AFileThatIsNotARegularFileIsRefusedAtOnce) {
  testing::ScopedTempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, std::string> cases[] = {
      {"/dev/zero", "is a character device, not a regular file"},
      {fifo, "is a FIFO, not a regular file"},
      {dir.path(), "is a directory, not a regular file"}};
  for (const auto& [path, why] : cases) {
    std::vector<std::string> warnings;
    EXPECT_TRUE(Parse("@" + path, &warnings).empty()) << path;
    ASSERT_EQ(warnings.size(), 1u) << path;
    EXPECT_NE(warnings[0].find(path + ": " + why + ": no tag names"), std::string::npos) << warnings[0];
  }
}

TEST(TagNames, AFileOverTheLimitIsRefusedAndJunkIsCountedNotListed) {
  testing::ScopedTempDir dir;
  const std::string big = dir.path() + "/big";
  std::ofstream(big) << std::string((1 << 20) + 1, '#');
  std::vector<std::string> warnings;
  EXPECT_TRUE(Parse("@" + big, &warnings).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("over the 1048576-byte limit"), std::string::npos) << warnings[0];

  const std::string junk = dir.path() + "/junk";
  {
    std::ofstream out(junk);
    for (int i = 0; i < 5000; ++i) out << "junk" << i << "\n";
    out << "7=" << std::string(10000, 'x') << "\n9=kept\n";
  }
  warnings.clear();
  EXPECT_EQ(Parse("@" + junk, &warnings), (TagNameMap{{9, "kept"}}));
  ASSERT_EQ(warnings.size(), 11u);
  EXPECT_EQ(warnings.back(), "4991 more bad tag names skipped");
  EXPECT_LT(warnings[9].size(), 200u);
}

}  // namespace
}  // namespace ncclscope
