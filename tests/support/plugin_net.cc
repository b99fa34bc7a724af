#include "plugin_net.h"

#include <dlfcn.h>

#include <cstring>

#include <type_traits>

// Weak: a program that only dlopens plugins (bench_net_chain) links this file without the core library.
extern "C" {
extern const ncclscope_net_v8_t ncclNetPlugin_v8 __attribute__((weak));
extern const ncclscope_net_v9_t ncclNetPlugin_v9 __attribute__((weak));
extern const ncclscope_net_v10_t ncclNetPlugin_v10 __attribute__((weak));
extern const ncclscope_net_v11_t ncclNetPlugin_v11 __attribute__((weak));
extern const ncclscope_net_v12_t ncclNetPlugin_v12 __attribute__((weak));
}

namespace ncclscope::testing {
namespace {

template <int V, class Table>
class Impl final : public PluginNet {
 public:
  explicit Impl(const Table* t) : t_(t) {}
  int version() const override { return V; }
  const char* name() const override { return t_->name; }

  int Init(uint64_t comm_id, ncclscope_logger_t log, ncclscope_profiler_callback_t prof) override {
    if constexpr (V >= 11) {
      ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
      return t_->init(&ctx_, comm_id, &cfg, log, prof);
    } else if constexpr (V == 10) {
      return t_->init(log, prof);
    } else {
      return t_->init(log);
    }
  }
  int Finalize() override {
    if constexpr (V >= 11) return t_->finalize(ctx_);
    return 0;
  }
  int Devices(int* n) override { return t_->devices(n); }
  int Props(int dev, PropsView* out) override {
    using P = std::remove_pointer_t<decltype(Arg1(t_->getProperties))>;
    P p;
    memset(&p, 0xA5, sizeof(p));  // NCCL passes uninitialised memory: every field must be written
    int r = t_->getProperties(dev, &p);
    if (r != 0) return r;
    out->name = p.name != nullptr ? p.name : "";
    out->has_pci = p.pciPath != nullptr;
    out->ptr_support = p.ptrSupport;
    out->speed = p.speed;
    out->max_recvs = p.maxRecvs;
    out->max_comms = p.maxComms;
    out->net_device_type = p.netDeviceType;
    if constexpr (V >= 9) {
      out->vdevs = p.vProps.ndevs;
      out->max_p2p = p.maxP2pBytes;
    }
    if constexpr (V >= 12) {
      out->rail = p.railId;
      out->plane = p.planeId;
    }
    return 0;
  }
  int MakeVDevice(const int* devs, int n, int* vdev) override {
    if constexpr (V >= 9) {
      if (t_->makeVDevice == nullptr) return NCCLSCOPE_INVALID_USAGE;
      std::remove_pointer_t<decltype(Arg1(t_->makeVDevice))> props{};
      props.ndevs = n;
      for (int i = 0; i < n; ++i) props.devs[i] = devs[i];
      return t_->makeVDevice(vdev, &props);
    } else {
      return NCCLSCOPE_INVALID_USAGE;
    }
  }
  int Listen(int dev, void* handle, void** lc) override {
    if constexpr (V >= 11) return t_->listen(ctx_, dev, handle, lc);
    else return t_->listen(dev, handle, lc);
  }
  int Connect(int dev, void* handle, void** sc) override {
    ncclscope_net_device_handle_t* dh = nullptr;
    if constexpr (V >= 11) {
      return t_->connect(ctx_, dev, handle, sc, &dh);
    } else if constexpr (V == 10) {
      ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
      return t_->connect(dev, &cfg, handle, sc, &dh);
    } else {
      return t_->connect(dev, handle, sc, &dh);
    }
  }
  int Accept(void* lc, void** rc) override {
    ncclscope_net_device_handle_t* dh = nullptr;
    return t_->accept(lc, rc, &dh);
  }
  int RegMr(void* comm, void* data, size_t size, void** mh) override {
    return t_->regMr(comm, data, size, NCCLSCOPE_PTR_HOST, mh);
  }
  int DeregMr(void* comm, void* mh) override { return t_->deregMr(comm, mh); }
  int Isend(void* sc, void* data, size_t size, int tag, void* mh, void* ph, void** req) override {
    if constexpr (V >= 10) return t_->isend(sc, data, size, tag, mh, ph, req);
    else if constexpr (V == 9) return t_->isend(sc, data, size, tag, mh, req);
    else return t_->isend(sc, data, static_cast<int>(size), tag, mh, req);
  }
  int Irecv(void* rc, int n, void** data, const size_t* sizes, const int* tags, void** mhs, void** phs,
            void** req) override {
    if constexpr (V >= 9) {
      size_t s[8];
      for (int i = 0; i < n && i < 8; ++i) s[i] = sizes[i];
      if constexpr (V >= 10) return t_->irecv(rc, n, data, s, const_cast<int*>(tags), mhs, phs, req);
      else return t_->irecv(rc, n, data, s, const_cast<int*>(tags), mhs, req);
    } else {
      int s[8];
      for (int i = 0; i < n && i < 8; ++i) s[i] = static_cast<int>(sizes[i]);
      return t_->irecv(rc, n, data, s, const_cast<int*>(tags), mhs, req);
    }
  }
  int Test(void* req, int* done, int* sizes) override { return t_->test(req, done, sizes); }
  int CloseSend(void* c) override { return t_->closeSend(c); }
  int CloseRecv(void* c) override { return t_->closeRecv(c); }
  int CloseListen(void* c) override { return t_->closeListen(c); }

