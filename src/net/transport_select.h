// The transport ladder run by every net init: the user's NCCLSCOPE_TRANSPORT first, then verbs if a
// usable RDMA device exists, else TCP. While our verbs transport is not built, a host with RDMA
// hardware makes init fail with a clear log line, so NCCL falls back to its own IB transport instead
// of us silently moving an RDMA job onto TCP. Thread-safe (the test hook is an atomic-free global that
// tests set before any init).
#ifndef NCCLSCOPE_NET_TRANSPORT_SELECT_H_
#define NCCLSCOPE_NET_TRANSPORT_SELECT_H_

#include <string>

#include "common/status.h"
#include "net/net_types.h"

namespace ncclscope::net {

struct TransportChoice {
  TransportKind kind = TransportKind::kTcp;
  std::string reason;  // for the plugin's log line
};

// `requested` is "auto", "ib" or "tcp". Fails with a message saying what NCCL should do instead.
Result<TransportChoice> ChooseTransport(const std::string& requested);

// Counts RDMA devices: entries under <sysfs_root>/class/infiniband, and (only with the real sysfs root)
// devices listed by libibverbs if it can be dlopen'ed. Never links libibverbs.
int CountVerbsDevices();

// Test hook: a fake sysfs root (e.g. a temp dir with class/infiniband/mlx5_0); "" restores /sys.
void SetSysfsRootForTest(const std::string& root);

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_TRANSPORT_SELECT_H_
