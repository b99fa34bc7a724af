#include "plugin_loader.h"

#include <dlfcn.h>
#include <fnmatch.h>
#include <strings.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "logger.h"
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler_rccl.h"

namespace ncclscope::sim {
// clock_offset.cc (--clock-offset): told of every library about to be opened, so that the clocks it reads can
// be shifted from its first static initialiser on. Weak, so that a test compiling this file alone links without it.
extern "C" void NcclscopeSimExpectPlugin(const char* path) __attribute__((weak));

namespace {

std::mutex g_mu;  // NCCL's plugin load lock: comm init/destroy only

template <typename T>
const T* As(const void* p) { return static_cast<const T*>(p); }

// Opens one library by the NCCL rules; logs like NCCL when a file is missing.
void* OpenFirst(const std::string& kind, const std::vector<std::string>& names, std::string* opened,
                std::string* errors) {
  for (const auto& n : names) {
    if (NcclscopeSimExpectPlugin != nullptr) NcclscopeSimExpectPlugin(n.c_str());
    void* h = dlopen(n.empty() ? nullptr : n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      *opened = n.empty() ? "STATIC_PLUGIN" : n;
      return h;
    }
    const char* err = dlerror();
    std::string e = err ? err : "unknown dlopen error";
    if (e.find("No such file") != std::string::npos || e.find("cannot open shared object") != std::string::npos) {
      SIM_INFO(NCCLSCOPE_SUBSYS_INIT, "%s/Plugin: Could not find: %s", kind.c_str(), n.c_str());
    } else {
      SIM_INFO(NCCLSCOPE_SUBSYS_INIT, "%s/Plugin: dlopen %s failed: %s", kind.c_str(), n.c_str(), e.c_str());
    }
    *errors += (errors->empty() ? "" : "; ") + n + ": " + e;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> PluginCandidates(const std::string& kind, const char* value) {
  std::string prefix = kind == "net" ? "libnccl-net" : "libnccl-profiler";
  if (value == nullptr) return {prefix + ".so"};
  std::string v(value);
  if (strcasecmp(v.c_str(), "none") == 0) return {};
  // NCCL's quirk: compares with the length of V, so any prefix of STATIC_PLUGIN matches.
  if (!v.empty() && strncasecmp(v.c_str(), "STATIC_PLUGIN", v.size()) == 0) return {""};
  if (v.find('/') != std::string::npos) return {v};
  if (fnmatch("lib*.so", v.c_str(), 0) == 0) return {v};
  return {v, prefix + "-" + v + ".so"};
}

const char* NcclVersionName(NcclVersion v) {
  switch (v) {
    case NcclVersion::k2_23: return "2.23";
    case NcclVersion::k2_25: return "2.25";
    case NcclVersion::k2_26: return "2.26";
    case NcclVersion::k2_27: return "2.27";
    case NcclVersion::k2_28: return "2.28";
    case NcclVersion::k2_30: return "2.30";
    default: return "2.31";
  }
}

// Newest tables per release (docs/nccl-abi.md, sources: net v9 2.24, v10 2.26, v11 2.28, v12 2.30; profiler v1
// 2.23, v2 2.24, v3 2.26, v4 2.27, v5 2.28, v6 2.29, v7 2.31).
std::vector<std::string> NetProbeOrder(NcclVersion v) {
  std::vector<std::string> out;
  const int newest = v == NcclVersion::k2_23   ? 8
                     : v == NcclVersion::k2_25 ? 9
                     : v == NcclVersion::k2_26 ? 10
                     : v == NcclVersion::k2_27 ? 10
                     : v == NcclVersion::k2_28 ? 11
                                               : 12;
  for (int i = newest; i >= 6; --i) out.push_back("ncclNetPlugin_v" + std::to_string(i));
  return out;
}

std::vector<std::string> ProfilerProbeOrder(NcclVersion v) {
  std::vector<std::string> out;
  const int newest = v == NcclVersion::k2_23   ? 1
                     : v == NcclVersion::k2_25 ? 2
                     : v == NcclVersion::k2_26 ? 3
                     : v == NcclVersion::k2_27 ? 4
                     : v == NcclVersion::k2_28 ? 5
                     : v == NcclVersion::k2_30 ? 6
                                               : 7;
  for (int i = newest; i >= 1; --i) out.push_back("ncclProfiler_v" + std::to_string(i));
  return out;
}

// ---- NetApi -------------------------------------------------------------------------------------------
#define NET_DISPATCH(EXPR)                                                  \
  switch (version) {                                                        \
    case 8: { auto* t = As<ncclscope_net_v8_t>(table); EXPR; }             \
    case 9: { auto* t = As<ncclscope_net_v9_t>(table); EXPR; }             \
    case 10: { auto* t = As<ncclscope_net_v10_t>(table); EXPR; }           \
    case 11: { auto* t = As<ncclscope_net_v11_t>(table); EXPR; }           \
    default: { auto* t = As<ncclscope_net_v12_t>(table); EXPR; }           \
  }

const char* NetApi::Name() const { NET_DISPATCH(return t->name ? t->name : "?"); }

ncclscope_result_t NetApi::Init(void** ctx, uint64_t comm_id, ncclscope_logger_t log,
                                ncclscope_profiler_callback_t cb) {
  ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};  // on our stack, as NCCL's
  *ctx = nullptr;
  switch (version) {
    case 8: return As<ncclscope_net_v8_t>(table)->init(log);
    case 9: return As<ncclscope_net_v9_t>(table)->init(log);
    case 10: return As<ncclscope_net_v10_t>(table)->init(log, cb);
    case 11: return As<ncclscope_net_v11_t>(table)->init(ctx, comm_id, &cfg, log, cb);
    default: return As<ncclscope_net_v12_t>(table)->init(ctx, comm_id, &cfg, log, cb);
  }
}

ncclscope_result_t NetApi::Finalize(void* ctx) {
  if (version == 11) return As<ncclscope_net_v11_t>(table)->finalize(ctx);
  if (version == 12) return As<ncclscope_net_v12_t>(table)->finalize(ctx);
  return NCCLSCOPE_SUCCESS;
}

ncclscope_result_t NetApi::Devices(int* n) { NET_DISPATCH(return t->devices(n)); }

ncclscope_result_t NetApi::GetProperties(int dev, std::string* name, int* type, int* max_recvs, int* speed) {
  auto fill = [&](auto& p) {
    *name = p.name ? p.name : "";
    *type = p.netDeviceType;
    *max_recvs = p.maxRecvs;
    *speed = p.speed;
  };
  ncclscope_result_t r;
  switch (version) {
    case 8: { ncclscope_net_properties_v8_t p; memset(&p, 0xA5, sizeof(p)); r = As<ncclscope_net_v8_t>(table)->getProperties(dev, &p); if (r == 0) fill(p); return r; }
    case 9: { ncclscope_net_properties_v9_t p; memset(&p, 0xA5, sizeof(p)); r = As<ncclscope_net_v9_t>(table)->getProperties(dev, &p); if (r == 0) fill(p); return r; }
    case 10: { ncclscope_net_properties_v9_t p; memset(&p, 0xA5, sizeof(p)); r = As<ncclscope_net_v10_t>(table)->getProperties(dev, &p); if (r == 0) fill(p); return r; }
    case 11: { ncclscope_net_properties_v11_t p; memset(&p, 0xA5, sizeof(p)); r = As<ncclscope_net_v11_t>(table)->getProperties(dev, &p); if (r == 0) fill(p); return r; }
    default: { ncclscope_net_properties_v12_t p; memset(&p, 0xA5, sizeof(p)); r = As<ncclscope_net_v12_t>(table)->getProperties(dev, &p); if (r == 0) fill(p); return r; }
  }
}

ncclscope_result_t NetApi::MakeVDevice(const std::vector<int>& devs, int* vdev) {
  auto make = [&](auto* t, auto props) -> ncclscope_result_t {
    if (t->makeVDevice == nullptr) return NCCLSCOPE_INVALID_USAGE;
    props.ndevs = static_cast<int>(devs.size());
    for (size_t i = 0; i < devs.size(); ++i) props.devs[i] = devs[i];
    return t->makeVDevice(vdev, &props);
  };
  switch (version) {
    case 8: return NCCLSCOPE_INVALID_USAGE;
    case 9: return make(As<ncclscope_net_v9_t>(table), ncclscope_net_vdevice_props_v9_t{});
    case 10: return make(As<ncclscope_net_v10_t>(table), ncclscope_net_vdevice_props_v9_t{});
    case 11: return make(As<ncclscope_net_v11_t>(table), ncclscope_net_vdevice_props_v9_t{});
    default: return make(As<ncclscope_net_v12_t>(table), ncclscope_net_vdevice_props_v12_t{});
  }
}

ncclscope_result_t NetApi::Listen(void* ctx, int dev, void* handle, void** lc) {
  switch (version) {
    case 8: return As<ncclscope_net_v8_t>(table)->listen(dev, handle, lc);
    case 9: return As<ncclscope_net_v9_t>(table)->listen(dev, handle, lc);
    case 10: return As<ncclscope_net_v10_t>(table)->listen(dev, handle, lc);
    case 11: return As<ncclscope_net_v11_t>(table)->listen(ctx, dev, handle, lc);
    default: return As<ncclscope_net_v12_t>(table)->listen(ctx, dev, handle, lc);
  }
}

ncclscope_result_t NetApi::Connect(void* ctx, int dev, void* handle, void** sc) {
  ncclscope_net_device_handle_t* dh = nullptr;
  ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
  switch (version) {
    case 8: return As<ncclscope_net_v8_t>(table)->connect(dev, handle, sc, &dh);
    case 9: return As<ncclscope_net_v9_t>(table)->connect(dev, handle, sc, &dh);
    case 10: return As<ncclscope_net_v10_t>(table)->connect(dev, &cfg, handle, sc, &dh);
    case 11: return As<ncclscope_net_v11_t>(table)->connect(ctx, dev, handle, sc, &dh);
    default: return As<ncclscope_net_v12_t>(table)->connect(ctx, dev, handle, sc, &dh);
  }
}

ncclscope_result_t NetApi::Accept(void* lc, void** rc) {
  ncclscope_net_device_handle_t* dh = nullptr;
  NET_DISPATCH(return t->accept(lc, rc, &dh));
}
ncclscope_result_t NetApi::RegMr(void* comm, void* data, size_t size, void** mh) {
  NET_DISPATCH(return t->regMr(comm, data, size, NCCLSCOPE_PTR_HOST, mh));
}
ncclscope_result_t NetApi::DeregMr(void* comm, void* mh) { NET_DISPATCH(return t->deregMr(comm, mh)); }

ncclscope_result_t NetApi::Isend(void* comm, void* data, size_t size, int tag, void* mh, void* ph, void** req) {
  switch (version) {
    case 8:
      if (size > (1u << 30)) return NCCLSCOPE_INTERNAL_ERROR;  // NCCL's adapter refuses > 1 GiB for int sizes
      return As<ncclscope_net_v8_t>(table)->isend(comm, data, static_cast<int>(size), tag, mh, req);
    case 9: return As<ncclscope_net_v9_t>(table)->isend(comm, data, size, tag, mh, req);
    case 10: return As<ncclscope_net_v10_t>(table)->isend(comm, data, size, tag, mh, ph, req);
    case 11: return As<ncclscope_net_v11_t>(table)->isend(comm, data, size, tag, mh, ph, req);
    default: return As<ncclscope_net_v12_t>(table)->isend(comm, data, size, tag, mh, ph, req);
  }
}

ncclscope_result_t NetApi::Irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhs, void** phs,
                                 void** req) {
  switch (version) {
    case 8: {
      int isizes[64];
      for (int i = 0; i < n && i < 64; ++i) isizes[i] = static_cast<int>(sizes[i]);
      *req = nullptr;  // the v8 adapter clears the optional-completion hint
      return As<ncclscope_net_v8_t>(table)->irecv(comm, n, data, isizes, tags, mhs, req);
    }
    case 9: *req = nullptr; return As<ncclscope_net_v9_t>(table)->irecv(comm, n, data, sizes, tags, mhs, req);
    case 10: return As<ncclscope_net_v10_t>(table)->irecv(comm, n, data, sizes, tags, mhs, phs, req);
    case 11: return As<ncclscope_net_v11_t>(table)->irecv(comm, n, data, sizes, tags, mhs, phs, req);
    default: return As<ncclscope_net_v12_t>(table)->irecv(comm, n, data, sizes, tags, mhs, phs, req);
  }
}

ncclscope_result_t NetApi::Test(void* req, int* done, int* sizes) { NET_DISPATCH(return t->test(req, done, sizes)); }
ncclscope_result_t NetApi::IrecvConsumed(void* comm, int n, void* req) {
  NET_DISPATCH(return t->irecvConsumed != nullptr ? t->irecvConsumed(comm, n, req) : NCCLSCOPE_SUCCESS);
}
ncclscope_result_t NetApi::CloseSend(void* c) { NET_DISPATCH(return t->closeSend(c)); }
ncclscope_result_t NetApi::CloseRecv(void* c) { NET_DISPATCH(return t->closeRecv(c)); }
ncclscope_result_t NetApi::CloseListen(void* c) { NET_DISPATCH(return t->closeListen(c)); }

ncclscope_result_t NetApi::SetNetAttr(void* ctx, int flows, uint32_t op, uint32_t algo, uint32_t proto) {
  if (version < 11) return NCCLSCOPE_SUCCESS;
  ncclscope_net_attr_t a;
  memset(&a, 0xFF, sizeof(a));  // unset fields are -1, as NCCL leaves them
  a.sendCommAttr.maxFlowsPerPeer = a.sendCommAttr.minFlowsPerPeer = flows;
  a.recvCommAttr.maxFlowsPerPeer = a.recvCommAttr.minFlowsPerPeer = flows;
  a.op = op;
  a.algo = algo;
  a.proto = proto;
  // Optional: NCCL calls it only where the table has it (aws-ofi-nccl's v11 and v12 tables leave it NULL).
  auto set = [&](auto* t) { return t->setNetAttr != nullptr ? t->setNetAttr(ctx, &a) : NCCLSCOPE_SUCCESS; };
  if (version == 11) return set(As<ncclscope_net_v11_t>(table));
  return set(As<ncclscope_net_v12_t>(table));
}

// ---- ProfilerApi --------------------------------------------------------------------------------------
const char* ProfilerApi::Name() const {
  if (version <= 3) {  // the name slot is first in every table
    const char* n = As<ncclscope_profiler_v1_t>(table)->name;
    return n ? n : "?";
  }
  const char* n = version == 4 ? As<ncclscope_profiler_v4_t>(table)->name
                  : version == 5 ? As<ncclscope_profiler_v5_t>(table)->name
                                 : As<ncclscope_profiler_v6_t>(table)->name;
  return n ? n : "?";
}

ncclscope_result_t ProfilerApi::Init(void** ctx, uint64_t hash, int* mask, const char* comm_name, int nnodes,
                                     int nranks, int rank, ncclscope_logger_t log) {
  switch (version) {
    case 1: return As<ncclscope_profiler_v1_t>(table)->init(ctx, mask);  // v1-v3: no communicator, no logger
    case 2: return As<ncclscope_profiler_v2_t>(table)->init(ctx, mask);
    case 3: return As<ncclscope_profiler_v3_t>(table)->init(ctx, mask);
    case 4: return As<ncclscope_profiler_v4_t>(table)->init(ctx, mask, comm_name, hash, nnodes, nranks, rank, log);
    case 5: return As<ncclscope_profiler_v5_t>(table)->init(ctx, hash, mask, comm_name, nnodes, nranks, rank, log);
    default: return As<ncclscope_profiler_v6_t>(table)->init(ctx, hash, mask, comm_name, nnodes, nranks, rank, log);
  }
}

ncclscope_result_t ProfilerApi::StartEvent(void* ctx, void** handle, const ncclscope_profiler_descr_v6_t& d,
                                           uint64_t tag, bool symmetric, uint64_t comm_hash, const char* comm_name) {
  if (version <= 3) return StartLegacy(ctx, handle, d, comm_hash, comm_name);
  if (version >= 7) {
    ncclscope_profiler_descr_v7_t v7;  // v6's arms at v6's offsets, then the tag where the arm has one
    memset(&v7, 0, sizeof(v7));
    static_assert(sizeof(d) < sizeof(v7));
    memcpy(&v7, &d, sizeof(d));
    switch (d.type) {
      case NCCLSCOPE_PROFILE_COLL:
        v7.coll.userTag = tag;
        v7.coll.isSymColl = symmetric;
        v7.coll.kernelVariant = symmetric ? "Sym" : nullptr;
        break;
      case NCCLSCOPE_PROFILE_P2P: v7.p2p.userTag = tag; break;
      case NCCLSCOPE_PROFILE_COLL_API: v7.collApi.userTag = tag; break;
      case NCCLSCOPE_PROFILE_P2P_API: v7.p2pApi.userTag = tag; break;
      case NCCLSCOPE_PROFILE_CE_COLL: v7.ceColl.userTag = tag; break;
      default: break;
    }
    if (layout != AbiLayout::kNvidia) return StartRccl(ctx, handle, v7);
    return As<ncclscope_profiler_v7_t>(table)->startEvent(ctx, handle, &v7);
  }
  if (version == 6) {
    ncclscope_profiler_descr_v6_t copy = d;  // the plugin may not keep it; NCCL's lives on its stack too
    if (layout != AbiLayout::kNvidia && d.type == NCCLSCOPE_PROFILE_PROXY_OP) {
      FillRcclProxyTrace(reinterpret_cast<ncclscope_profiler_rccl_proxy_op_arm_t*>(&copy.proxyOp));
    }
    return As<ncclscope_profiler_v6_t>(table)->startEvent(ctx, handle, &copy);
  }
  if (version == 5) {
    if (d.type >= NCCLSCOPE_PROFILE_CE_COLL) return NCCLSCOPE_SUCCESS;  // CE types dropped for v5
    ncclscope_profiler_descr_v5_t v5;
    memset(&v5, 0, sizeof(v5));
    v5.type = d.type;
    v5.parentObj = d.parentObj;
    v5.rank = d.rank;
    // The v5 arms are the v6 arms at the same offsets (v6 is a strict superset).
    static_assert(sizeof(v5) == sizeof(d));
    memcpy(reinterpret_cast<char*>(&v5) + 24, reinterpret_cast<const char*>(&d) + 24, sizeof(v5) - 24);
    return As<ncclscope_profiler_v5_t>(table)->startEvent(ctx, handle, &v5);
  }
  // v4: API types and CE types do not exist; Coll/P2p are parented by the Group event.
  if (d.type > NCCLSCOPE_PROFILE_NET_PLUGIN) return NCCLSCOPE_SUCCESS;
  ncclscope_profiler_descr_v4_t v4;
  memset(&v4, 0, sizeof(v4));
  v4.type = static_cast<uint8_t>(d.type);
  v4.parentObj = d.parentObj;
  v4.rank = d.rank;
  switch (d.type) {
    case NCCLSCOPE_PROFILE_COLL:
      v4.parentObj = d.coll.parentGroup;
      v4.coll.seqNumber = d.coll.seqNumber;
      v4.coll.func = d.coll.func;
      v4.coll.sendBuff = d.coll.sendBuff;
      v4.coll.recvBuff = d.coll.recvBuff;
      v4.coll.count = d.coll.count;
      v4.coll.root = d.coll.root;
      v4.coll.datatype = d.coll.datatype;
      v4.coll.nChannels = d.coll.nChannels;
      v4.coll.nWarps = d.coll.nWarps;
      v4.coll.algo = d.coll.algo;
      v4.coll.proto = d.coll.proto;
      break;
    case NCCLSCOPE_PROFILE_P2P:
      v4.parentObj = d.p2p.parentGroup;
      v4.p2p.func = d.p2p.func;
      v4.p2p.buff = d.p2p.buff;
      v4.p2p.datatype = d.p2p.datatype;
      v4.p2p.count = d.p2p.count;
      v4.p2p.peer = d.p2p.peer;
      v4.p2p.nChannels = d.p2p.nChannels;
      break;
    case NCCLSCOPE_PROFILE_PROXY_OP: v4.proxyOp = d.proxyOp; break;
    case NCCLSCOPE_PROFILE_PROXY_STEP: v4.proxyStep = d.proxyStep; break;
    case NCCLSCOPE_PROFILE_KERNEL_CH: v4.kernelCh = d.kernelCh; break;
    case NCCLSCOPE_PROFILE_NET_PLUGIN: v4.netPlugin = d.netPlugin; break;
    default: break;
  }
  return As<ncclscope_profiler_v4_t>(table)->startEvent(ctx, handle, &v4);
}

ncclscope_result_t ProfilerApi::StartKernelPhase(void* ctx, void** handle, void* kernel_ch, int channel, int phase,
                                                 uint64_t ptimer) {
  static const char* const kNames[] = {"initial_sync", "compute", "final_sync"};
  if (version < 7) return NCCLSCOPE_SUCCESS;
  ncclscope_profiler_descr_v7_t v7;
  memset(&v7, 0, sizeof(v7));
  v7.type = NCCLSCOPE_PROFILE_KERNEL_PHASE;
  v7.parentObj = kernel_ch;
  v7.kernelPhase.channelId = static_cast<uint8_t>(channel);
  v7.kernelPhase.phaseId = static_cast<uint8_t>(phase);
  v7.kernelPhase.phaseName = kNames[phase];
  v7.kernelPhase.pTimer = ptimer;
  if (layout != AbiLayout::kNvidia) return StartRccl(ctx, handle, v7);
  return As<ncclscope_profiler_v7_t>(table)->startEvent(ctx, handle, &v7);
}

ncclscope_result_t ProfilerApi::StopEvent(void* h) {
  switch (version) {
    case 1: return As<ncclscope_profiler_v1_t>(table)->stopEvent(h);
    case 2: return As<ncclscope_profiler_v2_t>(table)->stopEvent(h);
    case 3: return As<ncclscope_profiler_v3_t>(table)->stopEvent(h);
    case 4: return As<ncclscope_profiler_v4_t>(table)->stopEvent(h);
    case 5: return As<ncclscope_profiler_v5_t>(table)->stopEvent(h);
    default: return As<ncclscope_profiler_v6_t>(table)->stopEvent(h);
  }
}

ncclscope_result_t ProfilerApi::RecordEventState(void* h, ncclscope_profiler_state_t s,
                                                 ncclscope_profiler_state_args_t* a) {
  ncclscope_profiler_rccl_state_args_t rccl;  // RCCL's union is 24 bytes: what a plugin gets is RCCL's
  if (layout != AbiLayout::kNvidia && a != nullptr) {
    memset(&rccl, 0, sizeof(rccl));
    memcpy(&rccl, a, sizeof(*a));
    a = reinterpret_cast<ncclscope_profiler_state_args_t*>(&rccl);
  }
  if (version <= 3) {
    // NCCL's v1-v3 adapters pass states 8-18 only, with the 16-byte union: ProxyStep's zeroed, ProxyCtrl's count.
    if (s < NCCLSCOPE_STATE_PROXY_STEP_SEND_GPU_WAIT || s > NCCLSCOPE_STATE_PROXY_CTRL_APPEND_END) {
      return NCCLSCOPE_SUCCESS;
    }
    ncclscope_profiler_state_args_v1_t old_args;
    memset(&old_args, 0, sizeof(old_args));
    if (a != nullptr && s >= NCCLSCOPE_STATE_PROXY_CTRL_IDLE) {
      old_args.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
    }
    ncclscope_profiler_state_args_v1_t* pa = a != nullptr ? &old_args : nullptr;
    if (version == 1) return As<ncclscope_profiler_v1_t>(table)->recordEventState(h, s, pa);
    if (version == 2) return As<ncclscope_profiler_v2_t>(table)->recordEventState(h, s, pa);
    return As<ncclscope_profiler_v3_t>(table)->recordEventState(h, s, pa);
  }
  switch (version) {
    case 4:
      if (s == NCCLSCOPE_STATE_GROUP_START_API_STOP || s == NCCLSCOPE_STATE_GROUP_END_API_START) return NCCLSCOPE_SUCCESS;
      return As<ncclscope_profiler_v4_t>(table)->recordEventState(h, s, a);
    case 5: return As<ncclscope_profiler_v5_t>(table)->recordEventState(h, s, a);
    default: return As<ncclscope_profiler_v6_t>(table)->recordEventState(h, s, a);
  }
}

ncclscope_result_t ProfilerApi::Finalize(void* ctx) {
  switch (version) {
    case 1: return As<ncclscope_profiler_v1_t>(table)->finalize(ctx);
    case 2: return As<ncclscope_profiler_v2_t>(table)->finalize(ctx);
    case 3: return As<ncclscope_profiler_v3_t>(table)->finalize(ctx);
    case 4: return As<ncclscope_profiler_v4_t>(table)->finalize(ctx);
    case 5: return As<ncclscope_profiler_v5_t>(table)->finalize(ctx);
    default: return As<ncclscope_profiler_v6_t>(table)->finalize(ctx);
  }
}

// ---- PluginHost ---------------------------------------------------------------------------------------
PluginHost& PluginHost::Instance() {
  static PluginHost host;
  return host;
}

namespace {
std::atomic<int> g_version_code{23007};  // what ncclGetVersion answers: the emulated release
}  // namespace

// NCCL's own entry point, exported from the sim's executable (tools/sim/CMakeLists.txt) so that a plugin finds it
// in the process exactly as under a real NCCL.
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  if (version == nullptr) return 4;  // ncclInvalidArgument
  *version = g_version_code.load(std::memory_order_relaxed);
  return 0;
}

void PluginHost::Configure(NcclVersion v, std::string net_value, std::string profiler_value, bool net_set,
                           bool prof_set) {
  version_ = v;
  // One patch release of each line (2.26.2 is the NCCL PyTorch 2.7 bundles).
  g_version_code.store(v == NcclVersion::k2_23   ? 22304
                       : v == NcclVersion::k2_25 ? 22501
                       : v == NcclVersion::k2_26 ? 22602
                       : v == NcclVersion::k2_27 ? 22703
                       : v == NcclVersion::k2_28 ? 22809
                       : v == NcclVersion::k2_30 ? 23007
                                                 : 23102,
                       std::memory_order_relaxed);
  net_value_ = std::move(net_value);
  profiler_value_ = std::move(profiler_value);
  net_set_ = net_set;
  profiler_set_ = prof_set;
}

NetApi* PluginHost::AcquireNet(std::string* error) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (net_lib_ == nullptr) {
    auto names = PluginCandidates("net", net_set_ ? net_value_.c_str() : nullptr);
    if (names.empty()) {
      *error = "NCCL_NET_PLUGIN=none: the sim has no internal IB/Socket transport to fall back to";
      return nullptr;
    }
    std::string opened, errs;
    void* h = OpenFirst("NET", names, &opened, &errs);
    if (h == nullptr) {
      *error = "could not load a net plugin (tried " + errs + ")";
      return nullptr;
    }
    NetApi api;
    for (const auto& sym : NetProbeOrder(version_)) {
      int v = atoi(sym.c_str() + strlen("ncclNetPlugin_v"));
      if (v > net_max_version_) continue;
      void* t = dlsym(h, sym.c_str());
      if (t == nullptr) continue;
      if (v < 8) {
        *error = opened + ": found only " + sym + ", which the sim cannot drive (it supports net v8..v12)";
        dlclose(h);
        return nullptr;
      }
      api.version = v;
      api.symbol = sym;
      api.table = t;
      break;
    }
    if (api.table == nullptr) {
      std::string probed;
      for (const auto& s : NetProbeOrder(version_)) probed += (probed.empty() ? "" : ", ") + s;
      *error = "External network plugin " + opened + " is unsupported: none of " + probed + " found";
      dlclose(h);
      return nullptr;
    }
    api.lib_name = opened;
    net_ = api;
    net_lib_ = h;
    net_load_init_done_ = false;
    SIM_INFO(NCCLSCOPE_SUBSYS_INIT | NCCLSCOPE_SUBSYS_NET, "NET/Plugin: Loaded net plugin %s (%s) from %s",
             net_.Name(), net_.symbol.c_str(), opened.c_str());
  }
  ++net_refs_;
  return &net_;
}

