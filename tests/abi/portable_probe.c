/* Loads tests/abi/portable_probe_module.cc's module as NCCL loads a plugin and runs its exception cases. Linked
 * portably too, so that it runs on an old glibc (tests/package/old_glibc_test.sh); its constructor checks that the
 * portable start-up (glibc_floor_exe.c) ran the program's constructors there.
 * Usage: portable_probe MODULE */
#include <dlfcn.h>
#include <stdio.h>

static int g_constructed;
__attribute__((constructor)) static void Construct(void) { g_constructed = 1; }

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: portable_probe MODULE\n");
    return 2;
  }
  if (!g_constructed) {
    fprintf(stderr, "FAIL: the program's constructor did not run\n");
    return 1;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  int (*probe)(void) = (int (*)(void))dlsym(lib, "ncclscope_portable_probe");
  if (probe == NULL) {
    fprintf(stderr, "FAIL: dlsym: %s\n", dlerror());
    return 1;
  }
  int rc = probe();
  if (rc != 0) {
    fprintf(stderr, "FAIL: exception cases in %s: result %#x (bits 1..16: the cases that passed)\n", argv[1], rc);
    return 1;
  }
  printf("OK: constructors ran; exceptions thrown and caught inside %s (thrown by us, by libstdc++, across threads)\n",
         argv[1]);
  return 0;
}
