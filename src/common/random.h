// Random numbers nobody outside the process can predict (file names, handshake ids, cookies).
// getrandom() per call: these are drawn at set-up time, never on a data path. Thread-safe.
#ifndef NCCLSCOPE_COMMON_RANDOM_H_
#define NCCLSCOPE_COMMON_RANDOM_H_

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "common/hex.h"

namespace ncclscope {

// Never 0 (callers use 0 as "none").
inline uint64_t RandomU64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
    // No entropy yet (early boot): still unique per process and call, though guessable.
    static std::atomic<uint64_t> counter{0};
    v = (static_cast<uint64_t>(getpid()) << 32) ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull) ^
        reinterpret_cast<uintptr_t>(&v);
  }
  return v != 0 ? v : 1;
}

// 64 random bits as 16 hex digits.
inline std::string RandomHex() { return Hex16(RandomU64()); }

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_RANDOM_H_
