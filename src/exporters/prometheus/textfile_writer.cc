#include "exporters/prometheus/textfile_writer.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <prometheus/text_serializer.h>

#include "common/log.h"
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
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  path_ = dir + "/ncclscope-" + host + "-" + std::to_string(getpid()) + ".prom";
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
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp);
    out << prometheus::TextSerializer().Serialize(CollectMetricFamilies());
    if (!out) {
      NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kInit, "cannot write the metrics textfile %s", tmp.c_str());
      return;
    }
  }
  std::rename(tmp.c_str(), path_.c_str());
}

namespace {
ServiceRegistration g_registration(&TextfileWriter::Instance());
}  // namespace

}  // namespace ncclscope
