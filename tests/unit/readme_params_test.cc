// The README's configuration table is generated from param_list.inc (`ncclscope-params`); this test fails
// when someone adds or changes a tunable without regenerating it (scripts/update-readme.sh).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/params.h"

TEST(ReadmeParams, ConfigurationTableIsUpToDate) {
  std::ifstream in(std::string(NCCLSCOPE_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in.good()) << "README.md not found";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  const std::string begin = "<!-- params:begin -->\n";
  const std::string end = "<!-- params:end -->";
  size_t b = readme.find(begin);
  size_t e = readme.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md lacks the params:begin marker";
  ASSERT_NE(e, std::string::npos) << "README.md lacks the params:end marker";
  std::string table = readme.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(table, ncclscope::ParamsMarkdownTable())
      << "README.md's configuration table is stale: run scripts/update-readme.sh";
}
