// The profiler tables of NCCL 2.23-2.26 (v1, v2, v3; include/ncclscope/abi/profiler_v1_v3.h): NCCL's newest
// descriptor turned into what those releases deliver. Only Group, Coll, P2p and the proxy events exist (v3 adds
// KernelCh, without its GPU timer, and NetPlugin); Coll and P2p carry the communicator's name and hash and are
// parented by the Group event; v1 passes func, datatype, algo and proto as NCCL's enum numbers.
#include <cstring>

#include "plugin_loader.h"

namespace ncclscope::sim {
namespace {

template <class T>
const T* As(const void* p) {
  return static_cast<const T*>(p);
}

// v1's numbers: the index of the name in NCCL 2.23's enums (0xFF: not one of them).
uint8_t IndexOf(const char* s, const char* const* names, int n) {
  if (s == nullptr) return 0xFF;
  for (int i = 0; i < n; ++i) {
    if (strcmp(s, names[i]) == 0) return static_cast<uint8_t>(i);
  }
  return 0xFF;
}
constexpr const char* kFuncs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                  "AllReduce", "SendRecv", "Send", "Recv"};
constexpr const char* kTypes[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",
                                  "ncclInt64",   "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                  "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
constexpr const char* kAlgos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
constexpr const char* kProtos[] = {"LL", "LL128", "SIMPLE"};
template <size_t N>
uint8_t IndexOf(const char* s, const char* const (&names)[N]) {
  return IndexOf(s, names, static_cast<int>(N));
}

// Header, proxy arms and the communicator's identity, the same names in every v1-v3 descriptor.
template <class Descr>
void FillCommon(Descr* out, const ncclscope_profiler_descr_v6_t& d, uint64_t comm_hash, const char* comm_name) {
  memset(out, 0, sizeof(*out));
  out->type = static_cast<uint8_t>(d.type);
  out->parentObj = d.parentObj;
  out->rank = d.rank;
  switch (d.type) {
    case NCCLSCOPE_PROFILE_COLL:
      out->parentObj = d.coll.parentGroup;
      out->coll.name = comm_name;
      out->coll.commHash = comm_hash;
      out->coll.seqNumber = d.coll.seqNumber;
      out->coll.sendBuff = d.coll.sendBuff;
      out->coll.recvBuff = d.coll.recvBuff;
      out->coll.count = d.coll.count;
      out->coll.root = d.coll.root;
      out->coll.nMaxChannels = d.coll.nChannels;
      out->coll.nWarps = d.coll.nWarps;
      break;
    case NCCLSCOPE_PROFILE_P2P:
      out->parentObj = d.p2p.parentGroup;
      out->p2p.name = comm_name;
      out->p2p.commHash = comm_hash;
      out->p2p.buff = d.p2p.buff;
      out->p2p.count = d.p2p.count;
      out->p2p.peer = d.p2p.peer;
      break;
    case NCCLSCOPE_PROFILE_PROXY_OP: out->proxyOp = d.proxyOp; break;
    case NCCLSCOPE_PROFILE_PROXY_STEP: out->proxyStep = d.proxyStep; break;
    default: break;
  }
}

// v2 and v3: the strings as given.
template <class Descr>
void FillStrings(Descr* out, const ncclscope_profiler_descr_v6_t& d) {
  if (d.type == NCCLSCOPE_PROFILE_COLL) {
    out->coll.func = d.coll.func;
    out->coll.datatype = d.coll.datatype;
    out->coll.algo = d.coll.algo;
    out->coll.proto = d.coll.proto;
  } else if (d.type == NCCLSCOPE_PROFILE_P2P) {
    out->p2p.func = d.p2p.func;
    out->p2p.datatype = d.p2p.datatype;
  }
}

}  // namespace

ncclscope_result_t ProfilerApi::StartLegacy(void* ctx, void** handle, const ncclscope_profiler_descr_v6_t& d,
                                            uint64_t comm_hash, const char* comm_name) {
  const uint64_t newest = version == 3 ? NCCLSCOPE_PROFILE_NET_PLUGIN : NCCLSCOPE_PROFILE_PROXY_CTRL;
  if (d.type > newest) return NCCLSCOPE_SUCCESS;  // no such event in this release: *handle untouched
  if (version == 1) {
    ncclscope_profiler_descr_v1_t v1;
    FillCommon(&v1, d, comm_hash, comm_name);
    if (d.type == NCCLSCOPE_PROFILE_COLL) {
      v1.coll.func = IndexOf(d.coll.func, kFuncs);
      v1.coll.datatype = IndexOf(d.coll.datatype, kTypes);
      v1.coll.algo = IndexOf(d.coll.algo, kAlgos);
      v1.coll.proto = IndexOf(d.coll.proto, kProtos);
    } else if (d.type == NCCLSCOPE_PROFILE_P2P) {
      v1.p2p.func = IndexOf(d.p2p.func, kFuncs);
      v1.p2p.datatype = IndexOf(d.p2p.datatype, kTypes);
    }
    return As<ncclscope_profiler_v1_t>(table)->startEvent(ctx, handle, &v1);
  }
  if (version == 2) {
    ncclscope_profiler_descr_v2_t v2;
    FillCommon(&v2, d, comm_hash, comm_name);
    FillStrings(&v2, d);
    return As<ncclscope_profiler_v2_t>(table)->startEvent(ctx, handle, &v2);
  }
  ncclscope_profiler_descr_v3_t v3;
  FillCommon(&v3, d, comm_hash, comm_name);
  FillStrings(&v3, d);
  if (d.type == NCCLSCOPE_PROFILE_KERNEL_CH) v3.kernelCh.channelId = d.kernelCh.channelId;  // no timer in v3
  if (d.type == NCCLSCOPE_PROFILE_NET_PLUGIN) v3.netPlugin = d.netPlugin;
  return As<ncclscope_profiler_v3_t>(table)->startEvent(ctx, handle, &v3);
}

}  // namespace ncclscope::sim
