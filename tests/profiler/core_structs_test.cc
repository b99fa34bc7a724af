// The lock-free building blocks: flight recorder ring and aggregate table.
#include <thread>
#include <vector>

#include "core/aggregates.h"
#include "core/flight_recorder.h"
#include "gtest/gtest.h"

namespace ncclscope {
namespace {

TEST(FlightRecorder, KeepsLastNAndCountsOverwrites) {
  FlightRecorder fr(16);
  for (uint64_t i = 1; i <= 40; ++i) {
    OpRecord r;
    r.seq = i;
    r.bytes = i * 10;
    fr.Append(r, i - 1);
  }
  std::vector<OpRecord> got = fr.Snapshot(40);
  ASSERT_EQ(got.size(), 16u);
  EXPECT_EQ(got.front().seq, 25u);
  EXPECT_EQ(got.back().seq, 40u);
  EXPECT_EQ(got.back().bytes, 400u);
  EXPECT_EQ(fr.overwritten(40), 24u);
  EXPECT_LE(sizeof(OpRecord), 256u);  // "a few hundred bytes at most"
}

TEST(FlightRecorder, AnyDepthKeepsTheLastNInOrder) {
  for (int depth : {1, 5, 16, 48}) {  // a mask for powers of two, a modulo otherwise
    FlightRecorder fr(depth);
    for (uint64_t i = 1; i <= 100; ++i) {
      OpRecord r;
      r.seq = i;
      fr.Append(r, i - 1);
    }
    std::vector<OpRecord> got = fr.Snapshot(100);
    ASSERT_EQ(got.size(), static_cast<size_t>(depth)) << depth;
    for (int k = 0; k < depth; ++k) EXPECT_EQ(got[k].seq, 100u - depth + 1 + k) << depth;
  }
}

TEST(FlightRecorder, KeepsArrivalOrderAndLeavesInFlightOperationsOut) {
  FlightRecorder fr(8);
  for (uint64_t index : {0, 3, 1}) {  // 2 still in flight; 1 completes after 3
    OpRecord r;
    r.arrival = index + 1;
    fr.Append(r, index);
  }
  std::vector<OpRecord> got = fr.Snapshot(4);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].arrival, 1u);
  EXPECT_EQ(got[1].arrival, 2u);
  EXPECT_EQ(got[2].arrival, 4u);
  EXPECT_EQ(fr.overwritten(4), 0u);
}

TEST(FlightRecorder, AnOperationCompletingALapLateNeverReplacesANewerOne) {
  FlightRecorder fr(4);
  OpRecord newer;
  newer.arrival = 11;
  fr.Append(newer, 10);
  OpRecord older;  // index 6 shares index 10's slot
  older.arrival = 7;
  fr.Append(older, 6);
  std::vector<OpRecord> got = fr.Snapshot(11);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].arrival, 11u);
  EXPECT_EQ(fr.overwritten(11), 7u);
}

// Writers complete out of arrival order, some a lap late, while a reader copies: no record is ever torn, each
// snapshot is in arrival order inside its window, and the last window holds every operation not lapped.
TEST(FlightRecorder, ConcurrentWritersNeverTear) {
  constexpr int kDepth = 64;
  FlightRecorder fr(kDepth);
  std::atomic<uint64_t> arrivals{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  auto write = [&](uint64_t index, uint64_t seq) {
    OpRecord r;
    r.seq = seq;
    r.arrival = index + 1;
    r.bytes = seq * 3 + r.arrival;  // a record is consistent when bytes == seq*3 + arrival
    fr.Append(r, index);
  };
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t i = 0; i < 20000; ++i) {
        const uint64_t held = arrivals.fetch_add(1);
        // Every 97th operation of a writer completes after 100 of its later ones: more than a lap late.
        const int later = (i % 97 == 0) ? 100 : 0;
        for (int k = 0; k < later; ++k, ++i) write(arrivals.fetch_add(1), i * 4 + t);
        write(held, i * 4 + t);
      }
    });
  }
  std::thread reader([&] {
    while (!stop.load()) {
      const uint64_t end = arrivals.load();
      uint64_t prev = 0;
      for (const OpRecord& r : fr.Snapshot(end)) {
        ASSERT_EQ(r.bytes, r.seq * 3 + r.arrival);
        ASSERT_GT(r.arrival, prev);
        ASSERT_LE(r.arrival, end);
        ASSERT_GT(r.arrival + kDepth, end);
        prev = r.arrival;
      }
    }
  });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  const uint64_t end = arrivals.load();
  EXPECT_GE(end, 80000u);
  EXPECT_EQ(fr.overwritten(end), end - kDepth);
  // Late operations are over 100 arrivals old, outside the last window, so every operation in it completed in
  // place. One per writer may have been dropped: it found its slot being written by a late one a lap older.
  EXPECT_GE(fr.Snapshot(end).size(), static_cast<size_t>(kDepth - 4));
}

