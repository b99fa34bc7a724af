// The output janitor: while the plugin is in use, every min(10 s, NCCLSCOPE_OUTPUT_GRACE_S / 2) (at least
// 1 s) it marks this process alive on every output folder it writes to and removes the stale outputs of
// owners that are gone (OutputDir::MaintainAll, common/output_dir.h). A runtime Service: its thread is
// joined at the last finalize, after one more pass.
#include "common/output_janitor.h"

#include <algorithm>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

class OutputJanitor final : public Service {
 public:
  const char* name() const override { return "output-janitor"; }

  void Start() override {
    const int64_t grace = Params().Int(ParamId::kOutputGraceS);
    const absl::Duration period = absl::Seconds(std::clamp<int64_t>(grace / 2, 1, 10));
    {
      AnnotatedLock lock(&mu_);
      stop_ = false;
    }
    thread_ = std::thread([this, period] {
      while (!WaitForStop(period)) OutputDir::MaintainAll();
    });
  }

  void Stop() override {
    if (!thread_.joinable()) return;
    {
      AnnotatedLock lock(&mu_);
      stop_ = true;
    }
    cv_.SignalAll();
    thread_.join();
    OutputDir::MaintainAll();
  }

 private:
  bool WaitForStop(absl::Duration timeout) {
    AnnotatedLock lock(&mu_);
    return AnnotatedWaitFor(&cv_, &mu_, &stop_, timeout);
  }

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace

Service& OutputJanitorService() {
  static OutputJanitor* janitor = new OutputJanitor();  // -z nodelete global, never destroyed
  return *janitor;
}

}  // namespace ncclscope
