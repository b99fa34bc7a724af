// Loads NCCL net and profiler plugins exactly as NCCL 2.23 / 2.25 / 2.26 / 2.28 / 2.30 / 2.31 do (docs/nccl-abi.md#loading): the name rules
// (NAME, libnccl-net-NAME.so, a path, lib*.so, none, STATIC_PLUGIN), the symbol probe order of the chosen
// NCCL version, the profiler's fallback to the net library, per-communicator init (emulated once per load
// for net v8–v10), reference counting, and dlclose after the last communicator.
// NetApi/ProfilerApi are version-neutral facades over whichever table was bound.
// Thread-safety: PluginHost is process-wide and guarded by one mutex (taken at comm init/destroy only).
// NetApi/ProfilerApi calls are as thread-safe as the plugin behind them.
#ifndef NCCLSCOPE_TOOLS_SIM_PLUGIN_LOADER_H_
#define NCCLSCOPE_TOOLS_SIM_PLUGIN_LOADER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ncclscope/abi/net.h"
#include "ncclscope/abi/profiler.h"
#include "ncclscope/abi/profiler_rccl.h"
#include "ncclscope/abi/profiler_v1_v3.h"

namespace ncclscope::sim {

// The emulated NCCL release. 2.23, 2.25, 2.26 and 2.27 are the releases whose newest profiler table is v1, v2, v3
// and v4 (and newest net table v8, v9, v10 and v10).
enum class NcclVersion { k2_23, k2_25, k2_26, k2_27, k2_28, k2_30, k2_31 };
// "2.23" … "2.31".
const char* NcclVersionName(NcclVersion v);

// --abi-layout: whose copy of the profiler headers the emulated library was built with. RCCL's differ from NVIDIA's
// (include/ncclscope/abi/profiler_rccl.h): kRccl appends to NVIDIA's v7, kRcclUntagged is v7 without userTag.
enum class AbiLayout { kNvidia, kRccl, kRcclUntagged };

// The dlopen candidates NCCL tries for one env value (`kind` is "net" or "profiler"). An empty list means
// "none". The single entry "" means dlopen(NULL) (STATIC_PLUGIN).
std::vector<std::string> PluginCandidates(const std::string& kind, const char* value);
// The symbols NCCL probes, newest first, for this NCCL version (including v7/v6 or v3..v1, which the sim
// recognises but cannot drive).
std::vector<std::string> NetProbeOrder(NcclVersion v);
std::vector<std::string> ProfilerProbeOrder(NcclVersion v);

class NetApi {
 public:
  int version = 0;
  std::string lib_name;  // what dlopen succeeded on
  std::string symbol;
  const void* table = nullptr;

  const char* Name() const;
  ncclscope_result_t Init(void** ctx, uint64_t comm_id, ncclscope_logger_t log, ncclscope_profiler_callback_t cb);
  ncclscope_result_t Finalize(void* ctx);
  ncclscope_result_t Devices(int* n);
  // Fills the fields the sim uses; returns the device type through *type.
  ncclscope_result_t GetProperties(int dev, std::string* name, int* type, int* max_recvs, int* speed);
  // NIC fusion as NCCL's topology code does it (v9+; NCCLSCOPE_INVALID_USAGE before v9 or without it).
  ncclscope_result_t MakeVDevice(const std::vector<int>& devs, int* vdev);
  ncclscope_result_t Listen(void* ctx, int dev, void* handle, void** listen_comm);
  ncclscope_result_t Connect(void* ctx, int dev, void* handle, void** send_comm);
  ncclscope_result_t Accept(void* listen_comm, void** recv_comm);
  ncclscope_result_t RegMr(void* comm, void* data, size_t size, void** mh);
  ncclscope_result_t DeregMr(void* comm, void* mh);
  ncclscope_result_t Isend(void* comm, void* data, size_t size, int tag, void* mh, void* phandle, void** req);
  ncclscope_result_t Irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhs, void** phandles,
                           void** req);
  ncclscope_result_t Test(void* req, int* done, int* sizes);
  // After the "GPU" consumed a completed receive, as NCCL does: only where the table has the entry.
  ncclscope_result_t IrecvConsumed(void* comm, int n, void* req);
  ncclscope_result_t CloseSend(void* c);
  ncclscope_result_t CloseRecv(void* c);
  ncclscope_result_t CloseListen(void* c);
  // v11+: flows per peer for both directions and the masks of the operation about to run (1 << ncclFunc,
  // 1 << algorithm, 1 << protocol; all ones = any); a no-op before v11.
  ncclscope_result_t SetNetAttr(void* ctx, int flows, uint32_t op, uint32_t algo, uint32_t proto);
  bool PerCommInit() const { return version >= 11; }
};

class ProfilerApi {
 public:
  int version = 0;
  std::string lib_name;
  std::string symbol;
  const void* table = nullptr;
  AbiLayout layout = AbiLayout::kNvidia;

