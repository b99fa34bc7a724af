/* The executables' half of glibc_floor.c: their start-up code (Scrt1.o of glibc >= 2.34) calls
 * __libc_start_main@GLIBC_2.34 with no init function, because that glibc runs the program's constructors itself.
 * Older glibc runs them only through the init function it is given, so this passes one (what libc_nonshared.a's
 * __libc_csu_init did) to the oldest version. glibc >= 2.34 calls a given init function instead of running the
 * constructors itself (its "legacy program" path), so they run once either way. Destructors (.fini_array) are run by
 * the dynamic loader on every glibc. */
#define _GNU_SOURCE
#include <stddef.h>

#if !defined(__x86_64__)
#error "glibc_floor_exe.c names x86-64's glibc symbol versions; configure with -DNCCLSCOPE_PORTABLE_LINK=OFF"
#endif

typedef void (*FloorInitFn)(int, char**, char**);
extern FloorInitFn __preinit_array_start[] __attribute__((visibility("hidden")));
extern FloorInitFn __preinit_array_end[] __attribute__((visibility("hidden")));
extern FloorInitFn __init_array_start[] __attribute__((visibility("hidden")));
extern FloorInitFn __init_array_end[] __attribute__((visibility("hidden")));
extern void _init(void);

int floor___libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, void (*init)(void),
                            void (*fini)(void), void (*rtld_fini)(void), void* stack_end);
__asm__(".symver floor___libc_start_main,__libc_start_main@GLIBC_2.2.5");

static void FloorCsuInit(int argc, char** argv, char** envp) {
  for (size_t i = 0; i < (size_t)(__preinit_array_end - __preinit_array_start); ++i)
    __preinit_array_start[i](argc, argv, envp);
  _init();
  for (size_t i = 0; i < (size_t)(__init_array_end - __init_array_start); ++i) __init_array_start[i](argc, argv, envp);
}

__attribute__((visibility("hidden"))) int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                                            void (*init)(void), void (*fini)(void),
                                                            void (*rtld_fini)(void), void* stack_end) {
  (void)init;
  return floor___libc_start_main(main, argc, argv, (void (*)(void))FloorCsuInit, fini, rtld_fini, stack_end);
}
