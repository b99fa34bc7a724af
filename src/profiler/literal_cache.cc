#include "profiler/literal_cache.h"

#include <elf.h>
#include <link.h>

namespace ncclscope::profiler {
namespace {

// The read-only segments of the objects loaded at the first call; later ones are simply not trusted.
struct ReadOnlySegments {
  static constexpr int kMax = 256;
  uintptr_t lo[kMax], hi[kMax];
  int n = 0;
  ReadOnlySegments() {
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* arg) {
          auto* self = static_cast<ReadOnlySegments*>(arg);
          for (int i = 0; i < info->dlpi_phnum && self->n < kMax; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) != 0) continue;
            self->lo[self->n] = info->dlpi_addr + ph.p_vaddr;
            self->hi[self->n] = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
            ++self->n;
          }
          return 0;
        },
        this);
  }
};

}  // namespace

bool InLoadedReadOnlySegment(const void* p) {
  static const ReadOnlySegments segments;  // no heap: the event path's allocation test counts every new
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (int i = 0; i < segments.n; ++i) {
    if (a >= segments.lo[i] && a < segments.hi[i]) return true;
  }
  return false;
}

}  // namespace ncclscope::profiler
