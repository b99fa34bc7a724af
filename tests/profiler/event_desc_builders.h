// Event descriptions the profiler tests feed to StartEvent, built in one place so that each test states only
// what it varies.
#ifndef NCCLSCOPE_TESTS_PROFILER_EVENT_DESC_BUILDERS_H_
#define NCCLSCOPE_TESTS_PROFILER_EVENT_DESC_BUILDERS_H_

#include <cstddef>
#include <cstdint>

#include "profiler/event.h"

namespace ncclscope::profiler {

// A Coll event of `func`, seq `seq`, `count` elements of `datatype`, announcing `nch` channels.
inline EventDesc Coll(uint64_t seq, const char* func, size_t count, int nch, const char* datatype = "ncclFloat32") {
  EventDesc c;
  c.type = EventType::kColl;
  c.has_seq = true;
  c.seq = seq;
  c.func = func;
  c.datatype = datatype;
  c.count = count;
  c.nchannels = nch;
  return c;
}

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_TESTS_PROFILER_EVENT_DESC_BUILDERS_H_
