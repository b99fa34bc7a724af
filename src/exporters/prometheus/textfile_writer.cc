#include "exporters/prometheus/textfile_writer.h"

#include <chrono>

#include "exporters/prometheus/exposition.h"

#include "common/log.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "exporters/prometheus/metric_families.h"

namespace ncclscope {
TextfileWriter& TextfileWriter::Instance() {
  static TextfileWriter* writer = new TextfileWriter();  // -z nodelete global, never destroyed
  return *writer;
}

void TextfileWriter::Start() {
  const std::string dir = Params().Str(ParamId::kPromTextfileDir);
  if (dir.empty()) return;
  Result<OutputDir*> out = OutputDir::Get(dir);
  if (!out.ok()) {
    ReportWriteFailure(dir, out.status(), subsys::kInit);
    return;
  }
  dir_ = *out;
  name_ = dir_->OwnedName(".prom");  // removed by the next process using this folder once we are gone
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void TextfileWriter::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  Write();  // the final figures
}

void TextfileWriter::Run() {
  const auto interval = std::chrono::seconds(Params().Int(ParamId::kPromTextfileIntervalS));
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
    lock.unlock();
    Write();
    lock.lock();
  }
}

void TextfileWriter::Write() {
  // A failure warns once, naming the file, and leaves the previous figures in place.
  (void)dir_->WriteAtomically(name_, SerializeExposition(CollectMetricFamilies()));
}

namespace {
ServiceRegistration g_registration(&TextfileWriter::Instance());
}  // namespace

}  // namespace ncclscope
