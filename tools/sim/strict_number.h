// Strict number parsing for ncclscope-sim's command line and environment: the whole string must be the number
// (no sign other than a leading '-', no spaces, no trailing characters), and out-of-range values are errors,
// never wrapped or clamped. Header-only: the sim links nothing of src/ (common/params.cc has the library's own
// parser, which the sim must not link), and plugin_loader.cc's unit test compiles sim sources on their own.
#ifndef NCCLSCOPE_TOOLS_SIM_STRICT_NUMBER_H_
#define NCCLSCOPE_TOOLS_SIM_STRICT_NUMBER_H_

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace ncclscope::sim {

// A decimal integer in [min, max]. On failure returns false and sets *why (e.g. "not an integer").
inline bool ParseInteger(std::string_view s, long long min, long long max, long long* out, std::string* why) {
  if (s.empty()) {
    *why = "empty";
    return false;
  }
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec == std::errc::result_out_of_range) {
    *why = "out of range (want " + std::to_string(min) + ".." + std::to_string(max) + ")";
    return false;
  }
  if (ec != std::errc() || end != s.data() + s.size()) {
    *why = "not an integer";
    return false;
  }
  if (v < min || v > max) {
    *why = v < 0 && min >= 0 ? "must not be negative"
                             : "out of range (want " + std::to_string(min) + ".." + std::to_string(max) + ")";
    return false;
  }
  *out = v;
  return true;
}

template <typename T>
bool ParseInteger(std::string_view s, long long min, long long max, T* out, std::string* why) {
  static_assert(std::is_integral_v<T>);
  long long v = 0;
  if (!ParseInteger(s, min, max, &v, why)) return false;
  *out = static_cast<T>(v);
  return true;
}

// A finite decimal number in [min, max] (e.g. "2", "0.5", "1e2"; not "inf", "nan" or hex).
inline bool ParseDecimal(std::string_view s, double min, double max, double* out, std::string* why) {
  if (s.empty()) {
    *why = "empty";
    return false;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    *why = ec == std::errc::result_out_of_range ? "out of range" : "not a number";
    return false;
  }
  if (v < min || v > max) {
    char range[96];
    std::snprintf(range, sizeof(range), "out of range (want %g..%g)", min, max);
    *why = v < 0 && min >= 0 ? "must not be negative" : range;
    return false;
  }
  *out = v;
  return true;
}

// A byte count: decimal digits, then optionally K, M or G (any case, powers of 1024), optionally 'i', optionally
// 'B' or 'b': 8, 8B, 256K, 4M, 4MiB, 1GB.
inline bool ParseByteSize(std::string_view s, size_t* out, std::string* why) {
  if (s.empty()) {
    *why = "empty";
    return false;
  }
  unsigned long long v = 0;
  const char* p = s.data();
  const char* last = s.data() + s.size();
  if (*p == '-') {
    *why = "must not be negative";
    return false;
  }
  auto [end, ec] = std::from_chars(p, last, v, 10);
  if (ec == std::errc::result_out_of_range) {
    *why = "out of range";
    return false;
  }
  if (ec != std::errc()) {
    *why = "not a byte count (want e.g. 8, 64K, 4M, 1G)";
    return false;
  }
  unsigned long long mult = 1;
  if (end != last) {
    switch (*end) {
      case 'k': case 'K': mult = 1ull << 10; ++end; break;
      case 'm': case 'M': mult = 1ull << 20; ++end; break;
      case 'g': case 'G': mult = 1ull << 30; ++end; break;
      default: break;
    }
    if (mult != 1 && end != last && *end == 'i') ++end;
    if (end != last && (*end == 'B' || *end == 'b')) ++end;
  }
  if (end != last) {
    *why = "not a byte count (want e.g. 8, 64K, 4M, 1G)";
    return false;
  }
  if (v > std::numeric_limits<size_t>::max() / mult) {
    *why = "out of range";
    return false;
  }
  *out = static_cast<size_t>(v * mult);
  return true;
}

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_STRICT_NUMBER_H_
