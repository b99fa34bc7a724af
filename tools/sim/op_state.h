// The proxy's view of one enqueued operation: per-channel step plans (which bytes each network step moves,
// and which receive a send waits for), the pipeline counters of NCCL_STEPS-deep send/recv queues, the
// profiler handles of its events and the phandles handed to the net plugin. Owned by the communicator;
// touched by the app thread before enqueue and after completion, by the progress thread in between.
#ifndef NCCLSCOPE_TOOLS_SIM_OP_STATE_H_
#define NCCLSCOPE_TOOLS_SIM_OP_STATE_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "communicator.h"
#include "ncclscope/abi/common.h"

namespace ncclscope::sim {

struct SendStep {
  const char* src;
  size_t bytes;
  int dep;  // index of the receive this send forwards, or -1
};
struct RecvStep {
  char* dst;
  size_t bytes;
  bool reduce;  // float sum into dst, else copy
};

// NCCL's phandle: {stepEventHandle, subArgs}. The net plugin only passes it back through the callback.
struct PHandle {
  void* step_event = nullptr;
  OpState* op = nullptr;
};

// NCCL IB's per-request profiler info (--ib-events): the QP event handles and ONE descriptor that is rewritten
// for every QP and handed over by pointer, exactly as net_ib does (so a profiler must copy it at start).
struct IbQpEvents {
  void* handles[kMaxIbQps] = {};
  int n = 0;
  ncclscope_net_ib_descr_v1_t descr{};
};

struct ChannelState {
  std::vector<SendStep> sends;
  std::vector<RecvStep> recvs;
  int s_started = 0, s_filled = 0, s_posted = 0, s_done = 0;
  int r_started = 0, r_posted = 0, r_done = 0;
  void* s_req[kNcclSteps] = {};
  void* r_req[kNcclSteps] = {};
  PHandle s_ph[kNcclSteps];
  PHandle r_ph[kNcclSteps];
  IbQpEvents s_ib[kNcclSteps];
  IbQpEvents r_ib[kNcclSteps];
  void* send_op_ev = nullptr;
  void* recv_op_ev = nullptr;
  bool send_op_open = false, recv_op_open = false;
  void* kernel_ch_ev[2] = {};
  uint64_t kernel_start_gt = 0, first_recv_gt = 0;  // GPU-timer stand-ins for the v7 KernelPhase events
  void Reset() {
    sends.clear();
    recvs.clear();
    s_started = s_filled = s_posted = s_done = 0;
    r_started = r_posted = r_done = 0;
    send_op_ev = recv_op_ev = nullptr;
    send_op_open = recv_op_open = false;
    kernel_ch_ev[0] = kernel_ch_ev[1] = nullptr;
    kernel_start_gt = first_recv_gt = 0;
  }
};

struct OpState {
  Communicator* comm = nullptr;
  Func func = Func::kAllReduce;
  int mask = 0;  // activation snapshot at the API call
  const float* send = nullptr;
  float* recv = nullptr;
  size_t count = 0;
  int root = 0;
  std::vector<float> scratch;  // ReduceScatter's reduction space
  std::vector<ChannelState> chans;
  // CollApi (or P2pApi Send, Recv) handles: the parents of Coll/P2p, kept for graph replays.
  void* api_ev[2] = {};
  // Events the proxy parents to: Coll (or P2p Send, P2p Recv).
  void* task_ev[2] = {};
  void* group_ev = nullptr;
  uint64_t seq = 0;
  uint64_t tag = 0;  // v7 user tag (--tags)
  bool stall = false;  // --mismatch: issued, but moves no bytes (its peers run another collective)
  // Completion.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;
};

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_OP_STATE_H_
