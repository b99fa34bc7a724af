#include "ring_plan.h"

#include <functional>
#include <utility>

#include "op_state.h"
#include "sim_events.h"

namespace ncclscope::sim {

// Builds the per-channel step plans of one op (ring algorithms, NCCL's channel split, step-sized slices).
void Plan(OpState* op, int rank, int n, int channels, size_t step) {
  const size_t es = sizeof(float);
  op->chans.resize(channels);
  for (auto& ch : op->chans) ch.Reset();
  auto mod = [n](long v) { return static_cast<int>(((v % n) + n) % n); };
  for (int c = 0; c < channels; ++c) {
    ChannelState& ch = op->chans[c];
    size_t part_lo = op->count * c / channels, part_hi = op->count * (c + 1) / channels;
    // chunk(i): the bytes of ring chunk i handled by this channel.
    std::function<std::pair<char*, size_t>(int)> chunk;
    char* work = reinterpret_cast<char*>(op->recv);
    int ring_steps = 0;
    std::function<int(int)> send_chunk, recv_chunk;
    std::function<bool(int)> reduce;
    switch (op->func) {
      case Func::kAllReduce: {
        size_t len = part_hi - part_lo;
        chunk = [=](int i) {
          size_t lo = part_lo + len * i / n, hi = part_lo + len * (i + 1) / n;
          return std::make_pair(work + lo * es, (hi - lo) * es);
        };
        ring_steps = 2 * n - 2;
        send_chunk = [=](int t) { return mod(rank - t); };
        recv_chunk = [=](int t) { return mod(rank - t - 1); };
        reduce = [=](int t) { return t < n - 1; };
        break;
      }
      case Func::kAllGather:
      case Func::kReduceScatter: {
        bool rs = op->func == Func::kReduceScatter;
        char* base = rs ? reinterpret_cast<char*>(op->scratch.data()) : work;
        size_t count = op->count;
        chunk = [=](int i) { return std::make_pair(base + (i * count + part_lo) * es, (part_hi - part_lo) * es); };
        ring_steps = n - 1;
        send_chunk = [=](int t) { return rs ? mod(rank - t - 1) : mod(rank - t); };
        recv_chunk = [=](int t) { return rs ? mod(rank - t - 2) : mod(rank - t - 1); };
        reduce = [=](int) { return rs; };
        break;
      }
      case Func::kBroadcast: {
        int pos = mod(rank - op->root);
        auto [ptr, bytes] = std::make_pair(work + part_lo * es, (part_hi - part_lo) * es);
        ForSlices(bytes, step, [&](size_t off, size_t len) {
          if (pos != 0) ch.recvs.push_back({ptr + off, len, false});
          if (pos != n - 1) ch.sends.push_back({ptr + off, len, pos != 0 ? static_cast<int>(ch.recvs.size()) - 1 : -1});
        });
        continue;
      }
      case Func::kSendRecv: {
        const char* src = reinterpret_cast<const char*>(op->send) + part_lo * es;
        char* dst = work + part_lo * es;
        size_t bytes = (part_hi - part_lo) * es;
        ForSlices(bytes, step, [&](size_t off, size_t len) {
          ch.sends.push_back({src + off, len, -1});
          ch.recvs.push_back({dst + off, len, false});
        });
        continue;
      }
      default:
        break;
    }
    std::vector<int> recv_start(ring_steps + 1, 0);
    for (int t = 0; t < ring_steps; ++t) {
      recv_start[t] = static_cast<int>(ch.recvs.size());
      auto [rptr, rbytes] = chunk(recv_chunk(t));
      ForSlices(rbytes, step, [&](size_t off, size_t len) { ch.recvs.push_back({rptr + off, len, reduce(t)}); });
    }
    for (int t = 0; t < ring_steps; ++t) {
      auto [sptr, sbytes] = chunk(send_chunk(t));
      int j = 0;
      ForSlices(sbytes, step, [&](size_t off, size_t len) {
        // The chunk sent at step t is the one received (and reduced) at step t-1.
        ch.sends.push_back({sptr + off, len, t > 0 ? recv_start[t - 1] + j : -1});
        ++j;
      });
    }
  }
}

}  // namespace ncclscope::sim