 private:
  template <class R, class A0, class A1>
  static A1 Arg1(R (*)(A0, A1));
  const Table* t_;
  void* ctx_ = nullptr;
};

const void* ResolvePath(const std::string& path, int version, std::string* error) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    *error = dlerror();
    return nullptr;
  }
  std::string sym = "ncclNetPlugin_v" + std::to_string(version);
  const void* t = dlsym(lib, sym.c_str());
  if (t == nullptr) *error = "symbol " + sym + " not found in " + path;
  return t;
}

const void* Resolve(int version, TableSource source, std::string* error) {
  if (source == TableSource::kLinked) {
    const void* t = nullptr;
    switch (version) {
      case 8: t = &ncclNetPlugin_v8; break;
      case 9: t = &ncclNetPlugin_v9; break;
      case 10: t = &ncclNetPlugin_v10; break;
      case 11: t = &ncclNetPlugin_v11; break;
      case 12: t = &ncclNetPlugin_v12; break;
    }
    if (t == nullptr) *error = "no linked table v" + std::to_string(version);
    return t;
  }
  return ResolvePath(NCCLSCOPE_PLUGIN_PATH, version, error);
}

std::unique_ptr<PluginNet> Wrap(int version, const void* t, std::string* error) {
  switch (version) {
    case 8: return std::make_unique<Impl<8, ncclscope_net_v8_t>>(static_cast<const ncclscope_net_v8_t*>(t));
    case 9: return std::make_unique<Impl<9, ncclscope_net_v9_t>>(static_cast<const ncclscope_net_v9_t*>(t));
    case 10: return std::make_unique<Impl<10, ncclscope_net_v10_t>>(static_cast<const ncclscope_net_v10_t*>(t));
    case 11: return std::make_unique<Impl<11, ncclscope_net_v11_t>>(static_cast<const ncclscope_net_v11_t*>(t));
    case 12: return std::make_unique<Impl<12, ncclscope_net_v12_t>>(static_cast<const ncclscope_net_v12_t*>(t));
  }
  *error = "unsupported version";
  return nullptr;
}

}  // namespace

std::unique_ptr<PluginNet> PluginNet::Open(int version, TableSource source, std::string* error) {
  const void* t = Resolve(version, source, error);
  if (t == nullptr) return nullptr;
  return Wrap(version, t, error);
}

std::unique_ptr<PluginNet> PluginNet::OpenPath(const std::string& path, int version, std::string* error) {
  const void* t = ResolvePath(path, version, error);
  if (t == nullptr) return nullptr;
  return Wrap(version, t, error);
}

int PluginNet::NewestVersion(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 0;
  int found = 0;
  for (int v = 12; v >= 8 && found == 0; --v) {
    if (dlsym(lib, ("ncclNetPlugin_v" + std::to_string(v)).c_str()) != nullptr) found = v;
  }
  dlclose(lib);
  return found;
}

}  // namespace ncclscope::testing
