#include "core/net_errors.h"

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

struct NetErrorLog {
  absl::Mutex mu;
  std::deque<NetErrorRecord> records ABSL_GUARDED_BY(mu);
};

NetErrorLog& Log() {
  static NetErrorLog* log = new NetErrorLog;  // never destroyed: a late failure at exit must not touch a dead lock
  return *log;
}

}  // namespace

void RecordNetError(NetErrorRecord record) {
  if (record.monotonic_ns == 0) record.monotonic_ns = MonotonicNs();
  NetErrorLog& log = Log();
  AnnotatedLock lock(&log.mu);
  if (log.records.size() == kMaxNetErrors) log.records.pop_front();
  log.records.push_back(std::move(record));
}

std::vector<NetErrorRecord> RecentNetErrors() {
  NetErrorLog& log = Log();
  AnnotatedLock lock(&log.mu);
  return {log.records.begin(), log.records.end()};
}

void ClearNetErrorsForTest() {
  NetErrorLog& log = Log();
  AnnotatedLock lock(&log.mu);
  log.records.clear();
}

}  // namespace ncclscope
