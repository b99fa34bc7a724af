// "what: <strerror(err)>": the message of a failed system call, one wording for every file writer.
#ifndef NCCLSCOPE_COMMON_ERRNO_TEXT_H_
#define NCCLSCOPE_COMMON_ERRNO_TEXT_H_

#include <cstring>
#include <string>

namespace ncclscope {

inline std::string WithErrno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_ERRNO_TEXT_H_
