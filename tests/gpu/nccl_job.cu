// A minimal real NCCL job for the GPU proof (issue 6): one rank per process, ranks meet through a unique-id
// file, then time all-reduces of several sizes with CUDA events. Run by run_real_nccl.sh, which loads ncclscope
// as NCCL's net and profiler plugin. Usage: nccl_job RANK NRANKS ID_FILE ITERS SIZE_BYTES...
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#define CHECK_CUDA(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); std::exit(2); } } while (0)
#define CHECK_NCCL(x) do { ncclResult_t r = (x); if (r != ncclSuccess) { \
  std::fprintf(stderr, "NCCL %s at %s:%d\n", ncclGetErrorString(r), __FILE__, __LINE__); std::exit(3); } } while (0)

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s RANK NRANKS ID_FILE ITERS SIZE_BYTES...\n", argv[0]);
    return 1;
  }
  const int rank = std::atoi(argv[1]), nranks = std::atoi(argv[2]), iters = std::atoi(argv[4]);
  const char* id_file = argv[3];
  ncclUniqueId id;
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    std::string tmp = std::string(id_file) + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<char*>(&id), sizeof(id));
    std::rename(tmp.c_str(), id_file);
  } else {
    for (int i = 0; i < 600 && access(id_file, R_OK) != 0; ++i) usleep(100000);
    std::ifstream(id_file, std::ios::binary).read(reinterpret_cast<char*>(&id), sizeof(id));
  }
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  CHECK_CUDA(cudaSetDevice(rank % ndev));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int a = 5; a < argc; ++a) {
    const size_t bytes = std::strtoull(argv[a], nullptr, 10);
    const size_t count = bytes / sizeof(float);
    float* buf = nullptr;
    CHECK_CUDA(cudaMalloc(&buf, bytes));
    std::vector<float> host(count, 1.0f);
    CHECK_CUDA(cudaMemcpy(buf, host.data(), bytes, cudaMemcpyHostToDevice));
    for (int w = 0; w < 3; ++w) CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (rank == 0) std::printf("allreduce %zu bytes: %.2f us per op (%d ops)\n", bytes, 1000.0 * ms / iters, iters);
    CHECK_CUDA(cudaFree(buf));
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  return 0;
}
