// Calls from ncclscope into a plugin it wraps (the net chain's inner, the chained profiler) run inside an
// InnerCall on their thread. A wrapped plugin that calls back into ncclscope from there (it forwards to us, or
// it is a copy of our table) would take our init lock a second time on the same thread, a silent self-deadlock,
// or recurse without end. So our init entry points ask RefuseReentry() first: inside an InnerCall they refuse,
// and the InnerCall remembers it; the ncclscope call that called the plugin then reports it once, naming the
// plugin, instead of the plugin's own error.
// Thread-safety: the state is thread-local; an InnerCall lives on one thread's stack, nested calls chain.
#ifndef NCCLSCOPE_COMMON_INNER_CALL_H_
#define NCCLSCOPE_COMMON_INNER_CALL_H_

#include <string>

#include "common/status.h"

namespace ncclscope {

class InnerCall {
 public:
  // `who` names the plugin in the refusal ("the wrapped net plugin 'X' (/path/x.so)"); it must outlive the call.
  explicit InnerCall(const std::string& who);
  ~InnerCall();
  InnerCall(const InnerCall&) = delete;
  InnerCall& operator=(const InnerCall&) = delete;

  // True when ncclscope was entered again from inside this call (and refused it).
  bool reentered() const { return reentered_entry_ != nullptr; }
  // The error that reports the re-entry: the plugin, its `call` and the entry point of ours it re-entered.
  Status ReentryError(const std::string& call) const;

 private:
  friend Status RefuseReentry(const char* entry);
  const std::string& who_;
  InnerCall* outer_;
  const char* reentered_entry_ = nullptr;
};

// At an init entry point of ours: Ok, or, when this thread is inside an InnerCall, an error (the innermost
// InnerCall records `entry`, "net init"). That error needs no log line of its own: the caller reports it.
Status RefuseReentry(const char* entry);
// True inside an InnerCall: an error we return there goes back to the wrapped plugin, and from it to our caller,
// which logs it.
bool InsideInnerCall();

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_INNER_CALL_H_
