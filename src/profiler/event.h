// The version-neutral event model the ABI adapters translate every ncclProfiler_vN call into.
// Plain values only; the adapters fill one EventDesc per startEvent on the caller's stack.
#ifndef NCCLSCOPE_PROFILER_EVENT_H_
#define NCCLSCOPE_PROFILER_EVENT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ncclscope::profiler {

enum class EventType : uint8_t {
  kGroup = 0,
  kColl,
  kP2p,
  kProxyOp,
  kProxyStep,
  kProxyCtrl,
  kKernelCh,
  kNetPlugin,
  kGroupApi,
  kCollApi,
  kP2pApi,
  kKernelLaunch,
  kCeColl,
  kCeSync,
  kCeBatch,
  kUnknown,
  kCount
};

// NCCL's type bit (exactly one set) → our type; anything else is kUnknown.
inline EventType EventTypeFromBit(uint64_t bit) {
  if (bit == 0 || (bit & (bit - 1)) != 0) return EventType::kUnknown;
  int index = __builtin_ctzll(bit);
  return index < static_cast<int>(EventType::kUnknown) ? static_cast<EventType>(index) : EventType::kUnknown;
}
const char* EventTypeName(EventType t);

// Activation-mask bits, the same numbers as NCCL's (kept here so the core of the profiler needs no ABI header).
inline constexpr int kMaskColl = 0x2;
inline constexpr int kMaskP2p = 0x4;
inline constexpr int kMaskProxyOp = 0x8;
inline constexpr int kMaskProxyStep = 0x10;
inline constexpr int kMaskKernelCh = 0x40;
// Always on: Coll and P2p name every operation (function, sequence, bytes, algorithm) and KernelCh
// gives its GPU start/end and completion, which the flight recorder and stall watch need to tell an
// enqueued operation from one whose kernel is running. ProxyOp/ProxyStep (network steps) cost ~3
// calls per channel per peer plus several per step and are opt-in through NCCLSCOPE_EVENT_MASK.
inline constexpr int kDefaultEventMask = kMaskColl | kMaskP2p | kMaskKernelCh;

// States with a meaning for us (NCCL's numbering, shared by all versions).
inline constexpr int kStateProxyStepSendWait = 9;
inline constexpr int kStateProxyStepRecvFlushWait = 11;
inline constexpr int kStateProxyCtrlAppendEnd = 18;
inline constexpr int kStateProxyOpInProgress = 19;
inline constexpr int kStateNetPluginUpdate = 21;
inline constexpr int kStateKernelChStop = 22;
inline constexpr int kStateMaxKnown = 30;

struct EventDesc {
  // Every field zero except type (kUnknown) and the two peer fields (-1). The adapters build one per
  // startEvent: cleared as two blocks of at most 80 bytes, which compilers store with a few vector moves,
  // where one 136-byte clear becomes `rep stosq` on x86-64 (slow to start, and it fills the store
  // buffer that the event path's first locked instruction then waits on).
  EventDesc() noexcept {
    static_assert(sizeof(EventDesc) > 64 && sizeof(EventDesc) - 64 <= 80, "re-split the clear");
    std::memset(static_cast<void*>(this), 0, 64);
    std::memset(reinterpret_cast<char*>(this) + 64, 0, sizeof(EventDesc) - 64);
    type = EventType::kUnknown;
    root_or_peer = -1;
    peer = -1;
  }

  EventType type;
  void* parent;
  int rank;
  // Coll / P2p
  bool has_seq;
  uint64_t seq;
  const char* func;
  const char* datatype;
  size_t count;
  int root_or_peer;
  int nchannels;
  const char* algo;
  const char* proto;
  // ProxyOp
  int pid;
  int channel;
  int peer;
  int nsteps;
  int chunk_size;
  bool is_send;
  // ProxyStep
  int step;
  // KernelCh
  bool has_ptimer;
  uint64_t ptimer;
  // NetPlugin
  int64_t net_id;
  void* net_data;
};
static_assert(std::is_trivially_copyable_v<EventDesc>);

// A recordEventState call: `value` is the 8-byte state argument read per state (transSize, pTimer,
// appendedProxyOps); has_args is false when NCCL passed NULL.
struct StateUpdate {
  int state = 0;
  bool has_args = false;
  uint64_t value = 0;
};

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_EVENT_H_
