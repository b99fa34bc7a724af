// Test-side uniform view of one exported ncclNetPlugin_vN table (v8..v12), resolved by name from the
// BUILT library (dlopen) or from the core library linked into the test (to read its counters). It
// only translates, like NCCL's own adapters: sizes widen/narrow, phandles are dropped below v10, the
// ctx is created by v11+ init. Not thread-safe; one per (child) process.
#ifndef NCCLSCOPE_TESTS_SUPPORT_PLUGIN_NET_H_
#define NCCLSCOPE_TESTS_SUPPORT_PLUGIN_NET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ncclscope/abi/net.h"

namespace ncclscope::testing {

enum class TableSource { kDlopen, kLinked };

struct PropsView {
  std::string name;
  bool has_pci = false;
  int ptr_support = 0, speed = 0, max_recvs = 0, max_comms = 0, net_device_type = -1;
  int vdevs = 0;
  size_t max_p2p = 0;
  int rail = 0, plane = 0;
};

class PluginNet {
 public:
  virtual ~PluginNet() = default;
  // Resolves ncclNetPlugin_v<version>; null (and *error) when missing.
  static std::unique_ptr<PluginNet> Open(int version, TableSource source, std::string* error);
  // The same from another plugin library (an inner plugin, another build): dlopen'ed RTLD_LOCAL by path.
  static std::unique_ptr<PluginNet> OpenPath(const std::string& path, int version, std::string* error);
  // The newest table version (12 down to 8) the library at `path` exports; 0 when none or not loadable.
  static int NewestVersion(const std::string& path);

  virtual int version() const = 0;
  virtual const char* name() const = 0;
  virtual int Init(uint64_t comm_id, ncclscope_logger_t log, ncclscope_profiler_callback_t prof) = 0;
  virtual int Finalize() = 0;
  virtual int Devices(int* n) = 0;
  virtual int Props(int dev, PropsView* out) = 0;
  // makeVDevice (v9+); NCCLSCOPE_INVALID_USAGE below v9 or when the table has none.
  virtual int MakeVDevice(const int* devs, int n, int* vdev) = 0;
  virtual int Listen(int dev, void* handle, void** lc) = 0;
  virtual int Connect(int dev, void* handle, void** sc) = 0;
  virtual int Accept(void* lc, void** rc) = 0;
  virtual int RegMr(void* comm, void* data, size_t size, void** mh) = 0;
  virtual int DeregMr(void* comm, void* mh) = 0;
  virtual int Isend(void* sc, void* data, size_t size, int tag, void* mh, void* ph, void** req) = 0;
  virtual int Irecv(void* rc, int n, void** data, const size_t* sizes, const int* tags, void** mhs, void** phs,
                    void** req) = 0;
  virtual int Test(void* req, int* done, int* sizes) = 0;
  virtual int CloseSend(void* c) = 0;
  virtual int CloseRecv(void* c) = 0;
  virtual int CloseListen(void* c) = 0;
};

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_SUPPORT_PLUGIN_NET_H_
