// LD_PRELOAD shim for scripts/bench/loop_rate.sh (SLOW_SYNC_US): every fsync / fdatasync of the process sleeps that many
// microseconds first, a stand-in for a disk whose flush is slower than this machine's (a network block device).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
static void wait_us(void) { const char* e = getenv("SLOW_SYNC_US"); if (e) usleep((useconds_t)atoi(e)); }
int fsync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fsync"); wait_us(); return real(fd); }
int fdatasync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fdatasync"); wait_us(); return real(fd); }
