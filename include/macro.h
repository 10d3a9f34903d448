/* Small helpers shared by every module: cleanup attributes and the like. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership out of a cleanup variable. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

/* Convert libc's -1/errno convention to a negative errno. */
#define RET_NERRNO(expr) ({ int _r = (expr); _r < 0 ? -errno : _r; })

#define USEC_PER_SEC ((uint64_t)1000000)
