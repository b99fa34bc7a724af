// Fixed-width hexadecimal, the one spelling of communicator hashes and ids in file names, dumps and labels.
#ifndef NCCLSCOPE_COMMON_HEX_H_
#define NCCLSCOPE_COMMON_HEX_H_

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ncclscope {

// "00000000deadbeef": 16 lower-case digits, no prefix (file names).
inline std::string Hex16(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

// "0x00000000deadbeef" (labels, traces, logs).
inline std::string Hex0x16(uint64_t v) { return "0x" + Hex16(v); }

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_HEX_H_
