// Final totals of destroyed communicators, kept so that the last textfile write (at the last finalize, when no
// communicator is live any more) and later scrapes still show what each communicator did. Filled by a
// finalize dump hook; bounded to the most recent kMaxRetiredComms so that a job creating communicators without
// end keeps a bounded series count. Thread-safe.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_RETIRED_COMMS_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_RETIRED_COMMS_H_

#include <vector>

#include "core/registry.h"
#include "core/snapshot.h"

namespace ncclscope {

inline constexpr size_t kMaxRetiredComms = 64;

// The dump hook that fills the list (at finalize only); installed by InstallPluginServices (src/plugin).
void KeepFinalTotals(const CommSnapshot& snap, DumpReason reason);

// The retired communicators, oldest first: totals only (no flight recorder, nothing in flight).
std::vector<CommSnapshot> RetiredComms();

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_RETIRED_COMMS_H_
