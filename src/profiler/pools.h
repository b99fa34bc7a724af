// Fixed-size pools of event slots and operation records, allocated and pre-faulted when a
// communicator is created. Allocation scans from a shared cursor (a hint, read and written without
// an RMW) and claims a free slot with one CAS on its state word; a full pool returns nullptr (the
// caller drops and counts the event). A pool may keep its first slots out of Allocate: the event pool
// reserves one slot per operation record, which the operation's claim owns (one CAS per operation).
// No lock, no heap allocation, never blocks. Slots are 64-byte aligned so an event handle can
// carry a 4-bit generation (stale-handle check) and two 1-bit tags in its low bits (see EncodeHandle).
#ifndef NCCLSCOPE_PROFILER_POOLS_H_
#define NCCLSCOPE_PROFILER_POOLS_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/op_types.h"
#include "core/relaxed.h"
#include "profiler/event.h"

namespace ncclscope::profiler {

class CommContext;

// One tracked operation (Coll or P2p). Written on the event path with relaxed atomics so that
// snapshot readers may copy it at any time.
struct alignas(64) Op {
  std::atomic<uint32_t> state{0};  // kFree, kInFlight, kDone (completed, slot still held by its event)
  std::atomic<int32_t> remaining{0};  // completion votes left: Coll stop + one per expected KernelCh stop
  RelaxedAtomic<uint64_t> seq, arrival, count, start_ns, enqueued_ns, end_ns;
  RelaxedAtomic<uint64_t> gpu_start, host_kernel_start;
  // The latest KernelChStop GPU time is the larger of two maxima: kernel_owner (the thread that started the
  // op's first KernelCh, by its thread pointer) keeps gpu_end_owner with a plain load and store (it is that
  // field's only writer, so nothing is lost), any other thread CASes gpu_end_shared. The owner is the thread
  // that records every channel in practice, so a channel costs no locked instruction here. Relaxed is
  // enough: a channel's record precedes its stop's acq_rel vote, which orders it before Complete's read.
  RelaxedAtomic<uint64_t> gpu_end_owner, gpu_end_shared;
  RelaxedAtomic<uintptr_t> kernel_owner;
  RelaxedAtomic<int32_t> peer_or_root;
  RelaxedAtomic<uint32_t> steps_total, steps_done;
  RelaxedAtomic<uint16_t> channels, kernel_extra_done, proxy_ops_started, proxy_ops_done;
  // ProxyOp events (opt-in mask 0x8): the sending ones started and stopped, and the peer (rank in the
  // communicator) of the last one started per direction [send, recv]: whom an unfinished one works with.
  RelaxedAtomic<uint16_t> proxy_send_started, proxy_send_done;
  RelaxedAtomic<int32_t> proxy_peer[2];
  // KernelCh starts seen; Complete sets kKernelSealed (see CommContext::Complete for why).
  std::atomic<uint16_t> kernel_started{0};
  RelaxedAtomic<uint8_t> kind, func, algo, proto, type_size, is_send, op_state, kernel_mode, symmetric;
  RelaxedAtomic<uint64_t> user_tag;                  // v7
  RelaxedAtomic<uint32_t> phase_ns[kKernelPhases];  // v7: per phase, the longest channel's duration
  static constexpr uint32_t kFree = 0, kInFlight = 1, kDone = 2;
  static constexpr uint16_t kKernelSealed = 0x8000;
  uint64_t GpuEnd() const {
    const uint64_t a = gpu_end_owner.Get(), b = gpu_end_shared.Get();
    return a > b ? a : b;
  }
};

static_assert(sizeof(Op) == 192, "Op grew: the memory per communicator counts 512 of them");

// One live event. Plain fields are written by the thread that starts the event before its handle
// is returned to NCCL, which orders them before any use of the handle.
struct alignas(64) EventSlot {
  std::atomic<uint32_t> state{0};  // 0 free, 1 used
  std::atomic<int32_t> refs{0};    // 1 until stopped, +1 per child or expected KernelCh
  std::atomic<uint32_t> gen{0};
  EventType type = EventType::kUnknown;
  bool is_send = false;
  uint8_t net_dir = 0;          // ProxyOp and descendants: kNetDirSend / kNetDirRecv, 0 when unknown
  uint8_t net_dev = 0xff;       // NetPlugin (NCCL IB): the QP's device index, kNoNetDev when not counted;
                                // KernelPhase: the phase id
  EventSlot* parent = nullptr;  // holds one reference on it
  Op* op = nullptr;             // Coll/P2p: owned; descendants: borrowed through the parent chain
  CommContext* owner = nullptr;
  uint64_t start_ns = 0;        // KernelPhase: its GPU start time
  uint64_t net_bytes = 0;       // NetPlugin (NCCL IB, send): the QP's bytes, counted at stop
  // ProxyStep: the IB QP events started under it, in post order (count in bits 56-63, device of QP i in bits
  // 6i..6i+5 for the first kStepQpSlots). NetPlugin: this QP's ordinal within its step.
  std::atomic<uint64_t> net_qps{0};
};
inline constexpr uint8_t kNetDirSend = 1, kNetDirRecv = 2, kNoNetDev = 0xff;
inline constexpr int kStepQpSlots = 8;  // NCCL's MAX_QPS_PER_REQ
static_assert(sizeof(EventSlot) == 64, "one cache line per event slot");

template <class T>
class FixedPool {
 public:
  // Allocate hands out slots [reserved, size) only; the first `reserved` are the caller's to pair (see above).
  explicit FixedPool(uint32_t size, uint32_t reserved = 0)
      : size_(size > reserved ? size : reserved + 1), reserved_(reserved), slots_(new T[size_]), cursor_(reserved) {}
  T* Allocate() {
    // The cursor is only where to start looking: the CAS on the slot decides. Two threads that read the
    // same cursor race for one slot and the loser takes the next, so a plain load and store (no locked
    // RMW on a line every thread shares) is enough; the cursor still walks the pool round robin, which
    // keeps a freed slot (and its generation) unused for as long as possible.
    // The index wraps by a compare, not a modulo: a division costs ~10 ns, twice per operation.
    uint32_t index = cursor_.load(std::memory_order_relaxed);
    const uint32_t shared = size_ - reserved_;
    const uint32_t probes = shared < kMaxProbes ? shared : kMaxProbes;
    for (uint32_t i = 0; i < probes; ++i, ++index) {
      if (index >= size_) index = reserved_;
      T& s = slots_[index];
      uint32_t expected = 0;
      if (s.state.load(std::memory_order_relaxed) == 0 &&
          s.state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
        cursor_.store(index + 1, std::memory_order_relaxed);
        return &s;
      }
    }
    return nullptr;
  }
  void Free(T* s) { s->state.store(0, std::memory_order_release); }
  bool Contains(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    auto b = reinterpret_cast<uintptr_t>(slots_.get());
    return a >= b && a < b + sizeof(T) * size_ && (a - b) % sizeof(T) == 0;
  }
  uint32_t size() const { return size_; }
  uint32_t IndexOf(const T* s) const { return static_cast<uint32_t>(s - slots_.get()); }
  T& at(uint32_t i) { return slots_[i]; }
  const T& at(uint32_t i) const { return slots_[i]; }
  uint32_t Live() const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < size_; ++i) n += slots_[i].state.load(std::memory_order_acquire) != 0;
    return n;
  }
  size_t memory_bytes() const { return sizeof(T) * size_; }

 private:
  static constexpr uint32_t kMaxProbes = 256;
  const uint32_t size_, reserved_;
  std::unique_ptr<T[]> slots_;
  alignas(64) std::atomic<uint32_t> cursor_;
};

