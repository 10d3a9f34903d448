/* A rate limit on the lines logged for one source (a server's stderr, its log messages):
 * at most burst lines an interval; what it drops is counted, to be told in one summary
 * line by its owner when the interval is over (rate_limit_admit() says when) and when the
 * source ends (rate_limit_take_dropped()). Pure: the caller gives the time. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct rate_limit {
        uint64_t interval_usec;
        unsigned burst;
        uint64_t window_start;   /* the current interval */
        unsigned window_lines;   /* admitted in it */
        uint64_t dropped;        /* dropped and not told yet */
        uint64_t total_dropped;
};

void rate_limit_init(struct rate_limit *r, uint64_t interval_usec, unsigned burst, uint64_t now);
/* Whether a line at now is logged. *ret_told is set to the lines dropped in an interval
 * that is over, which the caller tells before this line (0: nothing to tell). */
bool rate_limit_admit(struct rate_limit *r, uint64_t now, uint64_t *ret_told);
/* The lines dropped and not told yet, now told. */
uint64_t rate_limit_take_dropped(struct rate_limit *r);
