#include "net/handle.h"

#include <cstring>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/random.h"
#include "common/tsan_lock.h"

namespace ncclscope::net {
namespace {

ABSL_CONST_INIT absl::Mutex pending_mu(absl::kConstInit);
// Never freed: -z nodelete, and NCCL's service threads may connect until the process exits.
absl::flat_hash_map<uint64_t, std::unique_ptr<PendingConnect>>* pending ABSL_GUARDED_BY(pending_mu) = nullptr;

}  // namespace

void WriteHandle(void* handle, HandleTag tag, const void* payload, size_t payload_bytes) {
  memset(handle, 0, kHandleBytes);
  HandleHeader hh{kHandleMagic, kHandleVersion, tag.id, 0};
  memcpy(handle, &hh, sizeof(hh));
  memcpy(static_cast<char*>(handle) + sizeof(hh), payload, payload_bytes);
}

void ReadHandle(const void* handle, HandleHeader* header, void* payload, size_t payload_bytes) {
  memcpy(header, handle, sizeof(*header));
  memcpy(payload, static_cast<const char*>(handle) + sizeof(*header), payload_bytes);
}

Status CheckHandleHeader(const HandleHeader& hh, HandleTag expected, const std::string& from) {
  if (hh.magic != kHandleMagic) {
    return SystemError("malformed connect handle from " + from + " (bad magic 0x" +
                       absl::StrFormat("%08x", hh.magic) + "): not an ncclscope handle");
  }
  if (hh.version != kHandleVersion) {
    return SystemError("connect handle from " + from + " has version " + std::to_string(hh.version) +
                       ", this ncclscope speaks version " + std::to_string(kHandleVersion));
  }
  if (hh.transport != expected.id) {
    return SystemError("connect handle from " + from + " is for transport " + std::to_string(hh.transport) +
                       ", not " + expected.name + ": both sides must use the same NCCLSCOPE_TRANSPORT");
  }
  return Status::Ok();
}

Status StepConnect(void* handle, const std::function<Result<std::unique_ptr<PendingConnect>>()>& make,
                   SendComm** send_comm, const std::string& from) {
  *send_comm = nullptr;
  HandleHeader hh;
  memcpy(&hh, handle, sizeof(hh));
  AnnotatedLock lock(&pending_mu);
  if (pending == nullptr) pending = new absl::flat_hash_map<uint64_t, std::unique_ptr<PendingConnect>>();
  PendingConnect* c = nullptr;
  if (hh.stage_cookie != 0) {
    auto it = pending->find(hh.stage_cookie);
    if (it == pending->end()) {
      return InternalError("connect handle for " + from +
                           " carries an unknown handshake state (handle reused after failure?)");
    }
    c = it->second.get();
  } else {
    Result<std::unique_ptr<PendingConnect>> made = make();
    if (!made.ok()) return made.status();
    hh.stage_cookie = RandomU64();
    c = made->get();
    pending->emplace(hh.stage_cookie, std::move(*made));
    memcpy(handle, &hh, sizeof(hh));
  }
  Status s = c->Progress(send_comm);
  if (!s.ok() || *send_comm != nullptr) {
    pending->erase(hh.stage_cookie);
    hh.stage_cookie = 0;
    memcpy(handle, &hh, sizeof(hh));
  }
  return s;
}

}  // namespace ncclscope::net
