// The runtime starts services when its first user arrives and stops (joins) them when the last leaves,
// any number of times.
#include <gtest/gtest.h>

#include <atomic>
#include <system_error>
#include <thread>

#include "common/runtime.h"

namespace ncclscope {
namespace {

class CountingService : public Service {
 public:
  const char* name() const override { return "counting"; }
  void Start() override {
    ++starts;
    running = true;
    thread_ = std::thread([this] {
      while (running.load()) std::this_thread::yield();
    });
  }
  void Stop() override {
    running = false;
    thread_.join();
    ++stops;
  }
  std::atomic<int> starts{0}, stops{0};
  std::atomic<bool> running{false};

 private:
  std::thread thread_;
};

TEST(Runtime, ServicesFollowTheUserCountAcrossCycles) {
  static CountingService service;  // services live for the process, like the plugin's globals
  Runtime& rt = Runtime::Instance();
  ASSERT_EQ(rt.users(), 0);
  rt.RegisterService(&service);
  rt.RegisterService(&service);  // idempotent
  uint64_t cycles_before = rt.cycles();
  for (int cycle = 1; cycle <= 3; ++cycle) {
    rt.Acquire("test a");
    rt.Acquire("test b");
    EXPECT_EQ(service.starts.load(), cycle);
    EXPECT_TRUE(service.running.load());
    rt.Release("test b");
    EXPECT_TRUE(service.running.load()) << "stopped while a user remains";
    rt.Release("test a");
    EXPECT_FALSE(service.running.load());
    EXPECT_EQ(service.stops.load(), cycle);
  }
  EXPECT_EQ(rt.cycles(), cycles_before + 3);
  rt.Release("unbalanced");  // logged, not fatal
  EXPECT_EQ(rt.users(), 0);
}

// What std::thread throws when the process is out of threads: the job's init must not fail for it.
class ThrowingService : public Service {
 public:
  const char* name() const override { return "throwing"; }
  void Start() override { throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again)); }
  void Stop() override {}
};

TEST(Runtime, AServiceThatThrowsOnStartIsSkippedAndTheOthersStart) {
  static ThrowingService throwing;
  static CountingService counting;
  Runtime& rt = Runtime::Instance();
  rt.RegisterService(&throwing);
  rt.RegisterService(&counting);
  EXPECT_NO_THROW(rt.Acquire("test"));
  EXPECT_EQ(rt.users(), 1);
  EXPECT_TRUE(counting.running.load());
  rt.Release("test");
  EXPECT_FALSE(counting.running.load());
}

TEST(Runtime, ConcurrentAcquireReleaseLeavesNoUsers) {
  Runtime& rt = Runtime::Instance();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&rt] {
      for (int i = 0; i < 200; ++i) {
        rt.Acquire("thread");
        rt.Release("thread");
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(rt.users(), 0);
}

}  // namespace
}  // namespace ncclscope
