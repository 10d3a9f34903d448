/* Monotonic time in microseconds, and conversions for libevent timers. */
#pragma once

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#include "macro.h"

static inline uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

/* Wall-clock time in microseconds, for times shown to people. */
static inline uint64_t realtime_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

static inline uint64_t usec_from_seconds(double s) {
        return s <= 0 ? 0 : (uint64_t)(s * (double)USEC_PER_SEC + 0.5);
}

static inline struct timeval timeval_from_usec(uint64_t usec) {
        return (struct timeval){ .tv_sec = (time_t)(usec / USEC_PER_SEC),
                                 .tv_usec = (suseconds_t)(usec % USEC_PER_SEC) };
}

static inline struct timeval timeval_from_seconds(double s) {
        return timeval_from_usec(usec_from_seconds(s));
}
