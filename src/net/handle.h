// The connect-handle protocol every transport shares. NCCL moves our 128-byte handle from the listener to
// the connector out of band; it starts with a HandleHeader (magic, version, transport, stage cookie) and the
// rest is the transport's payload. Connect is non-blocking and NCCL calls it again with the same handle
// buffer until it returns a comm, so the connecting side's in-progress state lives in a table keyed by the
// header's stage cookie (local to this process, written into the handle at the first call): a pointer read
// back from the wire would be trusted blindly, a cookie is only looked up.
// Thread-safe: Listen/Connect run on NCCL's service threads (one per communicator, concurrently).
#ifndef NCCLSCOPE_NET_HANDLE_H_
#define NCCLSCOPE_NET_HANDLE_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "net/net_types.h"
#include "net/transport.h"

namespace ncclscope::net {

// Clears `handle` and writes the header for `tag` (cookie 0) and `payload` after it.
void WriteHandle(void* handle, HandleTag tag, const void* payload, size_t payload_bytes);
// Copies the header and `payload_bytes` of payload out of `handle` (no validation).
void ReadHandle(const void* handle, HandleHeader* header, void* payload, size_t payload_bytes);
// Checks magic, version and transport; `from` names the peer in the error ("peer 10.0.0.1:5000").
Status CheckHandleHeader(const HandleHeader& header, HandleTag expected, const std::string& from);

// The connecting side's state machine of one connection.
class PendingConnect {
 public:
  virtual ~PendingConnect() = default;
  // Advances without blocking; sets *comm when the connection is ready.
  virtual Status Progress(SendComm** comm) = 0;
  // Names the peer in errors ("peer 10.0.0.1:5000").
  virtual std::string peer() const = 0;
};

// One connect call: finds this handle's PendingConnect by its cookie (or creates one with `make` at the
// first call and writes the cookie into the handle), advances it, and forgets it once it has produced a
// comm or failed (the cookie in the handle is cleared so a retry starts afresh).
// `from` names the peer in the error about an unknown cookie (there is no PendingConnect to ask).
Status StepConnect(void* handle, const std::function<Result<std::unique_ptr<PendingConnect>>()>& make,
                   SendComm** send_comm, const std::string& from = "the peer");

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_HANDLE_H_