  const char* Name() const;
  ncclscope_result_t Init(void** ctx, uint64_t comm_hash, int* mask, const char* comm_name, int nnodes, int nranks,
                          int rank, ncclscope_logger_t log);
  // `d` is NCCL's newest descriptor; translated to the bound version (v4 drops API events: returns with
  // *handle untouched).
  // `tag`: the v7 user tag of CollApi/P2pApi/Coll/P2p events (dropped below v7).
  // v7: `tag` is the operation's user tag, `symmetric` sets a Coll's isSymColl (ignored below v7).
  // v1-v3: `comm_hash` and `comm_name` go into Coll and P2p descriptors (their init named no communicator).
  ncclscope_result_t StartEvent(void* ctx, void** handle, const ncclscope_profiler_descr_v6_t& d, uint64_t tag = 0,
                                bool symmetric = false, uint64_t comm_hash = 0, const char* comm_name = nullptr);
  // v7 KernelPhase under a KernelCh handle (a no-op below v7): phase 0 initial_sync, 1 compute, 2 final_sync.
  ncclscope_result_t StartKernelPhase(void* ctx, void** handle, void* kernel_ch, int channel, int phase,
                                      uint64_t ptimer);
  ncclscope_result_t StopEvent(void* handle);
  ncclscope_result_t RecordEventState(void* handle, ncclscope_profiler_state_t s, ncclscope_profiler_state_args_t* a);
  ncclscope_result_t Finalize(void* ctx);
  // RCCL layouts (v6+): a ProxyDiag counter update on a ProxyOp handle, as RCCL sends while its ProxyDiag bit is on
  // (set by RCCL's RAS client or a proxy-trace plugin, never by ncclscope). A no-op for NVIDIA's layout.
  ncclscope_result_t RecordRcclProxyDiag(void* proxy_op_handle);

 private:
  const ncclscope_profiler_v7_t* As7() const { return static_cast<const ncclscope_profiler_v7_t*>(table); }
  // tools/sim/rccl_abi.cc: `v7` (NVIDIA's layout, tag included) rebuilt in this RCCL layout and started.
  ncclscope_result_t StartRccl(void* ctx, void** handle, const ncclscope_profiler_descr_v7_t& v7);
  // tools/sim/legacy_profiler_abi.cc: `d` as NCCL 2.23-2.26 deliver it to a v1, v2 or v3 table.
  ncclscope_result_t StartLegacy(void* ctx, void** handle, const ncclscope_profiler_descr_v6_t& d, uint64_t comm_hash,
                                 const char* comm_name);
};

// RCCL layouts: the proxy-trace fields RCCL appends to ProxyOp, filled with the sentinel kRcclSentinel (RCCL fills
// them while its ProxyDiag bit is on): a plugin that read them as NVIDIA fields would show these values.
inline constexpr uint64_t kRcclSentinel = 0x5e5e5e5e5e5e5e5eull;
void FillRcclProxyTrace(ncclscope_profiler_rccl_proxy_op_arm_t* arm);

// Process-wide plugin state, as NCCL keeps it.
class PluginHost {
 public:
  static PluginHost& Instance();
  void Configure(NcclVersion v, std::string net_value, std::string profiler_value, bool net_value_set,
                 bool profiler_value_set);
  NcclVersion version() const { return version_; }
  // Emulates an older NCCL whose newest net ABI is `v` (8..12): symbols above it are not probed.
  void SetNetMaxVersion(int v) { net_max_version_ = v; }
  // --abi-layout: for RCCL layouts loads the fake librccl.so (rccl_abi.cc) that makes the process look like an
  // RCCL job; false with *error when it cannot be loaded.
  bool SetAbiLayout(AbiLayout layout, std::string* error);

  // At each communicator init: loads (once) and returns the net API; an error string on failure.
  NetApi* AcquireNet(std::string* error);
  void ReleaseNet();
  // After the net: loads the profiler (refcounted), NULL if none / failed (sticky), with a reason.
  ProfilerApi* AcquireProfiler(std::string* reason);
  void ReleaseProfiler();
  // The loaded profiler, or NULL: where NCCL's net-plugin callback sends stop and update events, whatever
  // pHandle says (our net plugin passes NULL with them, as real NCCL allows).
  ProfilerApi* LoadedProfiler() { return loaded_prof_.load(std::memory_order_acquire); }
  // Net v8–v10 have one init per load: the host emulates per-comm init for them.
  bool NetLoadInitDone() const { return net_load_init_done_; }
  void SetNetLoadInitDone() { net_load_init_done_ = true; }

 private:
  NcclVersion version_ = NcclVersion::k2_30;
  std::string net_value_, profiler_value_;
  bool net_set_ = false, profiler_set_ = false;
  void* net_lib_ = nullptr;
  void* prof_lib_ = nullptr;
  int net_refs_ = 0, prof_refs_ = 0;
  bool prof_failed_ = false;
  bool net_load_init_done_ = false;
  int net_max_version_ = 12;
  AbiLayout abi_layout_ = AbiLayout::kNvidia;
  NetApi net_;
  ProfilerApi prof_;
  std::atomic<ProfilerApi*> loaded_prof_{nullptr};
};

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_PLUGIN_LOADER_H_
