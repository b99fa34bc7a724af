// Status and Result<T>: how errors travel inside ncclscope. A Status carries a code that maps onto
// one ncclResult_t and a message that names what failed (the peer, the variable, the cause). Errors
// cross the C boundary only through the gates in gate.h. Value types; not thread-safe to share mutably.
#ifndef NCCLSCOPE_COMMON_STATUS_H_
#define NCCLSCOPE_COMMON_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace ncclscope {

enum class StatusCode {
  kOk = 0,
  kSystem,           // OS or network failure        -> ncclSystemError
  kInternal,         // misuse by NCCL, our own bug   -> ncclInternalError
  kInvalidArgument,  // bad argument value            -> ncclInvalidArgument
  kInvalidUsage,     // user or configuration mistake -> ncclInvalidUsage
  kRemote,           // the peer failed or vanished   -> ncclRemoteError
  kUnimplemented,    // not built yet                 -> ncclInternalError
  kDeclined,         // we step aside on purpose      -> ncclInternalError (NCCL tries its next net)
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status SystemError(std::string m) { return Status(StatusCode::kSystem, std::move(m)); }
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status InvalidUsage(std::string m) { return Status(StatusCode::kInvalidUsage, std::move(m)); }
inline Status RemoteError(std::string m) { return Status(StatusCode::kRemote, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
inline Status Declined(std::string m) { return Status(StatusCode::kDeclined, std::move(m)); }

// A value or the Status that explains why there is none.
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ncclscope

#define NCCLSCOPE_RETURN_IF_ERROR(expr)              \
  do {                                               \
    ::ncclscope::Status ncclscope_status_ = (expr);  \
    if (!ncclscope_status_.ok()) return ncclscope_status_; \
  } while (0)

#endif  // NCCLSCOPE_COMMON_STATUS_H_