void PluginHost::ReleaseNet() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (net_refs_ > 0 && --net_refs_ == 0 && net_lib_ != nullptr) {
    dlclose(net_lib_);
    net_lib_ = nullptr;
    net_load_init_done_ = false;
  }
}

ProfilerApi* PluginHost::AcquireProfiler(std::string* reason) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (prof_failed_) {
    *reason = "an earlier profiler load failed (sticky for the process)";
    return nullptr;
  }
  if (prof_lib_ == nullptr) {
    auto names = PluginCandidates("profiler", profiler_set_ ? profiler_value_.c_str() : nullptr);
    if (profiler_set_ && names.empty()) {
      *reason = "NCCL_PROFILER_PLUGIN=none";
      prof_failed_ = true;
      return nullptr;
    }
    std::string opened, errs;
    void* h = OpenFirst("PROFILER", names, &opened, &errs);
    if (h == nullptr && !net_.lib_name.empty()) {
      // NCCL's fallback: dlopen the net plugin library again (adds a reference).
      h = dlopen(net_.lib_name == "STATIC_PLUGIN" ? nullptr : net_.lib_name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h != nullptr) opened = net_.lib_name + " (net plugin fallback)";
    }
    if (h == nullptr) {
      *reason = "no profiler library (tried " + errs + ")";
      prof_failed_ = true;
      return nullptr;
    }
    ProfilerApi api;
    for (const auto& sym : ProfilerProbeOrder(version_)) {
      void* t = dlsym(h, sym.c_str());
      if (t == nullptr) continue;
      int v = atoi(sym.c_str() + strlen("ncclProfiler_v"));

      api.version = v;
      api.symbol = sym;
      api.table = t;
      break;
    }
    if (api.table == nullptr) {
      if (reason->empty()) {
        std::string probed;
        for (const auto& s : ProfilerProbeOrder(version_)) probed += (probed.empty() ? "" : ", ") + s;
        *reason = opened + " has none of " + probed;
      }
      SIM_INFO(NCCLSCOPE_SUBSYS_INIT, "PROFILER/Plugin: %s", reason->c_str());
      dlclose(h);
      prof_failed_ = true;
      return nullptr;
    }
    api.lib_name = opened;
    api.layout = abi_layout_;
    prof_ = api;
    prof_lib_ = h;
    SIM_INFO(NCCLSCOPE_SUBSYS_INIT, "PROFILER/Plugin: Loaded %s (%s) from %s", prof_.Name(), prof_.symbol.c_str(),
             opened.c_str());
  }
  ++prof_refs_;
  loaded_prof_.store(&prof_, std::memory_order_release);
  return &prof_;
}

void PluginHost::ReleaseProfiler() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (prof_refs_ > 0 && --prof_refs_ == 0 && prof_lib_ != nullptr) {
    loaded_prof_.store(nullptr, std::memory_order_release);
    dlclose(prof_lib_);
    prof_lib_ = nullptr;
  }
}

}  // namespace ncclscope::sim
