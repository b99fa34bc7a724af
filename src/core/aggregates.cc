#include "core/aggregates.h"

namespace ncclscope {

CommAggregates::CommAggregates() : cells_(new Cell[kCells]) {}  // value-initialised: also pre-faults

uint32_t CommAggregates::Key(OpKind kind, Func func, Algo algo, Proto proto, int size_class) {
  // 1 + (kind:1 | func:5 | algo:4 | proto:3 | size:7) so that 0 stays "free".
  uint32_t k = static_cast<uint32_t>(kind);
  k = (k << 5) | static_cast<uint32_t>(func);
  k = (k << 4) | static_cast<uint32_t>(algo);
  k = (k << 3) | static_cast<uint32_t>(proto);
  k = (k << 7) | static_cast<uint32_t>(size_class & 0x7f);
  return k + 1;
}

void CommAggregates::Record(OpKind kind, Func func, Algo algo, Proto proto, uint64_t bytes,
                            uint64_t bus_bytes, uint64_t duration_ns, bool latency, bool lane_owner) {
  const uint32_t key = Key(kind, func, algo, proto, SizeClass(bytes));
  uint32_t h = key * 2654435761u;
  for (int probe = 0; probe < kCells; ++probe) {
    Cell& c = cells_[(h + probe) % kCells];
    uint32_t cur = c.key.load(std::memory_order_acquire);
    if (cur == 0) {
      uint32_t expected = 0;
      if (c.key.compare_exchange_strong(expected, key, std::memory_order_acq_rel)) {
        cur = key;
      } else {
        cur = expected;
      }
    }
    if (cur != key) continue;
    c.count.Add(1, lane_owner);
    c.bytes.Add(bytes, lane_owner);
    c.bus_bytes.Add(bus_bytes, lane_owner);
    if (latency) {
      c.latency_count.Add(1, lane_owner);
      c.latency_sum_ns.Add(duration_ns, lane_owner);
      c.buckets[LatencyBucket(duration_ns)].Add(1, lane_owner);
    } else {
      c.cpu_count.Add(1, lane_owner);
      c.cpu_sum_ns.Add(duration_ns, lane_owner);
    }
    return;
  }
  dropped_full_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<AggregateCell> CommAggregates::Snapshot() const {
  std::vector<AggregateCell> out;
  for (int i = 0; i < kCells; ++i) {
    const Cell& c = cells_[i];
    uint32_t key = c.key.load(std::memory_order_acquire);
    if (key == 0) continue;
    uint32_t k = key - 1;
    AggregateCell a;
    a.size_class = static_cast<int>(k & 0x7f);
    a.proto = static_cast<Proto>((k >> 7) & 0x7);
    a.algo = static_cast<Algo>((k >> 10) & 0xf);
    a.func = static_cast<Func>((k >> 14) & 0x1f);
    a.kind = static_cast<OpKind>((k >> 19) & 0x1);
    a.count = c.count.Get();
    a.bytes = c.bytes.Get();
    a.bus_bytes = c.bus_bytes.Get();
    a.latency_count = c.latency_count.Get();
    a.latency_sum_ns = c.latency_sum_ns.Get();
    a.cpu_count = c.cpu_count.Get();
    a.cpu_sum_ns = c.cpu_sum_ns.Get();
    for (int b = 0; b < kLatencyBuckets; ++b) a.latency_buckets[b] = c.buckets[b].Get();
    out.push_back(a);
  }
  return out;
}

}  // namespace ncclscope
