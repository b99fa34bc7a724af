#include "net/chain/inner_plugin.h"

#include <dlfcn.h>

#include <climits>
#include <type_traits>

#include "common/inner_call.h"
#include "common/plugin_library.h"

namespace ncclscope::net::chain {
namespace {

constexpr size_t kOldMaxP2pBytes = size_t{1} << 30;    // what NCCL assumes for a plugin of v8 or older
constexpr size_t kOldMaxCollBytes = size_t{512} << 20;

template <int V> struct TableOf;
template <> struct TableOf<8> { using T = ncclscope_net_v8_t; using Props = ncclscope_net_properties_v8_t; using VProps = void; };
template <> struct TableOf<9> { using T = ncclscope_net_v9_t; using Props = ncclscope_net_properties_v9_t; using VProps = ncclscope_net_vdevice_props_v9_t; };
template <> struct TableOf<10> { using T = ncclscope_net_v10_t; using Props = ncclscope_net_properties_v9_t; using VProps = ncclscope_net_vdevice_props_v9_t; };
template <> struct TableOf<11> { using T = ncclscope_net_v11_t; using Props = ncclscope_net_properties_v11_t; using VProps = ncclscope_net_vdevice_props_v9_t; };
template <> struct TableOf<12> { using T = ncclscope_net_v12_t; using Props = ncclscope_net_properties_v12_t; using VProps = ncclscope_net_vdevice_props_v12_t; };

// One version's table behind the neutral interface: each entry translates its arguments and calls the inner.
template <int V>
class Table final : public InnerPlugin {
  using T = typename TableOf<V>::T;
  using Props = typename TableOf<V>::Props;

 public:
  Table(const T* t, std::string path) : t_(t) {
    version_ = V;
    name_ = t->name != nullptr ? t->name : "(unnamed)";
    path_ = std::move(path);
    who_ = "the wrapped net plugin '" + name_ + "' (" + path_ + ")";
    if constexpr (V >= 9) has_make_vdevice_ = t->makeVDevice != nullptr;
    has_irecv_consumed_ = t->irecvConsumed != nullptr;
  }

  ncclscope_result_t Init(void** ctx, uint64_t comm_id, int traffic_class, ncclscope_logger_t logger,
                          ncclscope_profiler_callback_t prof) override {
    if constexpr (V <= 9) {
      return t_->init(logger);
    } else if constexpr (V == 10) {
      return t_->init(logger, prof);
    } else {
      ncclscope_net_comm_config_t cfg{traffic_class};
      return t_->init(ctx, comm_id, &cfg, logger, prof);
    }
  }
  ncclscope_result_t Finalize(void* ctx) override {
    if constexpr (V >= 11) return t_->finalize(ctx);
    return NCCLSCOPE_SUCCESS;
  }
  ncclscope_result_t Devices(int* ndev) override { return t_->devices(ndev); }

  ncclscope_result_t GetProperties(int dev, NetProperties* out) override {
    Props p{};
    if constexpr (V >= 12) p.railId = p.planeId = NCCLSCOPE_NET_ID_UNDEF;
    ncclscope_result_t r = t_->getProperties(dev, &p);
    if (r != NCCLSCOPE_SUCCESS) return r;
    out->name = p.name != nullptr ? p.name : "inner" + std::to_string(dev);
    out->pci_path = p.pciPath != nullptr ? p.pciPath : "";
    out->guid = p.guid;
    out->ptr_support = p.ptrSupport;
    out->reg_is_global = p.regIsGlobal != 0;
    out->speed_mbps = p.speed;
    out->port = p.port;
    out->latency_us = p.latency;
    out->max_comms = p.maxComms;
    out->max_recvs = p.maxRecvs;
    out->net_device_type = p.netDeviceType;
    out->net_device_version = p.netDeviceVersion;
    out->vdev_count = 1;
    out->vdevs[0] = dev;
    out->max_p2p_bytes = kOldMaxP2pBytes;
    out->max_coll_bytes = kOldMaxCollBytes;
    out->max_multi_request_size = 1;
    out->rail_id = out->plane_id = NCCLSCOPE_NET_ID_UNDEF;
    if constexpr (V >= 9) {
      out->force_flush = p.forceFlush != 0;
      const int k = static_cast<int>(sizeof(p.vProps.devs) / sizeof(p.vProps.devs[0]));
      if (p.vProps.ndevs >= 1 && p.vProps.ndevs <= k) {
        out->vdev_count = p.vProps.ndevs;
        for (int i = 0; i < p.vProps.ndevs; ++i) out->vdevs[i] = p.vProps.devs[i];
      }
      out->max_p2p_bytes = p.maxP2pBytes;
      out->max_coll_bytes = p.maxCollBytes;
    }
    if constexpr (V >= 11) out->max_multi_request_size = p.maxMultiRequestSize;
    if constexpr (V >= 12) {
      out->rail_id = p.railId;
      out->plane_id = p.planeId;
    }
    return NCCLSCOPE_SUCCESS;
  }

