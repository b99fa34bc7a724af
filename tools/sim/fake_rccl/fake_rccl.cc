// A fake, named as one: stands in for RCCL's librccl.so in ncclscope-sim --abi-layout rccl|rccl-untagged (no RCCL
// or AMD GPU can run here). ncclscope recognises an RCCL process by a loaded librccl.so* and checks it for the
// per-call config API of NCCL 2.31 (ncclAllReduceConfig), which carries the user tag that profiler v7 adds; this
// library only has to be found under that name, with or without that symbol. Nothing here is ever called.
extern "C" {

__attribute__((visibility("default"))) int NcclscopeSimFakeRccl() { return 1; }

#ifdef NCCLSCOPE_FAKE_RCCL_COLL_CONFIG
// The name is all that matters; answers ncclInvalidUsage (5) if anything ever called it.
__attribute__((visibility("default"))) int ncclAllReduceConfig(const void*, void*, unsigned long, int, int, void*,
                                                                void*, const void*) {
  return 5;
}
#endif

}  // extern "C"
