/* Linked into the plugin and the shipped tools when NCCLSCOPE_PORTABLE_LINK is on (cmake/portable_link.cmake), so
 * that what Debian 12 builds loads on older glibc (the floor is NCCLSCOPE_GLIBC_FLOOR; tests/abi/glibc_floor.sh
 * checks it).
 *
 * The linker binds every call to the newest version of a glibc symbol that the build host's libc has: pthread_* and
 * dl* to GLIBC_2.34 (when libpthread and libdl moved into libc), stat and friends to 2.33 (when they became real
 * symbols), getrandom, getentropy and explicit_bzero to 2.25, and gcc 12's libstdc++ and libgcc add
 * __libc_single_threaded (2.32), _dl_find_object (2.35) and arc4random (2.36). What stays is at most GLIBC_2.17
 * (clock_gettime). A `.symver` in our own sources would only move our own calls; these hidden definitions move
 * every caller in the link, libstdc++.a, libgcc_eh.a and abseil included, since a definition in an object file wins
 * over the shared libc. Each one either calls the symbol's oldest version (glibc keeps them all, so this is the same
 * code a program built on an old glibc calls) or, for what old glibc lacks, does the job itself.
 *
 * Hidden: none of this is exported, so nothing else in the process ever calls these. x86-64 only (the version names
 * are x86-64's).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "glibc_floor.c names x86-64's glibc symbol versions; configure with -DNCCLSCOPE_PORTABLE_LINK=OFF"
#endif

#define FLOOR_LOCAL __attribute__((visibility("hidden")))
/* OLDEST(name, ver): floor_<name> is glibc's name@ver, the version a program linked on an old glibc calls. */
#define OLDEST(name, ver) __asm__(".symver floor_" #name "," #name "@" ver)

