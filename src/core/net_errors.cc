#include "core/net_errors.h"

#include <deque>
#include <mutex>

#include "common/clock.h"

namespace ncclscope {
namespace {

struct NetErrorLog {
  std::mutex mu;
  std::deque<NetErrorRecord> records;
};

NetErrorLog& Log() {
  static NetErrorLog* log = new NetErrorLog;  // never destroyed: a late failure at exit must not touch a dead lock
  return *log;
}

}  // namespace

void RecordNetError(NetErrorRecord record) {
  if (record.monotonic_ns == 0) record.monotonic_ns = MonotonicNs();
  NetErrorLog& log = Log();
  std::lock_guard<std::mutex> lock(log.mu);
  if (log.records.size() == kMaxNetErrors) log.records.pop_front();
  log.records.push_back(std::move(record));
}

std::vector<NetErrorRecord> RecentNetErrors() {
  NetErrorLog& log = Log();
  std::lock_guard<std::mutex> lock(log.mu);
  return {log.records.begin(), log.records.end()};
}

void ClearNetErrorsForTest() {
  NetErrorLog& log = Log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.records.clear();
}

}  // namespace ncclscope
