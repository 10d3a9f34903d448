/* Rate limits of logged lines; see rate-limit.h. */
#include "rate-limit.h"

void rate_limit_init(struct rate_limit *r, uint64_t interval_usec, unsigned burst, uint64_t now) {
        *r = (struct rate_limit){ .interval_usec = interval_usec, .burst = burst, .window_start = now };
}

uint64_t rate_limit_take_dropped(struct rate_limit *r) {
        uint64_t n = r->dropped;

        r->dropped = 0;
        return n;
}

bool rate_limit_admit(struct rate_limit *r, uint64_t now, uint64_t *ret_told) {
        *ret_told = 0;
        if (now - r->window_start >= r->interval_usec) {
                *ret_told = rate_limit_take_dropped(r);
                r->window_start = now;
                r->window_lines = 0;
        }
        if (r->window_lines >= r->burst) {
                r->dropped++;
                r->total_dropped++;
                return false;
        }
        r->window_lines++;
        return true;
}
