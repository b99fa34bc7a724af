// Parsing NCCL's func/datatype/algo/proto strings on the event path without the strcmp chains.
//
// NCCL passes static literals: each pointer's parse is remembered in a direct-mapped cache (pointer, "trusted"
// bit and value in one atomic word, so a hit is always consistent). A hit on a pointer into a read-only
// segment of an object already loaded when first asked (NCCL's literals) is trusted as is: those bytes cannot
// change while the object stays loaded. Any other pointer (a caller's buffer that may be reused for another
// string) is confirmed against the cached value's own name on every hit.
#ifndef NCCLSCOPE_PROFILER_LITERAL_CACHE_H_
#define NCCLSCOPE_PROFILER_LITERAL_CACHE_H_

#include <atomic>
#include <cstdint>
#include <cstring>

namespace ncclscope::profiler {

// Whether p lies in a read-only PT_LOAD segment of an object loaded at this function's first call.
bool InLoadedReadOnlySegment(const void* p);

namespace literal_cache_internal {

// Per (T, Parse, Name): pointer << 9 | trusted bit | value, direct-mapped on the pointer.
template <class T, T (*Parse)(const char*), const char* (*Name)(T)>
inline std::atomic<uint64_t> cache[64];

// A miss (or an untrusted pointer): parse, and remember the pointer if its string names what it parsed to.
template <class T, T (*Parse)(const char*), const char* (*Name)(T)>
[[gnu::noinline]] T ParseAndRemember(const char* s) {
  if (s == nullptr) return Parse(s);
  const auto p = reinterpret_cast<uint64_t>(s);
  std::atomic<uint64_t>& e = cache<T, Parse, Name>[(p >> 3) & 63];
  const uint64_t v = e.load(std::memory_order_relaxed);
  const auto cached = static_cast<T>(v & 0xff);
  if ((v >> 9) == p && std::strcmp(s, Name(cached)) == 0) return cached;
  T parsed = Parse(s);
  if (p < (1ull << 55) && std::strcmp(s, Name(parsed)) == 0) {
    const uint64_t trusted = InLoadedReadOnlySegment(s) ? 0x100 : 0;
    e.store((p << 9) | trusted | static_cast<uint64_t>(parsed), std::memory_order_relaxed);
  }
  return parsed;
}

}  // namespace literal_cache_internal

// The trusted hit is inline (a load and a compare, NCCL's every call after the first); the rest is out of line.
template <class T, T (*Parse)(const char*), const char* (*Name)(T)>
inline T CachedParse(const char* s) {
  const auto p = reinterpret_cast<uint64_t>(s);
  const uint64_t v = literal_cache_internal::cache<T, Parse, Name>[(p >> 3) & 63].load(std::memory_order_relaxed);
  if ((v >> 8) == ((p << 1) | 1)) return static_cast<T>(v & 0xff);  // this pointer, trusted
  return literal_cache_internal::ParseAndRemember<T, Parse, Name>(s);
}

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_LITERAL_CACHE_H_
