// --abi-layout rccl|rccl-untagged: the emulated library is RCCL, whose profiler headers differ from NVIDIA's
// (include/ncclscope/abi/profiler_rccl.h). Builds the descriptors and state arguments in RCCL's layouts and makes
// the process look like an RCCL job by loading a fake librccl.so (tools/sim/fake_rccl/). No RCCL can run here.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstring>

#include "plugin_loader.h"

namespace ncclscope::sim {

void FillRcclProxyTrace(ncclscope_profiler_rccl_proxy_op_arm_t* arm) {
  arm->commHash = kRcclSentinel;
  arm->opCount = static_cast<int64_t>(kRcclSentinel);
  const auto word = static_cast<int32_t>(kRcclSentinel);
  arm->traceFuncIdx = arm->traceProtocol = arm->tracePattern = arm->rawProxyNsteps = word;
  arm->traceTotalBytes = arm->proxyNbytes = static_cast<uint32_t>(kRcclSentinel);
}

ncclscope_result_t ProfilerApi::StartRccl(void* ctx, void** handle, const ncclscope_profiler_descr_v7_t& v7) {
  auto start = [&](void* descr) {
    return As7()->startEvent(ctx, handle, static_cast<ncclscope_profiler_descr_v7_t*>(descr));
  };
  if (layout == AbiLayout::kRccl) {
    // NVIDIA's v7 as the prefix; only ProxyOp grows (inside the same 136 bytes).
    ncclscope_profiler_rccl_descr_v7_t r;
    static_assert(sizeof(r) == sizeof(v7));
    memcpy(&r, &v7, sizeof(r));
    if (v7.type == NCCLSCOPE_PROFILE_PROXY_OP) FillRcclProxyTrace(&r.proxyOp);
    return start(&r);
  }
  // Untagged: 128 bytes on RCCL's stack. What lies past them is not the descriptor: the sentinel 0xEE stands for
  // it, so a reader of NVIDIA's coll.userTag (offset 128) would find tag 0xeeeeeeeeeeeeeeee.
  struct {
    ncclscope_profiler_rccl_descr_v7_untagged_t d;
    unsigned char beyond[16];
  } stack;
  memset(&stack, 0xee, sizeof(stack));
  // v7's first 128 bytes are the untagged layout's, except the tags that fall inside them: cleared.
  memcpy(&stack.d, &v7, sizeof(stack.d));
  auto* inside = reinterpret_cast<ncclscope_profiler_descr_v7_t*>(&stack);  // writes below offset 128 only
  switch (v7.type) {
    case NCCLSCOPE_PROFILE_COLL_API: inside->collApi.userTag = 0; break;
    case NCCLSCOPE_PROFILE_P2P_API: inside->p2pApi.userTag = 0; break;
    case NCCLSCOPE_PROFILE_P2P: inside->p2p.userTag = 0; break;
    case NCCLSCOPE_PROFILE_CE_COLL: inside->ceColl.userTag = 0; break;
    default: break;
  }
  static_assert(sizeof(stack) >= sizeof(ncclscope_profiler_descr_v7_t));
  return start(&stack);
}

ncclscope_result_t ProfilerApi::RecordRcclProxyDiag(void* h) {
  if (layout == AbiLayout::kNvidia || h == nullptr || version < 6) return NCCLSCOPE_SUCCESS;
  ncclscope_profiler_rccl_state_args_t a;
  memset(&a, 0, sizeof(a));
  a.proxyDiag.counterKind = 0x5e;
  a.proxyDiag.flags = 1;
  a.proxyDiag.value = a.proxyDiag.value2 = static_cast<int64_t>(kRcclSentinel);
  // RCCL's numbering: 32 next to its v7, 31 (NVIDIA's KernelPhaseStop) in its v6-only releases.
  const int state = version >= 7 ? NCCLSCOPE_RCCL_STATE_PROXY_DIAG_UPDATE : NCCLSCOPE_RCCL_V6_STATE_PROXY_DIAG_UPDATE;
  auto* args = reinterpret_cast<ncclscope_profiler_state_args_t*>(&a);
  auto s = static_cast<ncclscope_profiler_state_t>(state);
  if (version >= 7) return As7()->recordEventState(h, s, args);
  return static_cast<const ncclscope_profiler_v6_t*>(table)->recordEventState(h, s, args);
}

bool PluginHost::SetAbiLayout(AbiLayout layout, std::string* error) {
  abi_layout_ = layout;
  if (layout == AbiLayout::kNvidia) return true;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) {
    *error = "--abi-layout: cannot find the sim's own directory";
    return false;
  }
  exe[n] = '\0';
  std::string dir(exe);
  dir.resize(dir.rfind('/'));
  // Two fakes: RCCL with NCCL 2.31's per-call config API (the user tag's carrier), and one without it.
  const std::string lib =
      dir + (layout == AbiLayout::kRccl ? "/fake-rccl/librccl.so" : "/fake-rccl-untagged/librccl.so");
  if (dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {  // kept for the life of the process, as RCCL is
    const char* e = dlerror();
    *error = "--abi-layout: cannot load " + lib + ": " + (e != nullptr ? e : "?");
    return false;
  }
  return true;
}

}  // namespace ncclscope::sim
