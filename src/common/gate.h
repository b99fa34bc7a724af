// The guarded gates: every extern "C" entry point runs its body through one of these. They catch
// every exception, log it through NCCL's logger and map our Status to ncclResult_t, so nothing of
// ours ever unwinds into NCCL. Profiler entry points after init always report success: a failure
// there is logged once per entry point and swallowed, because NCCL treats profiler errors as fatal.
#ifndef NCCLSCOPE_COMMON_GATE_H_
#define NCCLSCOPE_COMMON_GATE_H_

#include <exception>
#include <new>

#include "common/inner_call.h"
#include "common/log.h"
#include "common/status.h"
#include "ncclscope/abi/common.h"

namespace ncclscope {

inline ncclscope_result_t ToNcclResult(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return NCCLSCOPE_SUCCESS;
    case StatusCode::kSystem: return NCCLSCOPE_SYSTEM_ERROR;
    case StatusCode::kInvalidArgument: return NCCLSCOPE_INVALID_ARGUMENT;
    case StatusCode::kInvalidUsage: return NCCLSCOPE_INVALID_USAGE;
    case StatusCode::kRemote: return NCCLSCOPE_REMOTE_ERROR;
    case StatusCode::kInternal:
    case StatusCode::kUnimplemented:
    case StatusCode::kDeclined: return NCCLSCOPE_INTERNAL_ERROR;
  }
  return NCCLSCOPE_INTERNAL_ERROR;
}

// Net entry points: `body` returns a Status; errors are logged (WARN, NET) and returned to NCCL.
template <class Body>
ncclscope_result_t NetGate(const char* entry, Body&& body) noexcept {
  try {
    Status s = body();
    if (s.ok()) return NCCLSCOPE_SUCCESS;
    // Inside a call into a plugin we wrap, the error goes back to that plugin, and our call into it logs it.
    if (!InsideInnerCall()) NCCLSCOPE_WARN(subsys::kNet, "%s: %s", entry, s.message().c_str());
    return ToNcclResult(s);
  } catch (const std::bad_alloc&) {
    NCCLSCOPE_WARN(subsys::kNet, "%s: out of memory", entry);
    return NCCLSCOPE_SYSTEM_ERROR;
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kNet, "%s: unexpected exception: %s", entry, e.what());
    return NCCLSCOPE_INTERNAL_ERROR;
  } catch (...) {
    NCCLSCOPE_WARN(subsys::kNet, "%s: unexpected unknown exception", entry);
    return NCCLSCOPE_INTERNAL_ERROR;
  }
}

// Profiler init: may fail (NCCL then continues without the profiler for that communicator).
template <class Body>
ncclscope_result_t ProfilerInitGate(const char* entry, Body&& body) noexcept {
  try {
    Status s = body();
    if (s.ok()) return NCCLSCOPE_SUCCESS;
    NCCLSCOPE_WARN(subsys::kProfile, "%s: %s; NCCL continues without the ncclscope profiler", entry,
                   s.message().c_str());
    return ToNcclResult(s);
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kProfile, "%s: unexpected exception: %s", entry, e.what());
    return NCCLSCOPE_INTERNAL_ERROR;
  } catch (...) {
    NCCLSCOPE_WARN(subsys::kProfile, "%s: unexpected unknown exception", entry);
    return NCCLSCOPE_INTERNAL_ERROR;
  }
}

// Profiler event entry points and finalize: never an error. `body` returns void.
template <class Body>
[[gnu::always_inline]] inline ncclscope_result_t ProfilerEventGate(const char* entry, Body&& body) noexcept {
  try {
    body();
  } catch (const std::exception& e) {
    NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kProfile, "%s: exception swallowed: %s", entry, e.what());
  } catch (...) {
    NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kProfile, "%s: unknown exception swallowed", entry);
  }
  return NCCLSCOPE_SUCCESS;
}

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_GATE_H_
