// Identity text made safe once (common/safe_text.h): valid UTF-8, no control characters, a length cap cut on a
// character boundary; and the log's escaping of control bytes.
#include <gtest/gtest.h>

#include <string>

#include "common/safe_text.h"

namespace ncclscope {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// Valid UTF-8 by RFC 3629 (no overlongs, surrogates or code points above U+10FFFF); the check the output must pass.
bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    unsigned cp = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

TEST(SafeLabelValue, PlainTextIsUnchanged) {
  SafeTextReport report;
  EXPECT_EQ(SafeLabelValue("slurm-4242.train_A:run/1", kMaxIdentityValueBytes, &report), "slurm-4242.train_A:run/1");
  EXPECT_EQ(report.replaced, 0u);
  EXPECT_FALSE(report.cut);
  EXPECT_EQ(SafeLabelValue("Jörg-日本-🚀"), "Jörg-日本-🚀") << "valid multi-byte characters stay";
  EXPECT_EQ(SafeLabelValue(""), "");
}

// Each maximal invalid subpart is one U+FFFD, as Python's bytes.decode(errors="replace") does (the e2e test
// compares with it): a lone continuation byte, a truncated sequence, an overlong, a surrogate, F5..FF.
TEST(SafeLabelValue, InvalidSequencesBecomeOneReplacementEach) {
  SafeTextReport report;
  EXPECT_EQ(SafeLabelValue("a\xFF" "b", kMaxIdentityValueBytes, &report), "a" + kFffd + "b");
  EXPECT_EQ(report.replaced, 1u);
  EXPECT_EQ(SafeLabelValue("\x80\x80"), kFffd + kFffd) << "two lone continuation bytes";
  EXPECT_EQ(SafeLabelValue("x\xE6\x97"), "x" + kFffd) << "a truncated 3-byte sequence is one maximal subpart";
  EXPECT_EQ(SafeLabelValue("\xE6\x97" "A"), kFffd + "A");
  EXPECT_EQ(SafeLabelValue("\xC0\xAF"), kFffd + kFffd) << "overlong '/': C0 never starts a sequence";
  EXPECT_EQ(SafeLabelValue("\xE0\x80\xAF"), kFffd + kFffd + kFffd) << "overlong 3-byte form";
  EXPECT_EQ(SafeLabelValue("\xED\xA0\x80"), kFffd + kFffd + kFffd) << "a surrogate";
  EXPECT_EQ(SafeLabelValue("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd) << "above U+10FFFF";
  EXPECT_EQ(SafeLabelValue("\xF0\x9F\x9A"), kFffd) << "a truncated 4-byte sequence";
  EXPECT_EQ(SafeLabelValue("\xF8\xFE"), kFffd + kFffd);
}

TEST(SafeLabelValue, ControlCharactersAreReplaced) {
  SafeTextReport report;
  EXPECT_EQ(SafeLabelValue("job\n1\t2\x1b[31m\x7f", kMaxIdentityValueBytes, &report),
            "job" + kFffd + "1" + kFffd + "2" + kFffd + "[31m" + kFffd);
  EXPECT_EQ(report.replaced, 4u);
  EXPECT_EQ(SafeLabelValue("a\xC2\x85z"), "a" + kFffd + "z") << "C1 (NEL) is a control character too";
  EXPECT_EQ(SafeLabelValue("\xC2\xA0"), "\xC2\xA0") << "U+00A0 is not";
}

TEST(SafeLabelValue, LongValuesAreCutOnACharacterBoundary) {
  SafeTextReport report;
  const std::string big(100 * 1024, 'j');
  const std::string out = SafeLabelValue(big, kMaxIdentityValueBytes, &report);
  EXPECT_EQ(out, std::string(kMaxIdentityValueBytes, 'j'));
  EXPECT_TRUE(report.cut);
  // 255 ASCII bytes then a 3-byte character: the character does not fit whole, so it goes.
  const std::string edge = std::string(255, 'a') + "日" + "b";
  EXPECT_EQ(SafeLabelValue(edge), std::string(255, 'a'));
  EXPECT_EQ(SafeLabelValue(std::string(256, 'a')), std::string(256, 'a')) << "exactly the limit is kept";
  // The replacement counts towards the limit: the output is never longer than it.
  const std::string junk(1000, '\xFF');
  const std::string cut = SafeLabelValue(junk, kMaxIdentityValueBytes, &report);
  EXPECT_LE(cut.size(), kMaxIdentityValueBytes);
  EXPECT_EQ(cut.size() % 3, 0u);
  EXPECT_TRUE(IsValidUtf8(cut));
}

// Every byte string gives valid UTF-8 without control characters: all 2-byte strings, and 3-byte strings over
// the bytes where the rules change.
TEST(SafeLabelValue, AnyInputGivesValidText) {
  const unsigned char edges[] = {0x00, 0x0a, 0x1f, 0x20, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
  auto check = [](const std::string& in) {
    const std::string out = SafeLabelValue(in);
    ASSERT_TRUE(IsValidUtf8(out)) << ::testing::PrintToString(in);
    for (const char c : out) {
      const auto b = static_cast<unsigned char>(c);
      ASSERT_FALSE(b < 0x20 || b == 0x7f) << ::testing::PrintToString(in);
    }
  };
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) check(std::string{static_cast<char>(a), static_cast<char>(b)});
  }
  for (unsigned char a : edges) {
    for (unsigned char b : edges) {
      for (unsigned char c : edges) {
        for (unsigned char d : edges) {
          check(std::string{static_cast<char>(a), static_cast<char>(b), static_cast<char>(c), static_cast<char>(d)});
        }
      }
    }
  }
}

TEST(EscapeControlBytes, NewlinesAndEscapesAreWrittenAsCEscapes) {
  char out[64];
  EXPECT_EQ(EscapeControlBytes("nic eth0\nNCCL WARN forged", out, sizeof(out)), 26u);
  EXPECT_STREQ(out, "nic eth0\\nNCCL WARN forged");
  EscapeControlBytes("a\r\tb\x1b[0m\x7f" "\xC3\xA9", out, sizeof(out));
  EXPECT_STREQ(out, "a\\r\\tb\\x1b[0m\\x7f\xC3\xA9") << "UTF-8 text is copied as it is";
}

TEST(EscapeControlBytes, NeverOverrunsNorCutsAnEscape) {
  char out[5];
  EXPECT_EQ(EscapeControlBytes("ab\ncd", out, sizeof(out)), 4u);
  EXPECT_STREQ(out, "ab\\n");
  EXPECT_EQ(EscapeControlBytes("abc\x01", out, sizeof(out)), 3u) << "\\x01 does not fit whole";
  EXPECT_STREQ(out, "abc");
}

}  // namespace
}  // namespace ncclscope
