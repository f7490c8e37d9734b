/* A disk whose flush is slower, for benchmarks/pg_scaleout.py --flush-delay-us.
 *
 * Loaded into the PostgreSQL server with LD_PRELOAD: every fdatasync() (the server's WAL
 * flush, wal_sync_method's default on Linux) returns OPENPROGRAM_FLUSH_DELAY_US
 * microseconds later than the real one did, as on a disk whose cache flush takes that
 * long. The flush itself still happens. Built by the benchmark with the C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

int fdatasync(int fd) {
    static int (*real)(int);
    static long delay_us = -1;
    if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (delay_us < 0) {
        const char *text = getenv("OPENPROGRAM_FLUSH_DELAY_US");
        delay_us = text != NULL ? atol(text) : 0;
    }
    int rc = real(fd);
    int saved = errno;
    if (delay_us > 0) {
        struct timespec left = {delay_us / 1000000, (delay_us % 1000000) * 1000};
        while (nanosleep(&left, &left) != 0 && errno == EINTR) {
        }
    }
    errno = saved;
    return rc;
}
