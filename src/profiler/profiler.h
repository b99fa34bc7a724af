// The version-neutral profiler: what every ncclProfiler_vN table calls after translating its
// arguments. Contexts handed to NCCL are entries of a fixed process-wide table, so any context
// pointer can be validated with a range check before it is used (PXN hands us foreign ones).
// All functions are thread-safe; StartEvent/StopEvent/RecordEventState take no lock and allocate
// nothing. Init/Finalize take the registry lock and acquire/release the runtime.
#ifndef NCCLSCOPE_PROFILER_PROFILER_H_
#define NCCLSCOPE_PROFILER_PROFILER_H_

#include <cstdint>

#include "common/status.h"
#include "ncclscope/abi/common.h"
#include "profiler/event.h"

namespace ncclscope::profiler {

struct InitArgs {
  uint64_t comm_hash = 0;
  const char* comm_name = nullptr;
  int nnodes = 1;
  int nranks = 1;
  int rank = 0;
  const char* abi = "neutral";
  ncclscope_logger_t logger = nullptr;
  int* activation_mask = nullptr;  // NCCL's process-wide mask; we write our mask into it
  int allowed_mask = ~0;           // bits the calling table cannot deliver (or that mean else there) stay off
};

// Creates the communicator's context and registers it; *context receives the handle for NCCL.
Status Init(const InitArgs& args, void** context);
// Returns NCCL's handle for the new event, or nullptr (dropped and counted, or not tracked).
void* StartEvent(void* context, const EventDesc& d);
// StartEvent for a KernelCh, the most frequent event (one per channel per operation), without building an
// EventDesc: its parent handle and GPU start timer (0: none).
void* StartKernelChannel(void* context, void* parent, uint64_t ptimer);
// StartEvent for a Coll or P2p, one per operation, from its OpDesc.
void* StartOperation(void* context, const OpDesc& d);
// Profiler v1-v3: the communicator named by a Coll or P2p event (init named none); a no-op once known.
void LearnCommIdentity(void* context, uint64_t comm_hash, const char* name, int rank);
void StopEvent(void* handle);
void RecordEventState(void* handle, const StateUpdate& u);
// Writes the final dump, unregisters, releases the runtime (the last one joins the stall watch).
void Finalize(void* context);

// The activation mask in effect: NCCLSCOPE_EVENT_MASK, or the default for this process's NCCL when it is -1.
int EffectiveEventMask();
// NCCL_VERSION_CODE of the NCCL in this process (ncclGetVersion), 0 when there is none.
int NcclVersionCode();

// Memory of one communicator's context at the current settings (for benchmarks and docs).
size_t ContextMemoryBytes(void* context);

// Number of contexts finalized while NCCL still held some of their event handles (kept, not freed).
uint64_t RetainedContexts();

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_PROFILER_H_