  ncclscope_result_t MakeVDevice(const int* devs, int n, int* vdev) override {
    if constexpr (V >= 9) {
      typename TableOf<V>::VProps props{};
      const int k = static_cast<int>(sizeof(props.devs) / sizeof(props.devs[0]));
      if (t_->makeVDevice == nullptr || n < 1 || n > k) return NCCLSCOPE_INVALID_USAGE;
      props.ndevs = n;
      for (int i = 0; i < n; ++i) props.devs[i] = devs[i];
      return t_->makeVDevice(vdev, &props);
    }
    return NCCLSCOPE_INVALID_USAGE;
  }
  ncclscope_result_t SetNetAttr(void* ctx, ncclscope_net_attr_t* attr) override {
    if constexpr (V >= 11) {
      if (t_->setNetAttr != nullptr) return t_->setNetAttr(ctx, attr);
    }
    return NCCLSCOPE_SUCCESS;
  }
  ncclscope_result_t Listen(void* ctx, int dev, void* handle, void** lc) override {
    if constexpr (V >= 11) {
      return t_->listen(ctx, dev, handle, lc);
    } else {
      return t_->listen(dev, handle, lc);
    }
  }
  ncclscope_result_t Connect(void* ctx, int traffic_class, int dev, void* handle, void** sc,
                             ncclscope_net_device_handle_t** dev_comm) override {
    if constexpr (V >= 11) {
      return t_->connect(ctx, dev, handle, sc, dev_comm);
    } else if constexpr (V == 10) {
      ncclscope_net_comm_config_t cfg{traffic_class};
      return t_->connect(dev, &cfg, handle, sc, dev_comm);
    } else {
      return t_->connect(dev, handle, sc, dev_comm);
    }
  }
  ncclscope_result_t Accept(void* lc, void** rc, ncclscope_net_device_handle_t** dev_comm) override {
    return t_->accept(lc, rc, dev_comm);
  }
  ncclscope_result_t RegMr(void* comm, void* data, size_t size, int type, void** mh) override {
    return t_->regMr(comm, data, size, type, mh);
  }
  ncclscope_result_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                 void** mh) override {
    if (t_->regMrDmaBuf == nullptr) return NCCLSCOPE_INVALID_USAGE;
    return t_->regMrDmaBuf(comm, data, size, type, offset, fd, mh);
  }
  ncclscope_result_t DeregMr(void* comm, void* mh) override { return t_->deregMr(comm, mh); }

