#include "watch/dump_signal.h"

#include <signal.h>

#include <atomic>
#include <mutex>

#include "common/log.h"
#include "common/params.h"

namespace ncclscope::profiler {
namespace {

std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

void OnDumpSignal(int) { g_requested.store(true, std::memory_order_relaxed); }

}  // namespace

void InstallDumpSignal() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string& name = Params().Str(ParamId::kDumpSignal);
    if (name == "none") return;
    const int sig = name == "SIGUSR1" ? SIGUSR1 : SIGUSR2;
    struct sigaction current {};
    sigaction(sig, nullptr, &current);
    if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO)) {
      NCCLSCOPE_INFO(subsys::kProfile, "%s already has a handler in this process; dumps on signal are off",
                     name.c_str());
      return;
    }
    struct sigaction action {};
    action.sa_handler = &OnDumpSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(sig, &action, nullptr);
    NCCLSCOPE_INFO(subsys::kProfile, "send %s to dump every communicator's flight recorder", name.c_str());
  });
}

bool TakeDumpRequest() { return g_requested.exchange(false, std::memory_order_relaxed); }

}  // namespace ncclscope::profiler
