// Text from outside the process (environment variables, host names) made safe for where ncclscope writes it.
// An identity label lands in the exposition, the node_exporter textfile, the file_sd target file and every
// dump: one invalid byte in it makes promtool, Prometheus and node_exporter refuse the whole exposition, so it is
// made valid once, where it is read, and every output then carries the same value. Pure functions, thread-safe.
#ifndef NCCLSCOPE_COMMON_SAFE_TEXT_H_
#define NCCLSCOPE_COMMON_SAFE_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace ncclscope {

// The longest identity label value, in bytes. A label value is repeated on every series that carries it: a
// 100 KB job id made a 6.7 MB exposition per scrape. 256 holds any launcher's job id and host name.
inline constexpr size_t kMaxIdentityValueBytes = 256;

// What SafeLabelValue changed, for the one warning of the caller.
struct SafeTextReport {
  size_t replaced = 0;  // invalid UTF-8 sequences and control characters, each now one U+FFFD
  bool cut = false;     // the value was longer than the limit
};

// `raw` as valid UTF-8 without control characters, at most `max_bytes` long: each maximal invalid UTF-8
// sequence (the Unicode "substitution of maximal subparts" rule, as WHATWG's decoder and Python's
// errors="replace" apply it) and each control character (C0, DEL, C1) becomes U+FFFD; a longer result is cut
// at the last whole character that fits. Valid printable text comes back unchanged.
std::string SafeLabelValue(std::string_view raw, size_t max_bytes = kMaxIdentityValueBytes,
                           SafeTextReport* report = nullptr);

// `text` for one log line: every control byte (newline, carriage return, tab, escape, DEL, ...) is written
// as a C escape (\n, \r, \t, \xNN), so a value read from outside can neither split NCCL's log line nor
// drive the terminal. Other bytes are copied. Writes at most `cap` bytes including the final NUL (cap > 0) and
// never cuts an escape in half; returns the length written.
size_t EscapeControlBytes(std::string_view text, char* out, size_t cap);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_SAFE_TEXT_H_
