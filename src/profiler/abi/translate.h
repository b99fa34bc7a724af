// Shared pieces of the ncclProfiler_vN adapters (only src/profiler/abi includes this): the v5 view
// used by v5 and v6, the state-argument translation (identical in v4-v6) and the common entry points.
#ifndef NCCLSCOPE_PROFILER_ABI_TRANSLATE_H_
#define NCCLSCOPE_PROFILER_ABI_TRANSLATE_H_

#include "ncclscope/abi/profiler.h"
#include "profiler/event.h"

namespace ncclscope::profiler::abi {

void TranslateV5(const ncclscope_profiler_descr_v5_t* e, EventDesc* d);
StateUpdate TranslateState(ncclscope_profiler_state_t state, const ncclscope_profiler_state_args_t* args);
ncclscope_result_t InitV5V6(const char* abi, void** context, uint64_t commId, int* eActivationMask,
                            const char* commName, int nNodes, int nranks, int rank, ncclscope_logger_t logfn);
ncclscope_result_t StopEventAbi(void* eHandle);
ncclscope_result_t RecordEventStateAbi(void* eHandle, ncclscope_profiler_state_t eState,
                                       ncclscope_profiler_state_args_t* eStateArgs);
ncclscope_result_t FinalizeAbi(void* context);

}  // namespace ncclscope::profiler::abi

#endif  // NCCLSCOPE_PROFILER_ABI_TRANSLATE_H_
