// The output janitor (output_janitor.cc): a runtime Service that keeps this process's output folders marked
// alive and removes the stale outputs of owners that are gone. Registered by InstallPluginServices.
#ifndef NCCLSCOPE_COMMON_OUTPUT_JANITOR_H_
#define NCCLSCOPE_COMMON_OUTPUT_JANITOR_H_

#include "common/runtime.h"

namespace ncclscope {

// The process's one janitor (a -z nodelete global, never destroyed).
Service& OutputJanitorService();

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_OUTPUT_JANITOR_H_
