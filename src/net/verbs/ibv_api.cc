#include "net/verbs/ibv_api.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"

namespace ncclscope::net::verbs {
namespace {

constexpr const char* kBaseVersion = "IBVERBS_1.1";

// dlvsym pins the ABI version; the unversioned lookup covers a libibverbs built without symbol
// versions (never seen in rdma-core, cheap to allow).
void* FindSymbol(void* handle, const char* name, const char* version) {
  void* sym = dlvsym(handle, name, version);
  if (sym == nullptr) sym = dlsym(handle, name);
  return sym;
}

template <class Fn>
bool Bind(void* handle, const char* name, const char* version, Fn* slot) {
  *slot = reinterpret_cast<Fn>(FindSymbol(handle, name, version));
  return *slot != nullptr;
}

}  // namespace

int IbvApi::QueryPort(ibv_context* context, uint8_t port_num, ibv_port_attr* attr) const {
  // verbs_get_ctx_op reads the provider's extended context; it is a macro over struct fields, so it
  // needs no symbol from the library.
  verbs_context* vctx = verbs_get_ctx_op(context, query_port);
  if (vctx != nullptr) {
    return vctx->query_port(context, port_num, attr, sizeof(*attr));
  }
  std::memset(attr, 0, sizeof(*attr));
  if (query_port_compat == nullptr) return ENOSYS;
  return query_port_compat(context, port_num, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

Result<IbvApi> LoadIbvApiFrom(const char* soname) {
  dlerror();
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return SystemError(std::string(soname) + " not found: install rdma-core / ibverbs-providers (" +
                       (why != nullptr ? why : "dlopen failed") + ")");
  }
  IbvApi api;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto* slot) {
    if (!Bind(handle, name, kBaseVersion, slot) && missing == nullptr) missing = name;
  };
  need("ibv_get_device_list", &api.get_device_list);
  need("ibv_free_device_list", &api.free_device_list);
  need("ibv_get_device_name", &api.get_device_name);
  need("ibv_open_device", &api.open_device);
  need("ibv_close_device", &api.close_device);
  need("ibv_query_device", &api.query_device);
  need("ibv_query_port", &api.query_port_compat);
  need("ibv_query_gid", &api.query_gid);
  need("ibv_alloc_pd", &api.alloc_pd);
  need("ibv_dealloc_pd", &api.dealloc_pd);
  need("ibv_reg_mr", &api.reg_mr);
  need("ibv_dereg_mr", &api.dereg_mr);
  need("ibv_create_cq", &api.create_cq);
  need("ibv_destroy_cq", &api.destroy_cq);
  need("ibv_create_qp", &api.create_qp);
  need("ibv_modify_qp", &api.modify_qp);
  need("ibv_destroy_qp", &api.destroy_qp);
  need("ibv_get_async_event", &api.get_async_event);
  need("ibv_ack_async_event", &api.ack_async_event);
  need("ibv_event_type_str", &api.event_type_str);
  need("ibv_wc_status_str", &api.wc_status_str);
  need("ibv_port_state_str", &api.port_state_str);
  if (missing != nullptr) {
    dlclose(handle);
    return SystemError(std::string(soname) + " lacks " + missing + "@" + kBaseVersion +
                       ": rdma-core is too old or not rdma-core");
  }
  // Optional entry points, each pinned to the version that introduced it.
  Bind(handle, "ibv_reg_mr_iova2", "IBVERBS_1.8", &api.reg_mr_iova2);
  Bind(handle, "ibv_reg_dmabuf_mr", "IBVERBS_1.12", &api.reg_dmabuf_mr);
  Bind(handle, "ibv_query_ece", "IBVERBS_1.10", &api.query_ece);
  Bind(handle, "ibv_set_ece", "IBVERBS_1.10", &api.set_ece);
  // The handle stays open: the table's pointers live as long as the process (we link -z nodelete).
  return api;
}

Result<const IbvApi*> LoadIbvApi() {
  // A function-local static is initialised once, thread-safely; a failure is remembered too, so a
  // host without rdma-core pays for one dlopen attempt and logs once.
  static const Result<IbvApi> loaded = [] {
    Result<IbvApi> r = LoadIbvApiFrom(kIbverbsSoname);
    if (r.ok()) {
      NCCLSCOPE_INFO(subsys::kNet, "NET/verbs: loaded %s (reg_mr_iova2 %s, reg_dmabuf_mr %s, ece %s)",
                     kIbverbsSoname, r->reg_mr_iova2 ? "yes" : "no", r->reg_dmabuf_mr ? "yes" : "no",
                     r->query_ece ? "yes" : "no");
    } else {
      NCCLSCOPE_INFO(subsys::kNet, "NET/verbs: %s", r.status().message().c_str());
    }
    return r;
  }();
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

}  // namespace ncclscope::net::verbs
