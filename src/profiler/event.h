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
  kKernelPhase,  // v7: one barrier phase of a kernel channel, child of KernelCh
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
inline constexpr int kMaskNetPlugin = 0x80;
inline constexpr int kMaskKernelPhase = 0x8000;  // v7
inline constexpr int kMaskAll = 0xffff;          // every bit NCCL defines (v7)
// Always on: Coll and P2p name every operation (function, sequence, bytes, algorithm) and KernelCh
// gives its GPU start/end and completion, which the flight recorder and stall watch need to tell an
// enqueued operation from one whose kernel is running. ProxyOp/ProxyStep (network steps) cost ~3
// calls per channel per peer plus several per step and are opt-in through NCCLSCOPE_EVENT_MASK.
inline constexpr int kDefaultEventMask = kMaskColl | kMaskP2p | kMaskKernelCh;

// The default for the NCCL running in this process (NCCL_VERSION_CODE, 0 when unknown). NCCL 2.31.x made KernelCh
// profiling itself expensive on the GPU (0.44 % to 10.5 % of the kernel time at 1 MiB with KernelCh alone,
// NVIDIA/nccl #2355; the gating fix is not in a release yet), so there the default leaves KernelCh out: operations
// are then timed by the proxy or the host, and NCCLSCOPE_EVENT_MASK=0x46 asks for GPU timing anyway.
inline constexpr int DefaultEventMaskFor(int nccl_version_code) {
  return nccl_version_code >= 23100 && nccl_version_code < 23200 ? kMaskColl | kMaskP2p : kDefaultEventMask;
}
static_assert(DefaultEventMaskFor(23102) == 0x6 && DefaultEventMaskFor(23007) == 0x46 && DefaultEventMaskFor(0) == 0x46);

// States with a meaning for us (NCCL's numbering, shared by all versions).
inline constexpr int kStateProxyStepSendWait = 9;
inline constexpr int kStateProxyStepRecvFlushWait = 11;
inline constexpr int kStateProxyCtrlAppendEnd = 18;
inline constexpr int kStateProxyOpInProgress = 19;
inline constexpr int kStateNetPluginUpdate = 21;
inline constexpr int kStateKernelChStop = 22;
inline constexpr int kStateKernelPhaseStop = 31;  // v7: stop time (GPU timer) in the kernelCh state argument
inline constexpr int kStateMaxKnown = 31;
// v7 KernelPhase ids: time spent waiting for peers (symmetric kernels only), computing, and in the final barrier.
inline constexpr int kKernelPhases = 3;

// Where a NetPlugin event came from, decoded by the ABI layer from its plugin id (type bits) and descriptor.
enum class NetSource : uint8_t {
  kNone = 0,       // not a NetPlugin event, or not decoded
  kIb,             // NCCL's IB transport (type 0x10000, descriptor v1, ncclProfileQp): net_device/net_length valid
  kIbMalformed,    // IB type but NULL extData, an unknown descriptor version or a non-QP descriptor
  kSocket,         // socket type (0x20000): NCCL's socket transport or ncclscope's own TCP (counted by the net half)
  kOwnVerbs,       // 0x30000: ncclscope's own verbs transport (counted by the net half)
  kUnknown,        // any other type code (another plugin's own events)
};

// NCCL's IB devices we keep counters for: qp.device must be in [0, kMaxIbDevices) (NCCL merges at most a
// few HCAs per virtual device; 64 bounds the label set).
inline constexpr int kMaxIbDevices = 64;

struct EventDesc {
  // Every field zero except type (kUnknown), the peer fields, phase and net_device (-1). The adapters build
  // one per startEvent: cleared in blocks of at most 64 bytes, which compilers store with a few vector moves,
  // where one clear of the whole struct becomes `rep stosq` on x86-64 (slow to start, and it fills the store
  // buffer that the event path's first locked instruction then waits on).
  EventDesc() noexcept {
    static_assert(sizeof(EventDesc) > 128 && sizeof(EventDesc) - 128 <= 64, "re-split the clear");
    char* p = reinterpret_cast<char*>(this);
    std::memset(p, 0, 64);
    std::memset(p + 64, 0, 64);
    std::memset(p + 128, 0, sizeof(EventDesc) - 128);
    type = EventType::kUnknown;
    root_or_peer = -1;
    peer = -1;
    phase = -1;
    net_device = -1;
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
  uint64_t user_tag;  // v7: the caller's tag (0 = untagged), on CollApi/P2pApi/Coll/P2p/CeColl
  bool symmetric;     // v7: a symmetric-memory collective (its initial_sync phase is the wait for peers)
  int phase;          // v7 KernelPhase: 0 initial_sync, 1 compute, 2 final_sync (-1: none)
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
  // NetPlugin, decoded: NCCL keeps extData by pointer and rewrites it for the next QP, so the ABI layer copies
  // the fields here at startEvent. net_length is the send-side bytes of this QP (receive events carry none).
  NetSource net_source;
  int net_device;
  uint64_t net_length;
};
static_assert(std::is_trivially_copyable_v<EventDesc>);

// What a Coll or P2p start needs, and no more: the ABI layer fills it straight from NCCL's descriptor, without
// clearing a whole EventDesc (see profiler::StartOperation).
struct OpDesc {
  EventType type;  // kColl or kP2p
  int root_or_peer;
  int nchannels;
  bool symmetric;
  uint64_t seq;  // Coll only: NCCL's number (P2p ones are ours)
  size_t count;
  const char* func;
  const char* datatype;
  const char* algo;  // Coll only
  const char* proto;
  uint64_t user_tag;

  static OpDesc Of(const EventDesc& d) {
    return {d.type, d.root_or_peer, d.nchannels, d.symmetric, d.seq, d.count, d.func, d.datatype, d.algo, d.proto,
            d.user_tag};
  }
};

// A recordEventState call: `value` is the 8-byte state argument read per state (transSize, pTimer,
// appendedProxyOps); has_args is false when NCCL passed NULL.
struct StateUpdate {
  int state = 0;
  bool has_args = false;
  uint64_t value = 0;
};

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_EVENT_H_
