// A small real NCCL job for the GPU proof (gpu-proof.md): one rank per process, ranks meet through a unique-id file.
// Run by run_real_nccl.sh, which loads ncclscope as NCCL's net and profiler plugin.
// Usage: nccl_job RANK NRANKS ID_FILE SCENARIO [ARGS...]
//   timing ITERS SIZE...  all-reduces of each size, timed with CUDA events; results checked
//   p2p_group             grouped sends and receives of several sizes to every peer (one ncclGroupStart/End)
//   graph                 an all-reduce captured into a CUDA graph and replayed 5 times
//   split                 ncclCommSplit into a sub-communicator, all-reduce and all-gather on it, parent too
//   abort                 one all-reduce, then rank 0 starts a second that no peer joins and aborts the comm
// Every line the scripts parse starts with "nccl_job:".
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#define CHECK_CUDA(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); std::exit(2); } } while (0)
#define CHECK_NCCL(x) do { ncclResult_t r = (x); if (r != ncclSuccess) { \
  std::fprintf(stderr, "NCCL %s at %s:%d\n", ncclGetErrorString(r), __FILE__, __LINE__); std::exit(3); } } while (0)

namespace {

int g_rank = 0, g_nranks = 1;
int g_wrong = 0;

float* DeviceFilled(size_t count, float value) {
  float* buf = nullptr;
  CHECK_CUDA(cudaMalloc(&buf, count * sizeof(float)));
  std::vector<float> host(count, value);
  CHECK_CUDA(cudaMemcpy(buf, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  return buf;
}

void ExpectAll(const float* dev, size_t count, float want, const char* what) {
  std::vector<float> host(count);
  CHECK_CUDA(cudaMemcpy(host.data(), dev, count * sizeof(float), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (float v : host) wrong += std::fabs(v - want) > 1e-3f * std::fabs(want) + 1e-6f;
  if (wrong != 0) {
    std::printf("nccl_job: rank %d %s: %zu of %zu values wrong (want %g)\n", g_rank, what, wrong, count, want);
    ++g_wrong;
  }
}

void Timing(ncclComm_t comm, cudaStream_t stream, int iters, const std::vector<size_t>& sizes) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (size_t bytes : sizes) {
    const size_t count = bytes / sizeof(float);
    float* buf = DeviceFilled(count, 1.0f);
    float* out = DeviceFilled(count, 0.0f);
    for (int w = 0; w < 3; ++w) CHECK_NCCL(ncclAllReduce(buf, out, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    ExpectAll(out, count, static_cast<float>(g_nranks), "allreduce");
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) CHECK_NCCL(ncclAllReduce(buf, out, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    std::printf("nccl_job: rank %d allreduce %zu bytes: %.2f us per op (%d ops)\n", g_rank, bytes, 1000.0 * ms / iters,
                iters);
    CHECK_CUDA(cudaFree(buf));
    CHECK_CUDA(cudaFree(out));
  }
}

void P2pGroup(ncclComm_t comm, cudaStream_t stream) {
  const size_t counts[] = {256, 16384, 262144};  // 1 KiB, 64 KiB, 1 MiB of floats
  for (int round = 0; round < 2; ++round) {
    std::vector<float*> sends, recvs;
    CHECK_NCCL(ncclGroupStart());
    for (int peer = 0; peer < g_nranks; ++peer) {
      if (peer == g_rank) continue;
      for (size_t c : counts) {
        sends.push_back(DeviceFilled(c, static_cast<float>(100 * g_rank + peer)));
        recvs.push_back(DeviceFilled(c, -1.0f));
        CHECK_NCCL(ncclSend(sends.back(), c, ncclFloat, peer, comm, stream));
        CHECK_NCCL(ncclRecv(recvs.back(), c, ncclFloat, peer, comm, stream));
      }
    }
    CHECK_NCCL(ncclGroupEnd());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    size_t i = 0;
    for (int peer = 0; peer < g_nranks; ++peer) {
      if (peer == g_rank) continue;
      for (size_t c : counts) ExpectAll(recvs[i++], c, static_cast<float>(100 * peer + g_rank), "grouped recv");
    }
    for (float* p : sends) CHECK_CUDA(cudaFree(p));
    for (float* p : recvs) CHECK_CUDA(cudaFree(p));
  }
  std::printf("nccl_job: rank %d p2p_group done\n", g_rank);
}

void Graph(ncclComm_t comm, cudaStream_t stream) {
  const size_t count = 262144;
  float* buf = DeviceFilled(count, 1.0f);
  float* out = DeviceFilled(count, 0.0f);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CHECK_NCCL(ncclAllReduce(buf, out, count, ncclFloat, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 5; ++i) CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  ExpectAll(out, count, static_cast<float>(g_nranks), "graph allreduce");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  std::printf("nccl_job: rank %d graph done (5 replays)\n", g_rank);
}

void Split(ncclComm_t comm, cudaStream_t stream) {
  ncclComm_t sub;
  CHECK_NCCL(ncclCommSplit(comm, /*color=*/0, /*key=*/g_nranks - 1 - g_rank, &sub, nullptr));
  int sub_rank = 0, sub_n = 0;
  CHECK_NCCL(ncclCommUserRank(sub, &sub_rank));
  CHECK_NCCL(ncclCommCount(sub, &sub_n));
  const size_t count = 65536;
  float* buf = DeviceFilled(count, 2.0f);
  float* out = DeviceFilled(count * sub_n, 0.0f);
  CHECK_NCCL(ncclAllReduce(buf, out, count, ncclFloat, ncclSum, sub, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  ExpectAll(out, count, 2.0f * sub_n, "split allreduce");
  CHECK_NCCL(ncclAllGather(buf, out, count, ncclFloat, sub, stream));
  CHECK_NCCL(ncclAllReduce(buf, out, count, ncclFloat, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_NCCL(ncclCommDestroy(sub));
  std::printf("nccl_job: rank %d split done (sub rank %d of %d)\n", g_rank, sub_rank, sub_n);
}

void Abort(ncclComm_t comm, cudaStream_t stream) {
  const size_t count = 262144;
  float* buf = DeviceFilled(count, 1.0f);
  CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (g_rank == 0) CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream));  // never joined
  sleep(2);
  ncclResult_t r = ncclCommAbort(comm);
  std::printf("nccl_job: rank %d aborted the communicator: %s\n", g_rank, ncclGetErrorString(r));
  std::fflush(stdout);
  _exit(g_wrong == 0 ? 0 : 4);  // the stream may hold an aborted kernel: do not wait for it
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s RANK NRANKS ID_FILE SCENARIO [ARGS...]\n", argv[0]);
    return 1;
  }
  g_rank = std::atoi(argv[1]);
  g_nranks = std::atoi(argv[2]);
  const char* id_file = argv[3];
  const std::string scenario = argv[4];
  ncclUniqueId id;
  if (g_rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    std::string tmp = std::string(id_file) + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<char*>(&id), sizeof(id));
    std::rename(tmp.c_str(), id_file);
  } else {
    for (int i = 0; i < 600 && access(id_file, R_OK) != 0; ++i) usleep(100000);
    std::ifstream(id_file, std::ios::binary).read(reinterpret_cast<char*>(&id), sizeof(id));
  }
  int ndev = 0, version = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  CHECK_CUDA(cudaSetDevice(g_rank % ndev));
  CHECK_NCCL(ncclGetVersion(&version));
  if (g_rank == 0) std::printf("nccl_job: NCCL version code %d\n", version);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, g_nranks, id, g_rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  if (scenario == "timing" && argc >= 7) {
    std::vector<size_t> sizes;
    for (int a = 6; a < argc; ++a) sizes.push_back(std::strtoull(argv[a], nullptr, 10));
    Timing(comm, stream, std::atoi(argv[5]), sizes);
  } else if (scenario == "p2p_group") {
    P2pGroup(comm, stream);
  } else if (scenario == "graph") {
    Graph(comm, stream);
  } else if (scenario == "split") {
    Split(comm, stream);
  } else if (scenario == "abort") {
    Abort(comm, stream);
  } else {
    std::fprintf(stderr, "unknown scenario '%s' or missing arguments\n", scenario.c_str());
    return 1;
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("nccl_job: rank %d finished, %d wrong results\n", g_rank, g_wrong);
  return g_wrong == 0 ? 0 : 4;
}
