// The async-event dispatch (async_events.h) over a synthetic device context, no libibverbs: which events
// mark which comm, which bump the device's fatal generation, and which are ignored. (The thread itself,
// on rxe0's real events, is exercised by rdma_guest_verbs_fault_device.)
#include "net/verbs/async_events.h"

#include <gtest/gtest.h>

#include "net/verbs/verbs_device.h"

namespace ncclscope::net::verbs {
namespace {

constexpr uint64_t kSecond = 1000000000ull;

const char* FakeEventStr(ibv_event_type t) { return t == IBV_EVENT_QP_FATAL ? "local work queue catastrophic error" : "x"; }

struct FakeDevice {
  IbvApi api;
  VerbsDeviceCtx dev;
  FakeDevice() {
    api.event_type_str = FakeEventStr;
    dev.api = &api;
    dev.info.device_name = "fake0";
    dev.info.port_num = 1;
  }
};

ibv_async_event QpEvent(ibv_event_type t, ibv_qp* qp) {
  ibv_async_event ev{};
  ev.event_type = t;
  ev.element.qp = qp;
  return ev;
}

ibv_async_event PortEvent(ibv_event_type t, int port) {
  ibv_async_event ev{};
  ev.event_type = t;
  ev.element.port_num = port;
  return ev;
}

TEST(AsyncEvents, QpFatalMarksOnlyTheCommThatOwnsTheQp) {
  FakeDevice f;
  ibv_qp qp_a{}, qp_b{};
  ibv_cq cq_b{};
  AsyncFault a, b;
  WatchForAsyncEvents(&f.dev, &qp_a, 17, &a);
  WatchForAsyncEvents(&f.dev, &qp_b, 18, &b);
  WatchForAsyncEvents(&f.dev, &cq_b, 18, &b);
  const uint32_t gen = f.dev.events.fatal_gen.load();
  HandleAsyncEvent(&f.dev, QpEvent(IBV_EVENT_QP_FATAL, &qp_a), 0);
  EXPECT_FALSE(a.Clear(f.dev.events.fatal_gen, gen));
  EXPECT_EQ(a.type(), IBV_EVENT_QP_FATAL);
  EXPECT_EQ(a.qp_num(), 17u);
  EXPECT_TRUE(b.Clear(f.dev.events.fatal_gen, gen));
  // The first event wins; a CQ error names the comm's QP.
  HandleAsyncEvent(&f.dev, QpEvent(IBV_EVENT_QP_ACCESS_ERR, &qp_a), 0);
  EXPECT_EQ(a.type(), IBV_EVENT_QP_FATAL);
  ibv_async_event cq_ev{};
  cq_ev.event_type = IBV_EVENT_CQ_ERR;
  cq_ev.element.cq = &cq_b;
  HandleAsyncEvent(&f.dev, cq_ev, 0);
  EXPECT_EQ(b.type(), IBV_EVENT_CQ_ERR);
  EXPECT_EQ(b.qp_num(), 18u);
  EXPECT_EQ(DescribeAsyncEvent(&f.dev, IBV_EVENT_QP_FATAL),
            "local work queue catastrophic error (IBV_EVENT_QP_FATAL)");
  UnwatchAsyncEvents(&f.dev, &a);
  UnwatchAsyncEvents(&f.dev, &b);
}

TEST(AsyncEvents, UnwatchedQpsAndHarmlessEventsChangeNothing) {
  FakeDevice f;
  ibv_qp qp{}, gone{};
  AsyncFault fault, old;
  WatchForAsyncEvents(&f.dev, &qp, 5, &fault);
  WatchForAsyncEvents(&f.dev, &gone, 6, &old);
  UnwatchAsyncEvents(&f.dev, &old);  // as a closed comm does before destroying its QPs
  HandleAsyncEvent(&f.dev, QpEvent(IBV_EVENT_QP_FATAL, &gone), 0);
  HandleAsyncEvent(&f.dev, QpEvent(IBV_EVENT_COMM_EST, &qp), 0);
  HandleAsyncEvent(&f.dev, QpEvent(IBV_EVENT_QP_LAST_WQE_REACHED, &qp), 0);
  HandleAsyncEvent(&f.dev, PortEvent(IBV_EVENT_PORT_ERR, 2), 0);  // another port of the device
  HandleAsyncEvent(&f.dev, PortEvent(IBV_EVENT_PORT_ACTIVE, 1), 0);
  HandleAsyncEvent(&f.dev, PortEvent(IBV_EVENT_GID_CHANGE, 1), 0);
  EXPECT_TRUE(fault.Clear(f.dev.events.fatal_gen, 0));
  EXPECT_TRUE(old.Clear(f.dev.events.fatal_gen, 0));
  UnwatchAsyncEvents(&f.dev, &fault);
}

TEST(AsyncEvents, PortErrorFailsOnlyOnceThePortStaysDownPastItsTimeout) {
  FakeDevice f;
  f.dev.events.port_down_timeout_ns = 10 * kSecond;
  AsyncFault before;
  const uint32_t gen_before = f.dev.events.fatal_gen.load();
  // A flap: down at 100 s, back at 105 s. The timeout's check after that finds nothing to fail.
  HandleAsyncEvent(&f.dev, PortEvent(IBV_EVENT_PORT_ERR, 1), 100 * kSecond);
  CheckPortDownTimeout(&f.dev, 109 * kSecond);
  EXPECT_TRUE(before.Clear(f.dev.events.fatal_gen, gen_before));
  HandleAsyncEvent(&f.dev, PortEvent(IBV_EVENT_PORT_ACTIVE, 1), 105 * kSecond);
  CheckPortDownTimeout(&f.dev, 200 * kSecond);
  EXPECT_TRUE(before.Clear(f.dev.events.fatal_gen, gen_before));
  // Down again at 300 s and not back: every comm fails at 310 s, once.
  HandleAsyncEvent(&f.dev, PortEvent(IBV_EVENT_PORT_ERR, 1), 300 * kSecond);
  CheckPortDownTimeout(&f.dev, 309 * kSecond);
  EXPECT_TRUE(before.Clear(f.dev.events.fatal_gen, gen_before));
  CheckPortDownTimeout(&f.dev, 310 * kSecond);
  EXPECT_FALSE(before.Clear(f.dev.events.fatal_gen, gen_before));
  EXPECT_EQ(f.dev.events.last_fatal_event.load(), IBV_EVENT_PORT_ERR);
  const uint32_t gen_after = f.dev.events.fatal_gen.load();
  CheckPortDownTimeout(&f.dev, 320 * kSecond);
  EXPECT_EQ(f.dev.events.fatal_gen.load(), gen_after);
}

TEST(AsyncEvents, PortErrorWithTimeoutZeroAndDeviceFatalFailEveryCommStartedBefore) {
  FakeDevice f;
  f.dev.events.port_down_timeout_ns = 0;
  AsyncFault before;
  const uint32_t gen_before = f.dev.events.fatal_gen.load();
  HandleAsyncEvent(&f.dev, PortEvent(IBV_EVENT_PORT_ERR, 1), 0);
  EXPECT_FALSE(before.Clear(f.dev.events.fatal_gen, gen_before));
  EXPECT_EQ(f.dev.events.last_fatal_event.load(), IBV_EVENT_PORT_ERR);
  // A comm created after the port came back is not affected by the old event.
  const uint32_t gen_after = f.dev.events.fatal_gen.load();
  AsyncFault after;
  EXPECT_TRUE(after.Clear(f.dev.events.fatal_gen, gen_after));
  ibv_async_event fatal{};
  fatal.event_type = IBV_EVENT_DEVICE_FATAL;
  HandleAsyncEvent(&f.dev, fatal, 0);
  EXPECT_FALSE(after.Clear(f.dev.events.fatal_gen, gen_after));
  EXPECT_EQ(f.dev.events.last_fatal_event.load(), IBV_EVENT_DEVICE_FATAL);
}

}  // namespace
}  // namespace ncclscope::net::verbs
