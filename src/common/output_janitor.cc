// The output janitor: while the plugin is in use, every min(10 s, NCCLSCOPE_OUTPUT_GRACE_S / 2) (at least
// 1 s) it marks this process alive on every output folder it writes to and removes the stale outputs of
// owners that are gone (OutputDir::MaintainAll, common/output_dir.h). A runtime Service: its thread is
// joined at the last finalize, after one more pass.
#include "common/output_janitor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/output_dir.h"
#include "common/params.h"

namespace ncclscope {
namespace {

class OutputJanitor final : public Service {
 public:
  const char* name() const override { return "output-janitor"; }

  void Start() override {
    const int64_t grace = Params().Int(ParamId::kOutputGraceS);
    const auto period = std::chrono::seconds(std::clamp<int64_t>(grace / 2, 1, 10));
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = false;
    }
    thread_ = std::thread([this, period] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
        lock.unlock();
        OutputDir::MaintainAll();
        lock.lock();
      }
    });
  }

  void Stop() override {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    OutputDir::MaintainAll();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

Service& OutputJanitorService() {
  static OutputJanitor* janitor = new OutputJanitor();  // -z nodelete global, never destroyed
  return *janitor;
}

}  // namespace ncclscope
