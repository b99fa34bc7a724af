// The process's most recent network failures, kept for post-mortem dumps: a dead peer shows up in the
// survivors' dumps as "peer … closed the connection", which tells a killed rank from a hung one.
// The net half records each connection's first failure (CommAccounting::Fail, never on the data path);
// the dump writer copies the list. Bounded: the newest kMaxNetErrors are kept. Thread-safe (one lock).
#ifndef NCCLSCOPE_CORE_NET_ERRORS_H_
#define NCCLSCOPE_CORE_NET_ERRORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/net_stats.h"

namespace ncclscope {

inline constexpr size_t kMaxNetErrors = 32;

struct NetErrorRecord {
  uint64_t comm_id = 0;       // NCCL's communicator hash (net v11+), 0 when the ABI carries none
  std::string nic;            // the NIC the connection used
  NetErrorKind kind = NetErrorKind::kRecv;
  std::string text;           // the error as logged ("peer 10.0.0.2:40000 closed the connection …")
  std::string peer;           // the peer's address as the transport names it
  int peer_global_rank = -1;  // the peer process's global rank, when the handshake told us (-1: unknown)
  int peer_pid = -1;          // the peer process's pid (-1: unknown)
  std::string peer_host;      // the peer's host name ("" unknown)
  uint64_t monotonic_ns = 0;  // when it was recorded (CLOCK_MONOTONIC)
};

void RecordNetError(NetErrorRecord record);
// Oldest first; at most kMaxNetErrors.
std::vector<NetErrorRecord> RecentNetErrors();
// Tests only: forget every record.
void ClearNetErrorsForTest();

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_NET_ERRORS_H_
