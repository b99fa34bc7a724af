#include "common/safe_text.h"

#include <cstdint>
#include <cstdio>

namespace ncclscope {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at the start of `s`, or 0 when it starts with an invalid one, in
// which case `*bad` is the length of its maximal subpart (at least 1) to replace with one U+FFFD.
size_t ValidSequenceLength(std::string_view s, size_t* bad) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  *bad = 1;
  if (b0 < 0x80) return 1;
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte (RFC 3629's table)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0, C1 or F5..FF: never a start
  }
  for (size_t i = 1; i <= need; ++i) {
    if (i >= s.size()) return 0;
    const auto b = static_cast<uint8_t>(s[i]);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return 0;
    *bad = i + 1;  // the prefix so far is a maximal subpart if the next byte breaks it
  }
  return need + 1;
}

// True for a valid sequence that encodes a control character: C0, DEL, or C1 (U+0080..U+009F, C2 80..C2 9F).
bool IsControl(std::string_view seq) {
  const auto b0 = static_cast<uint8_t>(seq[0]);
  if (seq.size() == 1) return b0 < 0x20 || b0 == 0x7F;
  return seq.size() == 2 && b0 == 0xC2 && static_cast<uint8_t>(seq[1]) <= 0x9F;
}

}  // namespace

std::string SafeLabelValue(std::string_view raw, size_t max_bytes, SafeTextReport* report) {
  SafeTextReport local;
  SafeTextReport& r = report != nullptr ? *report : local;
  r = SafeTextReport{};
  std::string out;
  out.reserve(raw.size() < max_bytes ? raw.size() : max_bytes);
  size_t i = 0;
  while (i < raw.size()) {
    size_t bad = 1;
    const size_t n = ValidSequenceLength(raw.substr(i), &bad);
    std::string_view piece;
    if (n == 0) {
      piece = kReplacement;
      i += bad;
      ++r.replaced;
    } else if (IsControl(raw.substr(i, n))) {
      piece = kReplacement;
      i += n;
      ++r.replaced;
    } else {
      piece = raw.substr(i, n);
      i += n;
    }
    // Whole characters only: the cut never leaves half a sequence (which would be invalid again).
    if (out.size() + piece.size() > max_bytes) {
      r.cut = true;
      break;
    }
    out.append(piece);
  }
  return out;
}

size_t EscapeControlBytes(std::string_view text, char* out, size_t cap) {
  size_t len = 0;
  for (const char c : text) {
    const auto b = static_cast<uint8_t>(c);
    char esc[5] = {c, '\0'};
    int n = 1;
    if (b < 0x20 || b == 0x7F) {
      const char* named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : nullptr;
      n = named != nullptr ? std::snprintf(esc, sizeof(esc), "%s", named)
                           : std::snprintf(esc, sizeof(esc), "\\x%02x", b);
    }
    if (len + static_cast<size_t>(n) + 1 > cap) break;
    for (int k = 0; k < n; ++k) out[len++] = esc[k];
  }
  out[len] = '\0';
  return len;
}

}  // namespace ncclscope