/* FORWARD(version, return type, name, (parameters), (arguments)): a hidden name() that calls name@version. */
#define FORWARD(ver, ret, name, params, args) \
  ret floor_##name params;                     \
  OLDEST(name, ver);                           \
  FLOOR_LOCAL ret name params { return floor_##name args; }

/* --- pthread_*: libpthread.so.0 before 2.34 (cmake/portable_link.cmake adds it to DT_NEEDED) ------------------ */
FORWARD("GLIBC_2.2.5", int, pthread_create, (pthread_t * t, const pthread_attr_t* a, void* (*fn)(void*), void* arg),
        (t, a, fn, arg))
FORWARD("GLIBC_2.2.5", int, pthread_join, (pthread_t t, void** ret), (t, ret))
FORWARD("GLIBC_2.2.5", int, pthread_detach, (pthread_t t), (t))
FORWARD("GLIBC_2.2.5", int, pthread_kill, (pthread_t t, int sig), (t, sig))
FORWARD("GLIBC_2.2.5", int, pthread_once, (pthread_once_t * o, void (*fn)(void)), (o, fn))
FORWARD("GLIBC_2.2.5", int, pthread_key_create, (pthread_key_t * k, void (*d)(void*)), (k, d))
/* libgcc's and libstdc++'s "are threads linked in" probe (a weak reference): defined, so always yes. */
FORWARD("GLIBC_2.2.5", int, __pthread_key_create, (pthread_key_t * k, void (*d)(void*)), (k, d))
FORWARD("GLIBC_2.2.5", int, pthread_key_delete, (pthread_key_t k), (k))
FORWARD("GLIBC_2.2.5", void*, pthread_getspecific, (pthread_key_t k), (k))
/* glibc declares the value access(none): passed on, never read, so gcc's "may be used uninitialized" is moot. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
int floor_pthread_setspecific(pthread_key_t, const void*);
OLDEST(pthread_setspecific, "GLIBC_2.2.5");
FLOOR_LOCAL int pthread_setspecific(pthread_key_t k, const void* v) { return floor_pthread_setspecific(k, v); }
#pragma GCC diagnostic pop
FORWARD("GLIBC_2.12", int, pthread_setname_np, (pthread_t t, const char* n), (t, n))
FORWARD("GLIBC_2.12", int, pthread_getname_np, (pthread_t t, char* n, size_t len), (t, n, len))
FORWARD("GLIBC_2.3.4", int, pthread_setaffinity_np, (pthread_t t, size_t size, const cpu_set_t* set), (t, size, set))
FORWARD("GLIBC_2.2.5", int, pthread_sigmask, (int how, const sigset_t* set, sigset_t* old), (how, set, old))
FORWARD("GLIBC_2.2.5", int, pthread_attr_setstacksize, (pthread_attr_t * a, size_t size), (a, size))
FORWARD("GLIBC_2.2.5", int, pthread_attr_getstacksize, (const pthread_attr_t* a, size_t* size), (a, size))
FORWARD("GLIBC_2.2.5", int, pthread_mutex_trylock, (pthread_mutex_t * m), (m))
FORWARD("GLIBC_2.2.5", int, pthread_mutexattr_init, (pthread_mutexattr_t * a), (a))
FORWARD("GLIBC_2.2.5", int, pthread_mutexattr_destroy, (pthread_mutexattr_t * a), (a))
FORWARD("GLIBC_2.2.5", int, pthread_mutexattr_settype, (pthread_mutexattr_t * a, int type), (a, type))
FORWARD("GLIBC_2.2.5", int, pthread_rwlock_init, (pthread_rwlock_t* restrict l, const pthread_rwlockattr_t* restrict a),
        (l, a))
FORWARD("GLIBC_2.2.5", int, pthread_rwlock_destroy, (pthread_rwlock_t * l), (l))
FORWARD("GLIBC_2.2.5", int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
FORWARD("GLIBC_2.2.5", int, pthread_rwlock_tryrdlock, (pthread_rwlock_t * l), (l))
FORWARD("GLIBC_2.2.5", int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
FORWARD("GLIBC_2.2.5", int, pthread_rwlock_trywrlock, (pthread_rwlock_t * l), (l))
FORWARD("GLIBC_2.2.5", int, pthread_rwlock_unlock, (pthread_rwlock_t * l), (l))

/* --- dl*: libdl.so.2 before 2.34 (in DT_NEEDED too). A wrapper in our own object does not change what glibc sees
 * as the caller (dlopen's $ORIGIN and namespace, dlsym(RTLD_NEXT)): the caller is still this object. ----------- */
FORWARD("GLIBC_2.2.5", void*, dlopen, (const char* file, int mode), (file, mode))
FORWARD("GLIBC_2.2.5", void*, dlsym, (void* restrict h, const char* restrict name), (h, name))
FORWARD("GLIBC_2.2.5", void*, dlvsym, (void* restrict h, const char* restrict name, const char* restrict version),
        (h, name, version))
FORWARD("GLIBC_2.2.5", int, dlclose, (void* h), (h))
FORWARD("GLIBC_2.2.5", char*, dlerror, (void), ())
FORWARD("GLIBC_2.2.5", int, dladdr, (const void* addr, Dl_info* info), (addr, info))
FORWARD("GLIBC_2.3.3", int, dlinfo, (void* restrict h, int request, void* restrict arg), (h, request, arg))

/* --- stat and friends: before 2.33 the header turned them into __xstat(_STAT_VER, ...) calls, which glibc still
 * exports. _STAT_VER is 1 on x86-64 (_STAT_VER_LINUX); struct stat and struct stat64 are one layout there. ------ */
int floor___xstat(int, const char*, struct stat*);
int floor___lxstat(int, const char*, struct stat*);
int floor___fxstat(int, int, struct stat*);
int floor___fxstatat(int, int, const char*, struct stat*, int);
OLDEST(__xstat, "GLIBC_2.2.5");
OLDEST(__lxstat, "GLIBC_2.2.5");
OLDEST(__fxstat, "GLIBC_2.2.5");
OLDEST(__fxstatat, "GLIBC_2.4");
enum { kFloorStatVer = 1 };

FLOOR_LOCAL int stat(const char* restrict path, struct stat* restrict st) { return floor___xstat(kFloorStatVer, path, st); }
FLOOR_LOCAL int lstat(const char* restrict path, struct stat* restrict st) {
  return floor___lxstat(kFloorStatVer, path, st);
}
FLOOR_LOCAL int fstat(int fd, struct stat* st) { return floor___fxstat(kFloorStatVer, fd, st); }
FLOOR_LOCAL int fstat64(int fd, struct stat64* st) { return floor___fxstat(kFloorStatVer, fd, (struct stat*)st); }
FLOOR_LOCAL int fstatat(int dirfd, const char* restrict path, struct stat* restrict st, int flags) {
  return floor___fxstatat(kFloorStatVer, dirfd, path, st, flags);
}
FLOOR_LOCAL int stat64(const char* restrict path, struct stat64* restrict st) {
  return floor___xstat(kFloorStatVer, path, (struct stat*)st);
}
FLOOR_LOCAL int lstat64(const char* restrict path, struct stat64* restrict st) {
  return floor___lxstat(kFloorStatVer, path, (struct stat*)st);
}
FLOOR_LOCAL int fstatat64(int dirfd, const char* restrict path, struct stat64* restrict st, int flags) {
  return floor___fxstatat(kFloorStatVer, dirfd, path, (struct stat*)st, flags);
}

/* --- What old glibc lacks ------------------------------------------------------------------------------------ */

/* libstdc++ reads this as a hint: nonzero lets it skip atomic reference counts while the process has one thread.
 * Ours stays 0, so libstdc++ always takes the atomic path: always correct, whatever threads exist. */
FLOOR_LOCAL char __libc_single_threaded = 0;

/* libgcc's unwinder (gcc 12, built on glibc >= 2.35) finds a PC's unwind table with _dl_find_object and has no
 * fallback. This one walks the loaded objects with dl_iterate_phdr, as libgcc did before. It fills what libgcc
 * reads on x86-64 (the map bounds and the PT_GNU_EH_FRAME address); dlfo_link_map stays NULL. */
struct FloorFind {
  uintptr_t pc;
  struct dl_find_object* out;
  int found;
};

static int FloorFindObject(struct dl_phdr_info* info, size_t size, void* data) {
  struct FloorFind* f = data;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  int inside = 0;
  void* eh_frame = NULL;
  (void)size;
  for (size_t i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD) {
      uintptr_t end = start + ph->p_memsz;
      if (start < lo) lo = start;
      if (end > hi) hi = end;
      if (f->pc >= start && f->pc < end) inside = 1;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh_frame = (void*)start;
    }
  }
  if (!inside) return 0;
  memset(f->out, 0, sizeof(*f->out));
  f->out->dlfo_map_start = (void*)lo;
  f->out->dlfo_map_end = (void*)hi;
  f->out->dlfo_eh_frame = eh_frame;
  f->found = 1;
  return 1;
}