// Handle encoding: slot address | generation (4 bits) | "holds its own reference" (bit 4) |
// kernel-channel tag (bit 5). KernelCh events get no slot of their own: their handle is the parent
// Coll/P2p slot tagged, because their parent pre-counted one reference per expected channel.
inline constexpr uintptr_t kGenMask = 0x0f;
inline constexpr uintptr_t kOwnRefTag = 0x10;
inline constexpr uintptr_t kKernelTag = 0x20;
inline constexpr uintptr_t kLowMask = 0x3f;
static_assert(alignof(EventSlot) >= 64);

inline void* EncodeHandle(EventSlot* s, uint32_t gen, bool kernel = false, bool own_ref = false) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(s) | (gen & kGenMask) | (kernel ? kKernelTag : 0) |
                                 (own_ref ? kOwnRefTag : 0));
}
inline bool HandleOwnsRef(const void* h) { return (reinterpret_cast<uintptr_t>(h) & kOwnRefTag) != 0; }
inline EventSlot* HandleSlot(const void* h) {
  return reinterpret_cast<EventSlot*>(reinterpret_cast<uintptr_t>(h) & ~kLowMask);
}
inline uint32_t HandleGen(const void* h) { return reinterpret_cast<uintptr_t>(h) & kGenMask; }
inline bool HandleIsKernel(const void* h) { return (reinterpret_cast<uintptr_t>(h) & kKernelTag) != 0; }

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_POOLS_H_
