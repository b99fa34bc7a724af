// Version-neutral names for what NCCL's profiler reports about an operation (function, algorithm,
// protocol, datatype size, timing source, progress state) and the nccl-tests byte and bandwidth
// arithmetic. Pure functions and enums with no NCCL types; safe from any thread.
#ifndef NCCLSCOPE_CORE_OP_TYPES_H_
#define NCCLSCOPE_CORE_OP_TYPES_H_

#include <cstddef>
#include <cstdint>

namespace ncclscope {

enum class OpKind : uint8_t { kColl = 0, kP2p = 1 };

// Every function NCCL names in Coll/P2p descriptors; kOther keeps unknown strings countable.
enum class Func : uint8_t {
  kAllReduce = 0,
  kAllGather,
  kBroadcast,
  kReduce,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kAllGatherV,
  kSend,
  kRecv,
  kSendRecv,
  kOther,
  kCount
};

enum class Algo : uint8_t { kNone = 0, kTree, kRing, kCollnetDirect, kCollnetChain, kNvls, kNvlsTree, kPat, kOther };
enum class Proto : uint8_t { kNone = 0, kLL, kLL128, kSimple, kOther };

// Where a duration came from. Only kGpu and kProxy durations are latencies; kCpu is the enqueue time.
enum class TimingSource : uint8_t { kCpu = 0, kProxy = 1, kGpu = 2 };

enum class OpState : uint8_t { kEnqueued = 0, kKernelStarted = 1, kNetProgress = 2, kCompleted = 3 };

Func ParseFunc(const char* s);
Algo ParseAlgo(const char* s);
Proto ParseProto(const char* s);
// NCCL's datatype strings ("ncclFloat32", …; "Unknown" is how NCCL prints ncclUint8) as indexes into one
// table; an unknown string is kUnknownDatatype, whose name matches nothing and whose size is 1.
inline constexpr uint8_t kUnknownDatatype = 0xff;
uint8_t ParseDatatype(const char* s);
const char* DatatypeName(uint8_t index);
// Bytes per element, by datatype index (the order of kDatatypeNames in op_types.cc). In the header so
// that DatatypeSizeOf inlines: every operation start looks it up.
inline constexpr uint8_t kDatatypeSizes[] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 4, 4, 4, 4, 4, 8, 8, 8, 8};
inline constexpr size_t kDatatypeCount = sizeof(kDatatypeSizes) / sizeof(kDatatypeSizes[0]);
inline int DatatypeSizeOf(uint8_t index) { return index < kDatatypeCount ? kDatatypeSizes[index] : 1; }
// Bytes per element of a datatype string.
inline int DatatypeSize(const char* s) { return DatatypeSizeOf(ParseDatatype(s)); }

const char* FuncName(Func f);
const char* AlgoName(Algo a);
const char* ProtoName(Proto p);
const char* TimingSourceName(TimingSource t);
const char* OpStateName(OpState s);
const char* OpKindName(OpKind k);

// nccl-tests byte base: count × type size, × nranks for AllGather, ReduceScatter and AlltoAll
// (their Coll count is per rank).
uint64_t OpBytes(Func f, uint64_t count, int type_size, int nranks);
// busbw = algbw × factor: 2(n−1)/n AllReduce; (n−1)/n AllGather, ReduceScatter, AlltoAll; 1 otherwise.
double BusBwFactor(Func f, int nranks);
// GB/s (1e9 bytes per second), as nccl-tests prints.
double AlgBwGBps(uint64_t bytes, uint64_t duration_ns);
double BusBwGBps(Func f, uint64_t bytes, uint64_t duration_ns, int nranks);

// Power-of-two size class: 0 for 0 bytes, else floor(log2(bytes)) + 1 (so 1 byte → 1, 1 KiB → 11).
inline int SizeClass(uint64_t bytes) { return bytes == 0 ? 0 : 64 - __builtin_clzll(bytes); }

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_OP_TYPES_H_
