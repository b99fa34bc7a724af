#include "core/op_types.h"

#include <cstring>

namespace ncclscope {
namespace {

constexpr const char* kFuncNames[] = {"AllReduce",  "AllGather", "Broadcast", "Reduce", "ReduceScatter",
                                      "AlltoAll",   "Gather",    "Scatter",   "AllGatherV", "Send",
                                      "Recv",       "SendRecv",  "Other"};
static_assert(sizeof(kFuncNames) / sizeof(kFuncNames[0]) == static_cast<size_t>(Func::kCount));

bool Eq(const char* a, const char* b) { return std::strcmp(a, b) == 0; }

// Indexed like kDatatypeSizes (op_types.h).
constexpr const char* kDatatypeNames[] = {
    "ncclInt8",    "ncclChar",  "ncclUint8",    "Unknown",   "ncclFloat8e4m3", "ncclFloat8e5m2",
    "ncclFloat16", "ncclHalf",  "ncclBfloat16", "ncclInt32", "ncclInt",        "ncclUint32",
    "ncclFloat32", "ncclFloat", "ncclInt64",    "ncclUint64", "ncclFloat64",   "ncclDouble"};
static_assert(sizeof(kDatatypeNames) / sizeof(kDatatypeNames[0]) == kDatatypeCount);

}  // namespace

Func ParseFunc(const char* s) {
  if (s == nullptr) return Func::kOther;
  for (size_t i = 0; i + 1 < static_cast<size_t>(Func::kCount); ++i) {
    if (Eq(s, kFuncNames[i])) return static_cast<Func>(i);
  }
  return Func::kOther;
}

Algo ParseAlgo(const char* s) {
  if (s == nullptr) return Algo::kNone;
  if (Eq(s, "RING")) return Algo::kRing;
  if (Eq(s, "TREE")) return Algo::kTree;
  if (Eq(s, "COLLNET_DIRECT")) return Algo::kCollnetDirect;
  if (Eq(s, "COLLNET_CHAIN")) return Algo::kCollnetChain;
  if (Eq(s, "NVLS")) return Algo::kNvls;
  if (Eq(s, "NVLS_TREE")) return Algo::kNvlsTree;
  if (Eq(s, "PAT")) return Algo::kPat;
  return Algo::kOther;
}

Proto ParseProto(const char* s) {
  if (s == nullptr) return Proto::kNone;
  if (Eq(s, "SIMPLE")) return Proto::kSimple;
  if (Eq(s, "LL")) return Proto::kLL;
  if (Eq(s, "LL128")) return Proto::kLL128;
  return Proto::kOther;
}

uint8_t ParseDatatype(const char* s) {
  if (s == nullptr) return kUnknownDatatype;
  for (size_t i = 0; i < kDatatypeCount; ++i) {
    if (Eq(s, kDatatypeNames[i])) return static_cast<uint8_t>(i);
  }
  return kUnknownDatatype;
}

const char* DatatypeName(uint8_t index) { return index < kDatatypeCount ? kDatatypeNames[index] : ""; }

const char* FuncName(Func f) {
  size_t i = static_cast<size_t>(f);
  return i < static_cast<size_t>(Func::kCount) ? kFuncNames[i] : "Other";
}

const char* AlgoName(Algo a) {
  switch (a) {
    case Algo::kNone: return "none";
    case Algo::kTree: return "TREE";
    case Algo::kRing: return "RING";
    case Algo::kCollnetDirect: return "COLLNET_DIRECT";
    case Algo::kCollnetChain: return "COLLNET_CHAIN";
    case Algo::kNvls: return "NVLS";
    case Algo::kNvlsTree: return "NVLS_TREE";
    case Algo::kPat: return "PAT";
    case Algo::kOther: return "other";
  }
  return "other";
}

const char* ProtoName(Proto p) {
  switch (p) {
    case Proto::kNone: return "none";
    case Proto::kLL: return "LL";
    case Proto::kLL128: return "LL128";
    case Proto::kSimple: return "SIMPLE";
    case Proto::kOther: return "other";
  }
  return "other";
}

const char* TimingSourceName(TimingSource t) {
  switch (t) {
    case TimingSource::kCpu: return "cpu";
    case TimingSource::kProxy: return "proxy";
    case TimingSource::kGpu: return "gpu";
  }
  return "cpu";
}

const char* OpStateName(OpState s) {
  switch (s) {
    case OpState::kEnqueued: return "enqueued";
    case OpState::kKernelStarted: return "kernel_started";
    case OpState::kNetProgress: return "net_progress";
    case OpState::kCompleted: return "completed";
  }
  return "enqueued";
}

const char* OpKindName(OpKind k) { return k == OpKind::kColl ? "coll" : "p2p"; }

uint64_t OpBytes(Func f, uint64_t count, int type_size, int nranks) {
  uint64_t bytes = count * static_cast<uint64_t>(type_size > 0 ? type_size : 1);
  switch (f) {
    case Func::kAllGather:
    case Func::kReduceScatter:
    case Func::kAlltoAll:
      return bytes * static_cast<uint64_t>(nranks > 0 ? nranks : 1);
    default:
      return bytes;
  }
}

double BusBwFactor(Func f, int nranks) {
  double n = nranks > 0 ? nranks : 1;
  switch (f) {
    case Func::kAllReduce: return 2.0 * (n - 1) / n;
    case Func::kAllGather:
    case Func::kReduceScatter:
    case Func::kAlltoAll: return (n - 1) / n;
    default: return 1.0;
  }
}

double AlgBwGBps(uint64_t bytes, uint64_t duration_ns) {
  if (duration_ns == 0) return 0.0;
  return static_cast<double>(bytes) / static_cast<double>(duration_ns);  // bytes/ns == GB/s
}

double BusBwGBps(Func f, uint64_t bytes, uint64_t duration_ns, int nranks) {
  return AlgBwGBps(bytes, duration_ns) * BusBwFactor(f, nranks);
}

}  // namespace ncclscope
