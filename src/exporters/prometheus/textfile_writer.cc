#include "exporters/prometheus/textfile_writer.h"

#include <unistd.h>

#include <algorithm>

#include "exporters/prometheus/exposition.h"

#include "common/log.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "common/tsan_lock.h"
#include "exporters/prometheus/metric_families.h"

namespace ncclscope {

std::string SerializeTextfile(std::vector<prometheus::MetricFamily> families, const ProcessIdentity& identity,
                              long pid) {
  std::vector<std::pair<std::string, std::string>> extra = identity.Labels();
  extra.emplace_back("pid", std::to_string(pid));
  for (prometheus::MetricFamily& family : families) {
    for (prometheus::ClientMetric& metric : family.metric) {
      for (prometheus::ClientMetric::Label& label : metric.label) {
        // node_exporter's own target labels: a textfile series must never carry them (a collision would be
        // renamed by Prometheus, or with honor_labels would overwrite the target's).
        if (label.name == "job" || label.name == "instance") label.name = "exported_" + label.name;
      }
    }
  }
  AddLabelsToEverySeries(extra, &families);
  return SerializeExposition(families);
}

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
  // Bound to this process's owner lock: once the lock is free, removed after NCCLSCOPE_OUTPUT_GRACE_S.
  name_ = dir_->OwnedName(".prom");
  (void)Identity();  // computed here, on the init thread, where the CUDA device is current
  {
    AnnotatedLock lock(&mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void TextfileWriter::Stop() {
  if (!thread_.joinable()) return;
  {
    AnnotatedLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  thread_.join();
  Write();  // the final figures
}

void TextfileWriter::Run() {
  const absl::Duration interval = absl::Seconds(Params().Int(ParamId::kPromTextfileIntervalS));
  while (!WaitForStop(interval)) Write();
}

bool TextfileWriter::WaitForStop(absl::Duration timeout) {
  AnnotatedLock lock(&mu_);
  return AnnotatedWaitFor(&cv_, &mu_, &stop_, timeout);
}

void TextfileWriter::Write() {
  // A failure warns once, naming the file, and leaves the previous figures in place.
  (void)dir_->WriteAtomically(
      name_, SerializeTextfile(CollectMetricFamilies(IdentityPlacement::kTextfile), Identity(), getpid()));
}

}  // namespace ncclscope
