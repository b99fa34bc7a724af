// A stand-in libnccl.so.2 for comm_dump_test: only ncclGetVersion, answering NCCL 2.28.9's code.
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  if (version == nullptr) return 4;  // ncclInvalidArgument
  *version = 22809;
  return 0;
}
