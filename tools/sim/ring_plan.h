// The ring algorithms as NCCL's proxy sees them: for one operation, per channel, the list of network send steps
// (which bytes, and which receive each forwards) and receive steps (where the bytes land, reduce or copy),
// chunked into step-sized slices. Pure function of the op; called on the thread that enqueues the op.
#ifndef NCCLSCOPE_TOOLS_SIM_RING_PLAN_H_
#define NCCLSCOPE_TOOLS_SIM_RING_PLAN_H_

#include <cstddef>

namespace ncclscope::sim {

struct OpState;
void Plan(OpState* op, int rank, int n, int channels, size_t step);

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_RING_PLAN_H_
