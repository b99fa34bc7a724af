// Which RDMA (verbs) devices this host has, without opening them: the entries of sysfs's
// class/infiniband, or, where a container hides sysfs, the devices libibverbs lists (loaded with dlopen,
// never linked). The transport choice uses it to decline on RDMA hosts. Thread-safe.
#ifndef NCCLSCOPE_NET_VERBS_VERBS_PROBE_H_
#define NCCLSCOPE_NET_VERBS_VERBS_PROBE_H_

#include <string>
#include <vector>

namespace ncclscope::net::verbs {

// Device names (e.g. "mlx5_0", "rxe0"), sorted.
std::vector<std::string> ListVerbsDeviceNames();

// The sysfs root the verbs code reads ("/sys" unless a test set another).
std::string SysfsRoot();
// Test hook: a fake sysfs root (e.g. a temp dir with class/infiniband/mlx5_0); "" restores /sys.
void SetSysfsRootForTest(const std::string& root);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_VERBS_PROBE_H_
