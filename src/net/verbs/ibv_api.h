// libibverbs, loaded at run time. The plugin must load on hosts without rdma-core, so we never link
// libibverbs: LoadIbvApi() dlopens "libibverbs.so.1" once and resolves a table of function pointers.
// <infiniband/verbs.h> is included for its types only.
//
// Which symbols, and why (rdma-core exports versioned symbols; we bind the IBVERBS_1.1 ABI the header
// of every rdma-core since 2016 compiles against, never the IBVERBS_1.0 compatibility aliases):
//  - get_device_list, free_device_list, get_device_name, open_device, close_device, query_device,
//    query_gid, alloc_pd, dealloc_pd, reg_mr, dereg_mr, create_cq, destroy_cq, create_qp, modify_qp,
//    destroy_qp, get_async_event, ack_async_event, event_type_str, wc_status_str, port_state_str:
//    "ibv_<name>"@IBVERBS_1.1 (required).
//    verbs.h turns ibv_get_device_list into an inline that first registers static providers; the
//    exported function is what a dynamically linked program ends up calling anyway.
//  - ibv_query_port: verbs.h defines it as a macro over the inline ___ibv_query_port, which calls the
//    context's extended query_port op with sizeof(ibv_port_attr) and only falls back to the exported
//    symbol, whose argument is the older, shorter _compat_ibv_port_attr. QueryPort() below does the same.
//  - ibv_reg_mr: verbs.h's macro sends registrations with IBV_ACCESS_OPTIONAL_RANGE flags (relaxed
//    ordering) to ibv_reg_mr_iova2; pass such flags only through reg_mr_iova2.
//  - Optional (null when the library predates them): reg_mr_iova2@IBVERBS_1.8,
//    reg_dmabuf_mr@IBVERBS_1.12, query_ece/set_ece@IBVERBS_1.10.
//  - ibv_post_send, ibv_post_recv and ibv_poll_cq are static inlines that jump through context->ops;
//    they have no symbol to resolve, and the data path calls the header's inlines directly.
//
// Thread-safety: LoadIbvApi() is safe from any thread (one-time load); the table is immutable after.
#ifndef NCCLSCOPE_NET_VERBS_IBV_API_H_
#define NCCLSCOPE_NET_VERBS_IBV_API_H_

#include <infiniband/verbs.h>

#include "common/status.h"

namespace ncclscope::net::verbs {

inline constexpr const char* kIbverbsSoname = "libibverbs.so.1";

struct IbvApi {
  ibv_device** (*get_device_list)(int* num_devices) = nullptr;
  void (*free_device_list)(ibv_device** list) = nullptr;
  const char* (*get_device_name)(ibv_device* device) = nullptr;
  ibv_context* (*open_device)(ibv_device* device) = nullptr;
  int (*close_device)(ibv_context* context) = nullptr;
  int (*query_device)(ibv_context* context, ibv_device_attr* attr) = nullptr;
  // The exported compat entry point; call QueryPort() instead.
  int (*query_port_compat)(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* attr) = nullptr;
  int (*query_gid)(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*alloc_pd)(ibv_context* context) = nullptr;
  int (*dealloc_pd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  ibv_mr* (*reg_mr_iova2)(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                          unsigned int access) = nullptr;  // optional
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                           int access) = nullptr;  // optional
  int (*dereg_mr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                       int comp_vector) = nullptr;
  int (*destroy_cq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) = nullptr;
  int (*destroy_qp)(ibv_qp* qp) = nullptr;
  // The device's affiliated and unaffiliated events (async_events.h); every event got must be acked.
  int (*get_async_event)(ibv_context* context, ibv_async_event* event) = nullptr;
  void (*ack_async_event)(ibv_async_event* event) = nullptr;
  int (*query_ece)(ibv_qp* qp, ibv_ece* ece) = nullptr;  // optional
  int (*set_ece)(ibv_qp* qp, ibv_ece* ece) = nullptr;    // optional
  const char* (*event_type_str)(ibv_event_type event) = nullptr;
  const char* (*wc_status_str)(ibv_wc_status status) = nullptr;
  const char* (*port_state_str)(ibv_port_state state) = nullptr;

  // ibv_query_port as verbs.h's inline does it: the extended op with our struct's size where the
  // provider has one, else the compat symbol over a zeroed struct. Returns 0 or an errno value.
  int QueryPort(ibv_context* context, uint8_t port_num, ibv_port_attr* attr) const;
};

// The process-wide table, loaded at the first call. An error names the missing library or symbol;
// callers treat it as "no verbs devices" and keep the plugin usable.
Result<const IbvApi*> LoadIbvApi();

// Loads a fresh table from `soname` without caching it (tests point it at a missing library). The
// library handle is kept open for the life of the process on success and closed on failure.
Result<IbvApi> LoadIbvApiFrom(const char* soname);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_IBV_API_H_
