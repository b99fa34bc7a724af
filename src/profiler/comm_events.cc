// The event path: NCCL's startEvent / stopEvent / recordEventState on one communicator, and the completion
// of its operations into the aggregates and the flight recorder. Lock-free; see comm_context.h.
#include "profiler/comm_context.h"

#include <algorithm>

#include "common/clock.h"
#include "profiler/comm_read_op.h"
#include "profiler/literal_cache.h"

namespace ncclscope::profiler {
namespace {

bool IsOpType(EventType t) { return t == EventType::kColl || t == EventType::kP2p; }

// A value unique to each live thread, read without a call: the thread pointer (%fs:0 on x86-64,
// TPIDR_EL0 on AArch64); elsewhere the address of a thread_local. A thread that exits may leave its value
// to a later one; Op::kernel_owner only needs that no two live threads share it.
#if defined(__has_builtin) && (defined(__x86_64__) || defined(__aarch64__))
#if __has_builtin(__builtin_thread_pointer)
#define NCCLSCOPE_THREAD_POINTER() reinterpret_cast<uintptr_t>(__builtin_thread_pointer())
#endif
#endif
inline uintptr_t ThreadToken() {
#ifdef NCCLSCOPE_THREAD_POINTER
  return NCCLSCOPE_THREAD_POINTER();
#else
  static thread_local char anchor;
  return reinterpret_cast<uintptr_t>(&anchor);
#endif
}

// Whether this thread owns the lane `owner` names (see LanedCounter): it does if it claimed it first.
bool OwnsLane(std::atomic<uintptr_t>* owner) {
  const uintptr_t me = ThreadToken();
  uintptr_t cur = owner->load(std::memory_order_relaxed);
  return cur == me || (cur == 0 && owner->compare_exchange_strong(cur, me, std::memory_order_relaxed));
}

}  // namespace

void* CommContext::Start(const EventDesc& d) {
  // KernelCh counts its events itself, mostly in bulk.
  if (d.type == EventType::kKernelCh) return StartKernelCh(d.parent, d.has_ptimer ? d.ptimer : 0);
  if (IsOpType(d.type)) return StartOperation(OpDesc::Of(d));  // counts its events on the start lane
  CountEvent(d.type);
  switch (d.type) {
    case EventType::kKernelPhase:
      return StartKernelPhase(d);
    case EventType::kProxyOp:
      if (d.parent != nullptr && !events_pool_.Contains(HandleSlot(d.parent))) {
        CountDrop(Drop::kForeignParent);  // never dereference a pointer we did not hand out
        return StartChild(d, nullptr);
      }
      return StartChild(d, d.parent != nullptr ? AcquireParent(d.parent) : nullptr);
    case EventType::kProxyStep:
      return StartChild(d, d.parent != nullptr ? AcquireParent(d.parent) : nullptr);
    case EventType::kNetPlugin:
      return StartNetPlugin(d, d.parent != nullptr ? AcquireParent(d.parent) : nullptr);
    case EventType::kUnknown:
    case EventType::kCount:
      CountDrop(Drop::kUnknownType);
      return nullptr;
    default:
      return StartChild(d, nullptr);  // Group, API, ProxyCtrl, CE: tracked only to be stopped safely
  }
}

void* CommContext::StartOperation(const OpDesc& d) {
  const bool lane = OwnsLane(&start_lane_);
  op_events_[d.type == EventType::kColl ? 0 : 1].Add(1, lane);
  Op* op = ops_pool_.Allocate();
  if (op == nullptr) {
    CountDrop(Drop::kOpPoolFull);
    return nullptr;
  }
  // The operation's event slot is the one reserved for its record (pools.h): claiming the record claimed it.
  EventSlot* s = &events_pool_.at(ops_pool_.IndexOf(op));
  s->state.store(1, std::memory_order_relaxed);
  const bool is_coll = d.type == EventType::kColl;
  const OpKind kind = is_coll ? OpKind::kColl : OpKind::kP2p;
  const Func func = CachedParse<Func, ParseFunc, FuncName>(d.func);
  const int type_size = DatatypeSizeOf(CachedParse<uint8_t, ParseDatatype, DatatypeName>(d.datatype));
  const bool is_send = !is_coll && func == Func::kSend;
  uint64_t seq;
  if (is_coll) {
    seq = d.seq;
    last_seq_[0][static_cast<int>(func)].Max(seq, lane);
  } else {
    int peer = d.root_or_peer;
    size_t index = (peer >= 0 && peer < info_.nranks) ? 2 * static_cast<size_t>(peer) + is_send
                                                      : 2 * static_cast<size_t>(info_.nranks) + is_send;
    seq = p2p_seq_[index].fetch_add(1, std::memory_order_relaxed) + 1;
    last_seq_[1][static_cast<int>(func)].Max(seq, lane);
  }
  const int nch = d.nchannels > 0 ? d.nchannels : 0;
  const bool kernel_mode = (cfg_.event_mask & kMaskKernelCh) != 0 && nch > 0;
  op->seq.Set(seq);
  op->arrival.Set(arrival_.fetch_add(1, std::memory_order_relaxed) + 1);
  op->count.Set(d.count);
  op->start_ns.Set(MonotonicNs());
  op->enqueued_ns.Set(0);
  op->end_ns.Set(0);
  op->gpu_start.Set(0);
  op->gpu_end_owner.Set(0);
  op->gpu_end_shared.Set(0);
  op->kernel_owner.Set(0);
  op->host_kernel_start.Set(0);
  op->peer_or_root.Set(d.root_or_peer);
  op->steps_total.Set(0);
  op->steps_done.Set(0);
  op->channels.Set(static_cast<uint16_t>(nch));
  op->kernel_started.store(0, std::memory_order_relaxed);
  op->kernel_extra_done.Set(0);
  op->proxy_ops_started.Set(0);
  op->proxy_ops_done.Set(0);
  op->proxy_send_started.Set(0);
  op->proxy_send_done.Set(0);
  op->proxy_peer[0].Set(-1);
  op->proxy_peer[1].Set(-1);
  op->kind.Set(static_cast<uint8_t>(kind));
  op->func.Set(static_cast<uint8_t>(func));
  op->algo.Set(static_cast<uint8_t>(is_coll ? CachedParse<Algo, ParseAlgo, AlgoName>(d.algo) : Algo::kNone));
  op->proto.Set(static_cast<uint8_t>(is_coll ? CachedParse<Proto, ParseProto, ProtoName>(d.proto) : Proto::kNone));
  op->type_size.Set(static_cast<uint8_t>(type_size));
  op->is_send.Set(is_send);
  op->op_state.Set(static_cast<uint8_t>(OpState::kEnqueued));
  op->kernel_mode.Set(kernel_mode);
  op->symmetric.Set(d.symmetric);
  op->user_tag.Set(d.user_tag);
  for (auto& p : op->phase_ns) p.Set(0);
  const int votes = Votes(*op);
  op->remaining.store(votes, std::memory_order_relaxed);
  op->state.store(Op::kInFlight, std::memory_order_release);

  s->type = d.type;
  s->is_send = is_send;
  s->net_dir = 0;
  s->net_dev = kNoNetDev;
  s->parent = nullptr;  // CollApi/P2pApi/Group parents are not needed once the op is described
  s->op = op;
  s->owner = this;
  s->start_ns = 0;
  s->refs.store(votes, std::memory_order_release);
  return EncodeHandle(s, s->gen.load(std::memory_order_relaxed));
}

// One more reference on a slot that still has one (a slot whose count reached 0 is being freed).
static bool TryRef(EventSlot* p) {
  int32_t r = p->refs.load(std::memory_order_relaxed);
  while (r > 0 && !p->refs.compare_exchange_weak(r, r + 1, std::memory_order_acq_rel)) {
  }
  return r > 0;
}

EventSlot* CommContext::AcquireParent(void* parent_handle) {
  EventSlot* p = HandleSlot(parent_handle);
  if (HandleIsKernel(parent_handle) || p->gen.load(std::memory_order_acquire) % 16 != HandleGen(parent_handle)) {
    CountDrop(Drop::kStaleParent);
    return nullptr;
  }
  if (!TryRef(p)) {
    CountDrop(Drop::kStaleParent);
    return nullptr;
  }
  return p;
}

void* CommContext::StartChild(const EventDesc& d, EventSlot* parent) {
  EventSlot* s = events_pool_.Allocate();
  if (s == nullptr) {
    if (parent != nullptr) Release(parent);
    CountDrop(Drop::kEventPoolFull);
    return nullptr;
  }
  Op* op = parent != nullptr ? parent->op : nullptr;
  s->type = d.type;
  s->is_send = d.is_send;
  s->net_dir = d.type == EventType::kProxyOp ? (d.is_send ? kNetDirSend : kNetDirRecv)
                                             : (parent != nullptr ? parent->net_dir : 0);
  s->net_dev = kNoNetDev;
  s->parent = parent;
  s->op = op;
  s->owner = this;
  s->start_ns = 0;
  s->net_bytes = 0;
  s->net_qps.store(0, std::memory_order_relaxed);
  if (op != nullptr && d.type == EventType::kProxyOp) {
    op->proxy_ops_started.Add(1);
    if (d.is_send) op->proxy_send_started.Add(1);
    op->proxy_peer[d.is_send ? 0 : 1].Set(d.peer);
    op->steps_total.Add(static_cast<uint32_t>(d.nsteps > 0 ? d.nsteps : 0));
  }
  s->refs.store(1, std::memory_order_release);
  return EncodeHandle(s, s->gen.load(std::memory_order_relaxed));
}

// The live op slot behind `handle`, which must be an op's (kernel-tagged or not: `kernel` says which).
[[gnu::always_inline]] static inline EventSlot* LiveOpSlot(const FixedPool<EventSlot>& pool, void* handle, bool kernel,
                                                        Drop* why) {
  if (handle == nullptr) {
    *why = Drop::kStaleParent;
    return nullptr;
  }
  EventSlot* p = HandleSlot(handle);
  if (!pool.Contains(p)) {  // PXN: a pointer of another process; never dereference it
    *why = Drop::kForeignParent;
    return nullptr;
  }
  if (HandleIsKernel(handle) != kernel || p->state.load(std::memory_order_acquire) == 0 ||
      p->gen.load(std::memory_order_acquire) % 16 != HandleGen(handle) || !IsOpType(p->type) || p->op == nullptr) {
    *why = Drop::kStaleParent;
    return nullptr;
  }
  return p;
}

// KernelCh events are counted in events_ here only when they are not an announced channel of an operation
// that is still in flight; those are counted in bulk from kernel_started when the operation completes (and
// while it is in flight by Fill), which saves a locked add on a shared counter per channel.
void* CommContext::StartKernelCh(void* parent, uint64_t ptimer) {
  Drop why;
  EventSlot* p = LiveOpSlot(events_pool_, parent, /*kernel=*/false, &why);
  if (p == nullptr) {
    CountEvent(EventType::kKernelCh);
    CountDrop(why);
    return nullptr;
  }
  Op* op = p->op;
  // Relaxed: the RMW's atomicity alone decides which side of Complete's seal this start falls on.
  const uint16_t seen = op->kernel_started.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint16_t k = seen & ~Op::kKernelSealed;
  bool own_ref = !op->kernel_mode.Get() || k > op->channels.Get();
  if (own_ref || (seen & Op::kKernelSealed) != 0) CountEvent(EventType::kKernelCh);
  if (own_ref && AcquireParent(parent) == nullptr) return nullptr;
  if (k == 1) {
    op->kernel_owner.Set(ThreadToken());
    op->op_state.Max(static_cast<uint8_t>(OpState::kKernelStarted));
    // A host clock read costs 25-130 ns in a VM (kvm-clock fences the pipeline): with a GPU timer and a
    // calibrated offset the host time is derived, and the GPU-to-host offset is re-sampled every 16th op.
    const bool has_gpu = ptimer != 0;
    const int64_t cur = gpu_offset_.load(std::memory_order_relaxed);
    if (has_gpu && cur != INT64_MAX && op->arrival.Get() % 16 != 0) {
      op->host_kernel_start.Set(ptimer + static_cast<uint64_t>(cur));
    } else {
      const uint64_t now = MonotonicNs();
      op->host_kernel_start.Set(now);
      if (has_gpu) CalibrateGpuOffset(static_cast<int64_t>(now - ptimer));
    }
  }
  if (ptimer != 0) op->gpu_start.Min(ptimer);
  return EncodeHandle(p, HandleGen(parent), /*kernel=*/true, own_ref);
}

// KernelPhase (v7): NCCL starts it under a live KernelCh and stops it just before that KernelCh stops, so
// the op is alive throughout; the child slot holds one reference on the op's slot all the same.
void* CommContext::StartKernelPhase(const EventDesc& d) {
  Drop why;
  EventSlot* p = LiveOpSlot(events_pool_, d.parent, /*kernel=*/true, &why);
  if (p == nullptr || d.phase < 0 || d.phase >= kKernelPhases) {
    CountDrop(p == nullptr ? why : Drop::kUnknownType);
    return nullptr;
  }
  if (!TryRef(p)) {
    CountDrop(Drop::kStaleParent);
    return nullptr;
  }
  EventSlot* s = events_pool_.Allocate();
  if (s == nullptr) {
    Release(p);
    CountDrop(Drop::kEventPoolFull);
    return nullptr;
  }
  s->type = EventType::kKernelPhase;
  s->is_send = false;
  s->net_dir = 0;
  s->net_dev = static_cast<uint8_t>(d.phase);
  s->parent = p;
  s->op = p->op;
  s->owner = this;
  s->start_ns = d.has_ptimer ? d.ptimer : 0;
  s->net_bytes = 0;
  s->refs.store(1, std::memory_order_release);
  return EncodeHandle(s, s->gen.load(std::memory_order_relaxed));
}

void CommContext::CountTag(uint64_t tag, uint64_t bytes) {
  for (TagCell& c : tags_) {
    uint64_t cur = c.tag.load(std::memory_order_acquire);
    if (cur == 0 && c.tag.compare_exchange_strong(cur, tag, std::memory_order_acq_rel)) cur = tag;
    if (cur == tag) {
      c.ops.Add(1);
      c.bytes.Add(bytes);
      return;
    }
  }
  tags_other_ops_.Add(1);
  tags_other_bytes_.Add(bytes);
}

// The smallest host-minus-GPU time seen: the GPU timer's epoch on the host clock, give or take the launch delay.
void CommContext::CalibrateGpuOffset(int64_t sample) {
  int64_t cur = gpu_offset_.load(std::memory_order_relaxed);
  while (sample < cur && !gpu_offset_.compare_exchange_weak(cur, sample, std::memory_order_relaxed)) {
  }
}

void CommContext::Release(EventSlot* s, int32_t n) {
  if (s->refs.fetch_sub(n, std::memory_order_acq_rel) != n) return;
  // Last reference: this thread owns the slot until Free publishes it as free.
  EventSlot* parent = s->parent;
  CommContext* owner = s->owner;
  Op* op = IsOpType(s->type) ? s->op : nullptr;
  s->parent = nullptr;
  s->op = nullptr;
  s->gen.store(s->gen.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  owner->events_pool_.Free(s);
  // An operation's slot is its record's (see StartOperation): freeing the record last hands both to its next claimer.
  // Nothing of `owner` is touched after that: TryRetire may free the context once the record is free.
  if (op != nullptr) owner->ops_pool_.Free(op);
  if (parent != nullptr) Release(parent);
}

bool CommContext::OpVote(Op* op, uint64_t now_ns) {
  // `remaining` only falls: a voter that reads 1 holds the last vote and needs no locked decrement (the only
  // vote of an operation without KernelCh, the last channel's otherwise). The acquire load pairs with the
  // other voters' release decrements, as the fetch_sub would.
  if (op->remaining.load(std::memory_order_acquire) == 1) {
    op->remaining.store(0, std::memory_order_relaxed);
  } else if (op->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    return false;
  }
  if (now_ns == 0) now_ns = MonotonicNs();
  Complete(op, now_ns);
  return true;
}

// Whether `handle` no longer names its slot (stopped and freed, or reused since): counts the drop. A bool, not
// the slot or nullptr, so that the inlined check costs its callers nothing over writing it out.
[[gnu::always_inline]] static inline bool IsStale(const EventSlot* s, const void* handle) {
  if (s->state.load(std::memory_order_acquire) == 0 ||
      s->gen.load(std::memory_order_acquire) % 16 != HandleGen(handle)) {
    if (s->owner != nullptr) s->owner->CountDrop(Drop::kStaleHandle);
    return true;
  }
  return false;
}

void CommContext::Stop(void* handle) {
  if (handle == nullptr) return;  // the net callback may stop a NULL handle
  EventSlot* s = HandleSlot(handle);
  if (IsStale(s, handle)) return;
  CommContext* owner = s->owner;
  Op* op = s->op;
  if (HandleIsKernel(handle)) {
    if (HandleOwnsRef(handle)) {  // a KernelCh beyond the announced channels: no vote, its own reference
      op->kernel_extra_done.Add(1);
      Release(s);
      return;
    }
    // One vote per announced channel and no reference traffic: the vote that completes the operation drops
    // all of its votes' references at once. Its host end time comes from the GPU end once calibrated.
    const uint64_t gpu_end = op->GpuEnd();
    const int64_t off = owner->gpu_offset_.load(std::memory_order_relaxed);
    const uint64_t now = gpu_end != 0 && off != INT64_MAX ? gpu_end + static_cast<uint64_t>(off) : 0;
    if (owner->OpVote(op, now)) Release(s, Votes(*op));
    return;
  }
  switch (s->type) {
    case EventType::kColl:
    case EventType::kP2p: {
      const uint64_t now = MonotonicNs();
      op->enqueued_ns.Set(now);
      if (owner->OpVote(op, now)) Release(s, Votes(*op));
      return;
    }
    case EventType::kProxyOp:
      if (op != nullptr) {
        op->proxy_ops_done.Add(1);
        if (s->is_send) op->proxy_send_done.Add(1);
      }
      break;
    case EventType::kProxyStep:
      if (op != nullptr) op->steps_done.Add(1);
      break;
    case EventType::kNetPlugin:
      if (s->net_dev != kNoNetDev) StopNetPlugin(s);
      break;
    default:
      break;
  }
  Release(s);
}

// A kernel channel's GPU end: the channels the thread that started the kernel stops need no locked instruction.
[[gnu::always_inline]] static inline void RecordGpuEnd(Op* op, uint64_t ptimer) {
  if (ptimer == 0) return;
  if (op->kernel_owner.Get() == ThreadToken()) {
    if (ptimer > op->gpu_end_owner.Get()) op->gpu_end_owner.Set(ptimer);  // its only writer: see Op
  } else {
    op->gpu_end_shared.Max(ptimer);
  }
}

void CommContext::RecordKernelChStop(void* handle, uint64_t ptimer) noexcept {
  EventSlot* s = HandleSlot(handle);
  if (IsStale(s, handle)) return;
  RecordGpuEnd(s->op, ptimer);
}

void CommContext::Record(void* handle, const StateUpdate& u) {
  if (handle == nullptr) return;
  EventSlot* s = HandleSlot(handle);
  if (IsStale(s, handle)) return;
  if (u.state < 0 || u.state > kStateMaxKnown) {
    s->owner->CountDrop(Drop::kUnknownState);
    return;
  }
  Op* op = s->op;
  if (HandleIsKernel(handle)) {
    if (u.state == kStateKernelChStop && u.has_args) RecordGpuEnd(op, u.value);
    return;
  }
  if (s->type == EventType::kKernelPhase && u.state == kStateKernelPhaseStop && u.has_args && op != nullptr &&
      s->start_ns != 0 && u.value > s->start_ns) {
    const uint64_t ns = u.value - s->start_ns;
    op->phase_ns[s->net_dev].Max(static_cast<uint32_t>(std::min<uint64_t>(ns, UINT32_MAX)));
    return;
  }
  if (s->type == EventType::kProxyStep && u.state == kStateProxyStepRecvFlushWait && u.has_args &&
      s->net_dir == kNetDirRecv && s->net_qps.load(std::memory_order_acquire) != 0) {
    RecordStepReceived(s, u.value);
  }
  if (op == nullptr) return;
  if (s->type == EventType::kProxyOp && u.state == kStateProxyOpInProgress) {
    op->op_state.Max(static_cast<uint8_t>(OpState::kNetProgress));
  }
}

void CommContext::Complete(Op* op, uint64_t now) {
  if (op->kernel_mode.Get()) {
    // Count the announced KernelCh starts in one add. The seal splits the starts exactly: those before it
    // are in k0 and counted here, those after it see the bit and count themselves. The add is a release
    // after the seal, so a Fill that reads the counter with acquire and sees this add also sees the seal
    // and does not count this op's starts again as in flight: a snapshot never counts a start twice.
    const uint16_t k0 = op->kernel_started.fetch_or(Op::kKernelSealed, std::memory_order_relaxed) & ~Op::kKernelSealed;
    const uint16_t announced = std::min<uint16_t>(k0, op->channels.Get());
    if (announced != 0) {
      events_[static_cast<int>(EventType::kKernelCh)].fetch_add(announced, std::memory_order_release);
    }
  }
  op->end_ns.Set(now);
  op->op_state.Set(static_cast<uint8_t>(OpState::kCompleted));
  OpRecord rec = ReadOp(*op, now);
  const uint64_t gs = rec.gpu_start_ns, ge = rec.gpu_end_ns;
  const uint64_t hs = op->host_kernel_start.Get();
  if (gs != 0 && ge >= gs) {
    rec.timing_source = TimingSource::kGpu;
    rec.duration_ns = ge - gs;
  } else if (hs != 0 && rec.kernel_channels_done > 0) {
    rec.timing_source = TimingSource::kProxy;  // the kernel's host end is the completing vote: now
    rec.duration_ns = now > hs ? now - hs : 0;
  } else {
    rec.timing_source = TimingSource::kCpu;
    rec.duration_ns = rec.enqueued_ns > rec.start_ns ? rec.enqueued_ns - rec.start_ns : 0;
  }
  const int k = static_cast<int>(rec.kind), f = static_cast<int>(rec.func);
  const bool lane = OwnsLane(&complete_lane_);
  op_count_[k][f].Add(1, lane);
  op_bytes_[k][f].Add(rec.bytes, lane);
  const auto bus = static_cast<uint64_t>(static_cast<double>(rec.bytes) * bus_factor_[f]);
  agg_.Record(rec.kind, rec.func, rec.algo, rec.proto, rec.bytes, bus, rec.duration_ns,
              rec.timing_source != TimingSource::kCpu, lane);
  if (rec.user_tag != 0) CountTag(rec.user_tag, rec.bytes);
  stall_history_.Record(rec.func, rec.bytes, ElapsedNs(rec.start_ns, now));
  if (rec.phase_ns[0] != 0 || rec.phase_ns[1] != 0 || rec.phase_ns[2] != 0) {
    phase_ops_.Add(1);
    for (int i = 0; i < kKernelPhases; ++i) phase_sum_ns_[i].Add(rec.phase_ns[i]);
    if (rec.symmetric) {
      symmetric_ops_.Add(1);
      symmetric_barrier_ns_.Add(rec.phase_ns[0]);
    }
  }
  fr_.Append(rec, rec.arrival - 1);  // arrival numbers start at 1
  op->state.store(Op::kDone, std::memory_order_release);
}

}  // namespace ncclscope::profiler
