// ncclscope-loadcheck runs the check of a plugin in a child process, so that what the plugin does cannot take
// the checker down with it: a crash (a signal), an exit() from inside the plugin, or a call that never returns
// (a deadline) becomes a reported failure instead of the checker's own death, exit code or hang.
// The child tells the parent how far it got (stages) and its final JSON document through a pipe; the parent
// alone decides the exit status. Single-threaded; call before any plugin is loaded (fork).
#ifndef NCCLSCOPE_TOOLS_LOADCHECK_ISOLATE_H_
#define NCCLSCOPE_TOOLS_LOADCHECK_ISOLATE_H_

#include <functional>
#include <string>

namespace ncclscope::loadcheck {

// The child's side of the pipe.
class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  // What the child is about to do ("net init"): named when it never comes back.
  void Stage(const std::string& what) const;
  // The check's result, sent once at its end (one line of JSON).
  void Result(const std::string& json_line) const;

 private:
  int fd_;
};

struct Isolated {
  enum class Kind { kFinished, kSignal, kExit, kTimeout, kNoChild };
  Kind kind = Kind::kNoChild;
  bool has_result = false;  // the child sent its result (a failure may still follow, at its exit)
  std::string result;       // the child's JSON line
  std::string stage;        // the last stage the child named
  int exit_code = 0;        // kFinished / kExit: the child's exit status
  int signal = 0;           // kSignal
  std::string error;        // kNoChild: why no child ran
};

// Runs `check` in a child process (its return value is the child's exit status) and waits at most `timeout_s`
// seconds for it to send its result and exit; then kills it (SIGKILL).
Isolated RunIsolated(double timeout_s, const std::function<int(const Reporter&)>& check);

// "SIGSEGV (Segmentation fault)".
std::string SignalName(int sig);

}  // namespace ncclscope::loadcheck

#endif  // NCCLSCOPE_TOOLS_LOADCHECK_ISOLATE_H_