FLOOR_LOCAL int _dl_find_object(void* pc, struct dl_find_object* result) {
  struct FloorFind f = {(uintptr_t)pc, result, 0};
  dl_iterate_phdr(FloorFindObject, &f);
  return f.found ? 0 : -1;
}

/* getrandom, getentropy, explicit_bzero (2.25) and arc4random (2.36): the kernel's getrandom system call (Linux
 * 3.17; RHEL 7's 3.10 has it backported), /dev/urandom where it is missing. */
FLOOR_LOCAL ssize_t getrandom(void* buf, size_t len, unsigned int flags) {
  return syscall(SYS_getrandom, buf, len, flags);
}

static int FloorFill(void* buf, size_t len) {
  unsigned char* p = buf;
  while (len > 0) {
    long n = syscall(SYS_getrandom, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    p += n;
    len -= (size_t)n;
  }
  if (len == 0) return 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    len -= (size_t)n;
  }
  close(fd);
  return len == 0 ? 0 : -1;
}

FLOOR_LOCAL int getentropy(void* buf, size_t len) {
  if (len > 256) {
    errno = EIO;
    return -1;
  }
  if (FloorFill(buf, len) != 0) {
    errno = EIO;
    return -1;
  }
  return 0;
}

FLOOR_LOCAL uint32_t arc4random(void) {
  uint32_t v;
  if (FloorFill(&v, sizeof(v)) == 0) return v;
  /* arc4random cannot fail; without any entropy source, a mixed clock reading (splitmix64) is the last resort. */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t z = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (uint32_t)(z ^ (z >> 31));
}

FLOOR_LOCAL void explicit_bzero(void* p, size_t len) {
  memset(p, 0, len);
  __asm__ __volatile__("" : : "r"(p) : "memory");  /* the stores may not be elided */
}
