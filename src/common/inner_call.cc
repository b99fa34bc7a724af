#include "common/inner_call.h"

namespace ncclscope {
namespace {

thread_local InnerCall* t_innermost = nullptr;

}  // namespace

InnerCall::InnerCall(const std::string& who) : who_(who), outer_(t_innermost) { t_innermost = this; }

InnerCall::~InnerCall() { t_innermost = outer_; }

Status InnerCall::ReentryError(const std::string& call) const {
  return InvalidUsage(who_ + " called back into ncclscope (" + (reentered_entry_ ? reentered_entry_ : "?") +
                      ") from its " + call + ": refused, since ncclscope would wait on itself forever; the chain must "
                      "name another plugin, not ncclscope or one that forwards to it");
}

Status RefuseReentry(const char* entry) {
  InnerCall* call = t_innermost;
  if (call == nullptr) return Status::Ok();
  if (call->reentered_entry_ == nullptr) call->reentered_entry_ = entry;
  return InvalidUsage(std::string(entry) + ": re-entered from a plugin ncclscope wraps; refused");
}

bool InsideInnerCall() { return t_innermost != nullptr; }

}  // namespace ncclscope
