// Proves the event path allocates nothing after communicator init: this binary replaces the global
// operator new and counts calls made while a thread-local flag is set around the event calls.
#include <atomic>
#include <cstdlib>
#include <new>

#include "gtest/gtest.h"
#include "common/params.h"
#include "profiler/profiler.h"

namespace {
std::atomic<uint64_t> g_news{0};
thread_local bool t_counting = false;
}  // namespace

void* operator new(std::size_t n) {
  if (t_counting) g_news.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
// gcc pairs a new-expression with the library's operator new, not this replacement: it allocates with malloc,
// so free is the matching release.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace ncclscope::profiler {
namespace {

TEST(ProfilerAlloc, EventPathAllocatesNothing) {
  InitArgs a;
  a.comm_hash = 0xa110c;
  a.nranks = 8;
  void* ctx = nullptr;
  ASSERT_TRUE(Init(a, &ctx).ok());
  // Sanity: the counter does see allocations.
  t_counting = true;
  void* probe = ::operator new(16);  // a direct call may not be elided, unlike a new-expression
  asm volatile("" : : "r"(probe) : "memory");
  ::operator delete(probe);
  t_counting = false;
  ASSERT_EQ(g_news.exchange(0), 1u);

  t_counting = true;
  uint64_t handles = 0;
  for (uint64_t i = 1; i <= 5000; ++i) {  // > the flight recorder depth: wraps the ring too
    EventDesc c;
    c.type = (i % 3 == 0) ? EventType::kP2p : EventType::kColl;
    c.has_seq = c.type == EventType::kColl;
    c.seq = i;
    c.func = c.type == EventType::kP2p ? "Send" : "AllReduce";
    c.datatype = "ncclBfloat16";
    c.count = i * 64;
    c.root_or_peer = static_cast<int>(i % 8);
    c.nchannels = 32;
    c.algo = "RING";
    c.proto = "LL";
    void* h = StartEvent(ctx, c);
    handles += h != nullptr;
    StopEvent(h);
    EventDesc p;
    p.type = EventType::kProxyOp;
    p.parent = h;
    p.nsteps = 4;
    void* ph = StartEvent(ctx, p);
    EventDesc s;
    s.type = EventType::kProxyStep;
    s.parent = ph;
    void* sh = StartEvent(ctx, s);
    RecordEventState(sh, StateUpdate{9, true, 1 << 20});
    StopEvent(sh);
    RecordEventState(ph, StateUpdate{kStateProxyOpInProgress, false, 0});
    StopEvent(ph);
    for (int ch = 0; ch < 32; ++ch) {
      EventDesc k;
      k.type = EventType::kKernelCh;
      k.parent = h;
      k.has_ptimer = true;
      k.ptimer = i * 1000 + ch;
      void* kh = StartEvent(ctx, k);
      RecordEventState(kh, StateUpdate{kStateKernelChStop, true, i * 1000 + 700});
      StopEvent(kh);
    }
    EventDesc g;
    g.type = EventType::kGroupApi;
    void* gh = StartEvent(ctx, g);
    RecordEventState(gh, StateUpdate{23, false, 0});
    StopEvent(gh);
    StartEvent(nullptr, g);  // NULL context path
    EventDesc u;
    u.type = EventType::kUnknown;
    StartEvent(ctx, u);
  }
  t_counting = false;
  EXPECT_EQ(handles, 5000u);
  EXPECT_EQ(g_news.load(), 0u) << "heap allocations on the event path";
  Finalize(ctx);
}


// NCCL IB QP NetPlugin events (NetPlugin bit on): the first event of a device resolves its counter blocks (one
// net-stats lock and allocation per device per communicator, documented); every later one allocates nothing.
TEST(ProfilerAlloc, IbQpEventsAllocateNothingOnceTheirDevicesAreKnown) {
  setenv("NCCLSCOPE_EVENT_MASK", "0xff", 1);
  ReloadParams();
  InitArgs a;
  a.comm_hash = 0xa110c1b;
  a.nranks = 8;
  void* ctx = nullptr;
  ASSERT_TRUE(Init(a, &ctx).ok());
  auto round = [&](uint64_t i) {
    EventDesc p;
    p.type = EventType::kProxyOp;
    p.is_send = (i % 2) == 0;
    p.nsteps = 1;
    void* ph = StartEvent(ctx, p);
    EventDesc s;
    s.type = EventType::kProxyStep;
    s.parent = ph;
    void* sh = StartEvent(ctx, s);
    void* qps[4];
    for (int q = 0; q < 4; ++q) {
      EventDesc n;
      n.type = EventType::kNetPlugin;
      n.parent = sh;
      n.net_source = NetSource::kIb;
      n.net_device = q;
      n.net_length = 1 << 16;
      qps[q] = StartEvent(ctx, n);
    }
    for (void* h : qps) StopEvent(h);
    RecordEventState(sh, StateUpdate{kStateProxyStepRecvFlushWait, true, 1 << 18});
    StopEvent(sh);
    StopEvent(ph);
  };
  round(0);  // warm-up: devices 0-3 seen once
  round(1);
  t_counting = true;
  for (uint64_t i = 0; i < 2000; ++i) round(i);
  t_counting = false;
  EXPECT_EQ(g_news.load(), 0u) << "heap allocations on the IB QP event path";
  Finalize(ctx);
  unsetenv("NCCLSCOPE_EVENT_MASK");
  ReloadParams();
}

}  // namespace
}  // namespace ncclscope::profiler
