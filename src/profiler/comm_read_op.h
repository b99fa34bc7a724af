// CommContext::ReadOp, inline: the event path (Complete) and snapshots both read operations through it, and
// inlined into Complete the compiler fills the record once instead of clearing it first.
#ifndef NCCLSCOPE_PROFILER_COMM_READ_OP_H_
#define NCCLSCOPE_PROFILER_COMM_READ_OP_H_

#include <algorithm>

#include "profiler/comm_context.h"

namespace ncclscope::profiler {

__attribute__((always_inline)) inline OpRecord CommContext::ReadOp(const Op& op, uint64_t now_ns) const {
  OpRecord r;
  r.seq = op.seq.Get();
  r.arrival = op.arrival.Get();
  r.count = op.count.Get();
  r.bytes = OpBytes(static_cast<Func>(op.func.Get()), r.count, op.type_size.Get(), info_.nranks);
  r.start_ns = op.start_ns.Get();
  r.enqueued_ns = op.enqueued_ns.Get();
  r.end_ns = op.end_ns.Get();
  r.gpu_start_ns = op.gpu_start.Get();
  r.gpu_end_ns = op.GpuEnd();
  int64_t off = gpu_offset_.load(std::memory_order_relaxed);
  if (r.gpu_start_ns != 0 && off != INT64_MAX) r.kernel_start_host_ns = r.gpu_start_ns + off;
  r.peer_or_root = op.peer_or_root.Get();
  r.channels = op.channels.Get();
  r.kernel_channels_done = op.kernel_extra_done.Get();
  if (op.kernel_mode.Get()) {  // announced channels done = votes cast, less the Coll stop's own vote
    const int32_t cast = Votes(op) - op.remaining.load(std::memory_order_relaxed) - (r.enqueued_ns != 0 ? 1 : 0);
    r.kernel_channels_done += static_cast<uint16_t>(std::clamp<int32_t>(cast, 0, op.channels.Get()));
  }
  r.proxy_ops_started = op.proxy_ops_started.Get();
  r.proxy_ops_done = op.proxy_ops_done.Get();
  r.steps_total = op.steps_total.Get();
  r.steps_done = op.steps_done.Get();
  r.kind = static_cast<OpKind>(op.kind.Get());
  r.func = static_cast<Func>(op.func.Get());
  r.algo = static_cast<Algo>(op.algo.Get());
  r.proto = static_cast<Proto>(op.proto.Get());
  r.state = static_cast<OpState>(op.op_state.Get());
  r.type_size = op.type_size.Get();
  r.is_send = op.is_send.Get();
  r.symmetric = op.symmetric.Get() != 0;
  r.user_tag = op.user_tag.Get();
  for (int i = 0; i < kKernelPhases; ++i) r.phase_ns[i] = op.phase_ns[i].Get();
  if (r.state != OpState::kCompleted && r.start_ns != 0 && now_ns > r.start_ns) r.duration_ns = now_ns - r.start_ns;
  return r;
}

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_COMM_READ_OP_H_