  ncclscope_result_t Isend(void* sc, void* data, size_t size, int tag, void* mh, void* ph, void** req) override {
    if constexpr (V == 8) {
      if (size > INT_MAX) return NCCLSCOPE_INVALID_ARGUMENT;  // cannot be said in a v8 int
      return t_->isend(sc, data, static_cast<int>(size), tag, mh, req);
    } else if constexpr (V == 9) {
      return t_->isend(sc, data, size, tag, mh, req);
    } else {
      return t_->isend(sc, data, size, tag, mh, ph, req);
    }
  }
  ncclscope_result_t Irecv(void* rc, int n, void** data, const size_t* sizes, const int* tags, void** mhs,
                           void** phs, void** req) override {
    // NCCL's own arrays, handed on as NCCL hands them (the tables take them non-const; plugins only read them).
    int* t = const_cast<int*>(tags);
    if constexpr (V == 8) {
      if (n < 1 || n > kMaxRecvs) return NCCLSCOPE_INVALID_ARGUMENT;
      int narrow[kMaxRecvs];
      for (int i = 0; i < n; ++i) narrow[i] = sizes[i] > INT_MAX ? INT_MAX : static_cast<int>(sizes[i]);
      *req = nullptr;  // NCCL's own v8 adapter clears the optional-completion hint
      return t_->irecv(rc, n, data, narrow, t, mhs, req);
    } else if constexpr (V == 9) {
      return t_->irecv(rc, n, data, const_cast<size_t*>(sizes), t, mhs, req);
    } else {
      return t_->irecv(rc, n, data, const_cast<size_t*>(sizes), t, mhs, phs, req);
    }
  }
  ncclscope_result_t Iflush(void* rc, int n, void** data, int* sizes, void** mhs, void** req) override {
    return t_->iflush(rc, n, data, sizes, mhs, req);
  }
  ncclscope_result_t Test(void* req, int* done, int* sizes) override { return t_->test(req, done, sizes); }
  ncclscope_result_t CloseSend(void* c) override { return t_->closeSend(c); }
  ncclscope_result_t CloseRecv(void* c) override { return t_->closeRecv(c); }
  ncclscope_result_t CloseListen(void* c) override { return t_->closeListen(c); }
  ncclscope_result_t GetDeviceMr(void* comm, void* mh, void** dptr) override {
    if (t_->getDeviceMr == nullptr) return NCCLSCOPE_INVALID_USAGE;
    return t_->getDeviceMr(comm, mh, dptr);
  }
  ncclscope_result_t IrecvConsumed(void* rc, int n, void* req) override {
    if (t_->irecvConsumed == nullptr) return NCCLSCOPE_SUCCESS;
    return t_->irecvConsumed(rc, n, req);
  }

 private:
  const T* t_;
};

template <int V>
std::unique_ptr<InnerPlugin> Make(void* table, const std::string& path) {
  return std::make_unique<Table<V>>(static_cast<const typename TableOf<V>::T*>(table), path);
}

}  // namespace

std::string ResultName(ncclscope_result_t r) {
  static const char* const kNames[] = {"ncclSuccess",     "ncclUnhandledCudaError", "ncclSystemError",
                                       "ncclInternalError", "ncclInvalidArgument",  "ncclInvalidUsage",
                                       "ncclRemoteError", "ncclInProgress",         "ncclTimeout"};
  const int i = static_cast<int>(r);
  const char* n = i >= 0 && i < static_cast<int>(std::size(kNames)) ? kNames[i] : "an unknown result";
  return std::string(n) + " (" + std::to_string(i) + ")";
}

Result<std::unique_ptr<InnerPlugin>> LoadInnerPlugin(const std::string& value) {
  std::string where;
  const std::string who = "the net plugin " + value + " (NCCLSCOPE_NET_CHAIN), while it loaded,";
  void* lib = nullptr;
  {
    InnerCall loading(who);  // its constructors run inside dlopen and must not re-enter our init either
    lib = OpenPluginLibrary("net", value, &where);
    if (loading.reentered()) return loading.ReentryError("constructor");
  }
  if (lib == nullptr) return SystemError("cannot load " + value + " (" + where + ")");
  using Maker = std::unique_ptr<InnerPlugin> (*)(void*, const std::string&);
  constexpr struct { int v; Maker make; size_t bytes; } kVersions[] = {
      {12, &Make<12>, sizeof(TableOf<12>::T)}, {11, &Make<11>, sizeof(TableOf<11>::T)},
      {10, &Make<10>, sizeof(TableOf<10>::T)}, {9, &Make<9>, sizeof(TableOf<9>::T)}, {8, &Make<8>, sizeof(TableOf<8>::T)}};
  for (const auto& [v, make, bytes] : kVersions) {
    const std::string symbol = "ncclNetPlugin_v" + std::to_string(v);
    void* table = dlsym(lib, symbol.c_str());
    if (table == nullptr) continue;
    // ncclscope itself, or a table whose entries are ours: wrapping it would re-enter our init (a deadlock).
    NCCLSCOPE_RETURN_IF_ERROR(CheckNotOurs(table, bytes, symbol, where));
    return make(table, where);
  }
  std::string older;
  for (int v = 7; v >= 2; --v) {
    if (dlsym(lib, ("ncclNetPlugin_v" + std::to_string(v)).c_str()) != nullptr) {
      older += (older.empty() ? "" : ", ") + std::string("v") + std::to_string(v);
    }
  }
  return InvalidUsage(where + " exports no ncclNetPlugin_v8 to _v12 table" +
                      (older.empty() ? std::string(" (no net plugin table at all)")
                                     : " (only " + older + "; ncclscope wraps v8 and later)"));
}

}  // namespace ncclscope::net::chain
