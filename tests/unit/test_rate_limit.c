/* Unit tests for rate-limit.c, the limit a server's stderr and its log messages share:
 * burst lines an interval, the rest counted and told once the interval is over. */
#include <criterion/criterion.h>

#include "rate-limit.h"

#define SEC 1000000ull

Test(rate_limit, burst_then_dropped_then_told) {
        struct rate_limit r;
        uint64_t told;

        rate_limit_init(&r, 10 * SEC, 3, 100 * SEC);
        for (int i = 0; i < 3; i++) {
                cr_assert(rate_limit_admit(&r, 100 * SEC + (uint64_t)i, &told));
                cr_assert_eq(told, 0);
        }
        cr_assert_not(rate_limit_admit(&r, 101 * SEC, &told));
        cr_assert_not(rate_limit_admit(&r, 109 * SEC, &told));
        cr_assert_eq(told, 0, "told before the interval is over");
        cr_assert(rate_limit_admit(&r, 110 * SEC, &told), "a new interval admits again");
        cr_assert_eq(told, 2);
        cr_assert_eq(r.total_dropped, 2);
        cr_assert_eq(rate_limit_take_dropped(&r), 0, "told once");
}

Test(rate_limit, take_dropped_at_the_end) {
        struct rate_limit r;
        uint64_t told;

        rate_limit_init(&r, 10 * SEC, 1, 0);
        cr_assert(rate_limit_admit(&r, 1, &told));
        cr_assert_not(rate_limit_admit(&r, 2, &told));
        cr_assert_eq(rate_limit_take_dropped(&r), 1);
        cr_assert_eq(rate_limit_take_dropped(&r), 0);
}