TEST(Aggregates, CellsHistogramsAndCpuKeptApart) {
  CommAggregates agg;
  // Both lanes: a snapshot sums them.
  agg.Record(OpKind::kColl, Func::kAllReduce, Algo::kRing, Proto::kSimple, 4096, 6144, 1000, true, true);
  agg.Record(OpKind::kColl, Func::kAllReduce, Algo::kRing, Proto::kSimple, 4096, 6144, 3000, true, false);
  agg.Record(OpKind::kColl, Func::kAllReduce, Algo::kRing, Proto::kSimple, 4096, 6144, 50, false, true);
  agg.Record(OpKind::kColl, Func::kAllReduce, Algo::kTree, Proto::kLL, 4096, 6144, 700, true, false);
  auto cells = agg.Snapshot();
  ASSERT_EQ(cells.size(), 2u);
  for (const auto& c : cells) {
    if (c.algo == Algo::kRing) {
      EXPECT_EQ(c.func, Func::kAllReduce);
      EXPECT_EQ(c.proto, Proto::kSimple);
      EXPECT_EQ(c.size_class, 13);
      EXPECT_EQ(c.count, 3u);
      EXPECT_EQ(c.bytes, 3 * 4096u);
      EXPECT_EQ(c.latency_count, 2u);
      EXPECT_EQ(c.latency_sum_ns, 4000u);
      EXPECT_EQ(c.latency_buckets[9], 1u);   // 1000 ns in [512, 1024)
      EXPECT_EQ(c.latency_buckets[11], 1u);  // 3000 ns in [2048, 4096)
      EXPECT_EQ(c.cpu_count, 1u);            // the CPU-only duration never enters the histogram
      EXPECT_EQ(c.cpu_sum_ns, 50u);
    } else {
      EXPECT_EQ(c.algo, Algo::kTree);
      EXPECT_EQ(c.count, 1u);
    }
  }
}

TEST(Aggregates, FullTableDropsAndCounts) {
  CommAggregates agg;
  for (int i = 0; i < CommAggregates::kCells + 5; ++i) {
    // distinct size classes × functions give distinct cells
    agg.Record(OpKind::kColl, static_cast<Func>(i % 12), Algo::kRing, static_cast<Proto>(i / 12 % 4),
               1ull << (i / 48), 0, 10, true, true);
  }
  EXPECT_GT(agg.dropped_full(), 0u);
  EXPECT_EQ(agg.Snapshot().size(), static_cast<size_t>(CommAggregates::kCells));
}

// The lane owner adds with plain stores while three other threads add atomically to the same cell: nothing
// is lost (run under TSan by the concurrency tier).
TEST(Aggregates, OwnLaneAndSharedLaneLoseNothing) {
  CommAggregates agg;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&agg, owner = t == 0] {
      for (int i = 0; i < kPerThread; ++i) {
        agg.Record(OpKind::kColl, Func::kAllReduce, Algo::kRing, Proto::kSimple, 4096, 6144, 1000, true, owner);
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto cells = agg.Snapshot();
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].count, 4u * kPerThread);
  EXPECT_EQ(cells[0].bus_bytes, 4u * kPerThread * 6144);
  EXPECT_EQ(cells[0].latency_buckets[9], 4u * kPerThread);
}

}  // namespace
}  // namespace ncclscope
