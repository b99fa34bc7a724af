// One gzip member (RFC 1952) per call, appended to a buffer: a dump is several members concatenated, so a
// reader can inflate the first (the summary) and stop, and `zcat` still prints them all; the metrics endpoint
// sends one member as a gzip-encoded response. Thread-safe (no shared state).
#ifndef NCCLSCOPE_COMMON_GZIP_MEMBER_H_
#define NCCLSCOPE_COMMON_GZIP_MEMBER_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace ncclscope {

// Compresses `text` into one complete gzip member (header, deflate stream, CRC-32 and size) at the end of *out.
Status AppendGzipMember(std::string_view text, std::string* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_GZIP_MEMBER_H_
