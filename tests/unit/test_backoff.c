/* Unit tests for backoff.c: the restart delay (doubling, cap, reset after healthy
 * running) and the start limit (burst starts within a sliding interval). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "backoff.h"

#define SEC ((uint64_t)1000000)

/* The throttle of most tests: 1 s doubling up to 60 s, the doubling started over after
 * 10 s of health; at most burst starts within interval (0: no limit). */
static struct backoff throttle(unsigned burst, uint64_t interval) {
        struct backoff b;

        backoff_init(&b, 1 * SEC, 60 * SEC, 10 * SEC, burst, interval);
        return b;
}

/* A start, then an exit at exit_at; returns the delay before the next start. */
static uint64_t quick_run(struct backoff *b, uint64_t start_at, uint64_t exit_at) {
        backoff_started(b, start_at);
        return backoff_next_delay(b, exit_at);
}

Test(backoff, init) {
        struct backoff b;

        backoff_init(&b, 1 * SEC, 60 * SEC, 10 * SEC, 5, 60 * SEC);
        cr_assert_eq(b.first_delay, 1 * SEC);
        cr_assert_eq(b.max_delay, 60 * SEC);
        cr_assert_eq(b.reset_after, 10 * SEC);
        cr_assert_eq(b.burst, 5);
        cr_assert_eq(b.interval, 60 * SEC);
        cr_assert_eq(b.quick_exits, 0);
        cr_assert_eq(b.healthy_since, 0);
        cr_assert_eq(b.n_starts, 0);
}

Test(backoff, init_max_below_first_raised_to_first) {
        struct backoff b;

        backoff_init(&b, 5 * SEC, 2 * SEC, 10 * SEC, 5, 60 * SEC);
        cr_assert_eq(b.max_delay, 5 * SEC);
        cr_assert_eq(backoff_next_delay(&b, 1), 5 * SEC);
        cr_assert_eq(backoff_next_delay(&b, 2), 5 * SEC);
}

Test(backoff, doubles_up_to_cap) {
        static const uint64_t want[] = { 1, 2, 4, 8, 16, 32, 60, 60, 60 };
        struct backoff b = throttle(0, 60 * SEC);
        uint64_t t = 1000 * SEC;

        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++, t += 2 * SEC) {
                uint64_t d = quick_run(&b, t, t + SEC);
                cr_assert_eq(d, want[i] * SEC, "exit %zu: delay %llu usec, expected %llu s", i,
                             (unsigned long long)d, (unsigned long long)want[i]);
        }
        cr_assert_eq(b.quick_exits, 9);
}

Test(backoff, cap_not_a_power_of_two_multiple) {
        struct backoff b;

        backoff_init(&b, 300000, 1 * SEC, 10 * SEC, 0, 60 * SEC);
        cr_assert_eq(backoff_next_delay(&b, 1), 300000);
        cr_assert_eq(backoff_next_delay(&b, 2), 600000);
        cr_assert_eq(backoff_next_delay(&b, 3), 1 * SEC);
        cr_assert_eq(backoff_next_delay(&b, 4), 1 * SEC);
}

Test(backoff, many_quick_exits_stay_at_cap) {
        struct backoff b = throttle(0, 60 * SEC);

        for (unsigned i = 0; i < 200; i++) {
                uint64_t d = backoff_next_delay(&b, 1000 * SEC + i);
                cr_assert_leq(d, 60 * SEC, "exit %u", i);
                if (i >= 6)
                        cr_assert_eq(d, 60 * SEC, "exit %u", i);
        }
}

Test(backoff, first_delay_zero) {
        struct backoff b;

        backoff_init(&b, 0, 60 * SEC, 10 * SEC, 0, 60 * SEC);
        for (unsigned i = 0; i < 10; i++)
                cr_assert_eq(quick_run(&b, 100 * SEC + i * 2, 100 * SEC + i * 2 + 1), 0, "exit %u", i);
}

Test(backoff, first_equals_max_constant) {
        struct backoff b;

        backoff_init(&b, 3 * SEC, 3 * SEC, 10 * SEC, 0, 60 * SEC);
        for (unsigned i = 0; i < 5; i++)
                cr_assert_eq(backoff_next_delay(&b, 100 * SEC + i), 3 * SEC);
}

/* A first run that exits at once (1 s before the next start), and a second one started. */
static void second_run(struct backoff *b, uint64_t t) {
        cr_assert_eq(quick_run(b, t, t + 1), 1 * SEC);
        backoff_started(b, t + 2);
}

Test(backoff, reset_after_healthy_time) {
        struct backoff b = throttle(0, 600 * SEC);
        uint64_t t = 1000 * SEC;

        cr_assert_eq(quick_run(&b, t, t + 1), 1 * SEC);
        cr_assert_eq(quick_run(&b, t + 2, t + 3), 2 * SEC);
        cr_assert_eq(quick_run(&b, t + 4, t + 5), 4 * SEC);

        /* Healthy at t+10 s, exits exactly reset_after later: the doubling starts over. */
        backoff_started(&b, t + 6);
        backoff_healthy(&b, t + 10 * SEC);
        cr_assert_eq(backoff_next_delay(&b, t + 20 * SEC), 1 * SEC);
        cr_assert_eq(quick_run(&b, t + 21 * SEC, t + 22 * SEC), 2 * SEC);
}

Test(backoff, healthy_too_short_keeps_doubling) {
        struct backoff b = throttle(0, 600 * SEC);
        uint64_t t = 1000 * SEC;

        cr_assert_eq(quick_run(&b, t, t + 1), 1 * SEC);
        cr_assert_eq(quick_run(&b, t + 2, t + 3), 2 * SEC);
        backoff_started(&b, t + 4);
        backoff_healthy(&b, t + 5);
        cr_assert_eq(backoff_next_delay(&b, t + 5 + 10 * SEC - 1), 4 * SEC, "one usec short of reset_after");
}

Test(backoff, healthy_since_first_report_counts) {
        struct backoff b = throttle(0, 600 * SEC);
        uint64_t t = 1000 * SEC;

        second_run(&b, t);
        /* Health reported again and again (every ping): the first report is the start. */
        backoff_healthy(&b, t + 3);
        backoff_healthy(&b, t + 9 * SEC);
        backoff_healthy(&b, t + 12 * SEC);
        cr_assert_eq(b.healthy_since, t + 3);
        cr_assert_eq(backoff_next_delay(&b, t + 3 + 10 * SEC), 1 * SEC);
}

Test(backoff, health_of_previous_run_forgotten_at_start) {
        struct backoff b = throttle(0, 600 * SEC);
        uint64_t t = 1000 * SEC;

        second_run(&b, t);
        backoff_healthy(&b, t + 3);
        backoff_started(&b, t + 100 * SEC); /* e.g. a restart without an exit being counted */
        cr_assert_eq(b.healthy_since, 0);
        cr_assert_eq(backoff_next_delay(&b, t + 101 * SEC), 2 * SEC, "the new run was never healthy");
}

Test(backoff, exit_clears_healthy) {
        struct backoff b = throttle(0, 600 * SEC);
        uint64_t t = 1000 * SEC;

        backoff_started(&b, t);
        backoff_healthy(&b, t + 1);
        cr_assert_eq(backoff_next_delay(&b, t + 2), 1 * SEC);
        cr_assert_eq(b.healthy_since, 0);
        /* The next run is not healthy; its exit long after the old health must still double. */
        backoff_started(&b, t + 3);
        cr_assert_eq(backoff_next_delay(&b, t + 100 * SEC), 2 * SEC);
}

Test(backoff, explicit_reset) {
        struct backoff b = throttle(3, 60 * SEC);
        uint64_t t = 1000 * SEC;

        for (unsigned i = 0; i < 3; i++)
                quick_run(&b, t + i, t + i);
        cr_assert(backoff_limit_hit(&b, t + 10));
        backoff_reset(&b);
        cr_assert_not(backoff_limit_hit(&b, t + 10));
        cr_assert_eq(b.n_starts, 0);
        cr_assert_eq(backoff_next_delay(&b, t + 11), 1 * SEC);
        /* Settings survive. */
        cr_assert_eq(b.burst, 3);
        cr_assert_eq(b.max_delay, 60 * SEC);
}

Test(backoff, limit_counts_burst_starts) {
        struct backoff b = throttle(3, 10 * SEC);
        uint64_t t = 1000 * SEC;

        cr_assert_not(backoff_limit_hit(&b, t));
        backoff_started(&b, t);
        cr_assert_not(backoff_limit_hit(&b, t + 1));
        backoff_started(&b, t + 1 * SEC);
        cr_assert_not(backoff_limit_hit(&b, t + 2 * SEC));
        backoff_started(&b, t + 2 * SEC);
        /* A 4th start within 10 s would be more than 3. */
        cr_assert(backoff_limit_hit(&b, t + 3 * SEC));
}

Test(backoff, limit_window_slides) {
        struct backoff b = throttle(3, 10 * SEC);
        uint64_t t = 1000 * SEC;

        backoff_started(&b, t);
        backoff_started(&b, t + 4 * SEC);
        backoff_started(&b, t + 8 * SEC);
        cr_assert(backoff_limit_hit(&b, t + 10 * SEC - 1), "the first start is still within the interval");
        cr_assert_not(backoff_limit_hit(&b, t + 10 * SEC), "the first start just left the interval");
        backoff_started(&b, t + 10 * SEC);
        cr_assert(backoff_limit_hit(&b, t + 14 * SEC - 1));
        cr_assert_not(backoff_limit_hit(&b, t + 14 * SEC));
        cr_assert_not(backoff_limit_hit(&b, t + 100 * SEC));
}

Test(backoff, limit_ring_keeps_newest) {
        struct backoff b = throttle(4, 10 * SEC);
        uint64_t t = 1000 * SEC;

        /* Far more starts than the ring holds: old ones (outside the window) are overwritten,
         * the recent ones still count. */
        for (unsigned i = 0; i < 3 * BACKOFF_BURST_MAX; i++)
                backoff_started(&b, t + i * 20 * SEC);
        uint64_t last = t + (3 * BACKOFF_BURST_MAX - 1) * 20 * SEC;
        cr_assert_not(backoff_limit_hit(&b, last + 1), "one recent start");
        backoff_started(&b, last + 1);
        backoff_started(&b, last + 2);
        cr_assert_not(backoff_limit_hit(&b, last + 3));
        backoff_started(&b, last + 3);
        cr_assert(backoff_limit_hit(&b, last + 4));
}

Test(backoff, burst_zero_no_limit) {
        struct backoff b = throttle(0, 10 * SEC);
        uint64_t t = 1000 * SEC;

        for (unsigned i = 0; i < 500; i++) {
                backoff_started(&b, t + i);
                cr_assert_not(backoff_limit_hit(&b, t + i + 1), "start %u", i);
        }
}

Test(backoff, burst_one) {
        struct backoff b = throttle(1, 10 * SEC);
        uint64_t t = 1000 * SEC;

        cr_assert_not(backoff_limit_hit(&b, t));
        backoff_started(&b, t);
        cr_assert(backoff_limit_hit(&b, t + 9 * SEC));
        cr_assert_not(backoff_limit_hit(&b, t + 10 * SEC));
}

Test(backoff, interval_zero_never_hits) {
        struct backoff b = throttle(2, 0);
        uint64_t t = 1000 * SEC;

        backoff_started(&b, t);
        backoff_started(&b, t);
        cr_assert_not(backoff_limit_hit(&b, t));
}

/* startLimitBurst accepts up to 1000 (server-config.c); the limit must be the configured
 * one, not BACKOFF_BURST_MAX: 64 starts within the interval are not more than 100. */
/* The configuration caps startLimitBurst at the ring's size, so every allowed burst is
 * honoured exactly. */
Test(backoff, largest_burst_honoured) {
        struct backoff b = throttle(BACKOFF_BURST_MAX, 600 * SEC);
        uint64_t t = 1000 * SEC;

        for (unsigned i = 0; i < BACKOFF_BURST_MAX - 1; i++)
                backoff_started(&b, t + i * SEC);
        cr_assert_not(backoff_limit_hit(&b, t + BACKOFF_BURST_MAX * SEC));
        backoff_started(&b, t + BACKOFF_BURST_MAX * SEC);
        cr_assert(backoff_limit_hit(&b, t + (BACKOFF_BURST_MAX + 1) * SEC));
}

Test(backoff, unstart_keeps_start_limit_away) {
        struct backoff b = throttle(2, 60 * SEC);

        for (int i = 0; i < 10; i++) {
                backoff_started(&b, 1 + (uint64_t)i);
                backoff_unstart(&b);
        }
        cr_assert_not(backoff_limit_hit(&b, 20));
        backoff_started(&b, 21);
        cr_assert_not(backoff_limit_hit(&b, 22));
        backoff_started(&b, 23);
        cr_assert(backoff_limit_hit(&b, 24));
}

Test(backoff, unstart_with_no_start_is_a_no_op) {
        struct backoff b = throttle(1, 60 * SEC);

        backoff_unstart(&b);
        cr_assert_eq(b.n_starts, 0);
        backoff_started(&b, 5);
        cr_assert(backoff_limit_hit(&b, 6));
}

/* A full ring, then an unstart: the starts counted are the latest ones, wherever the ring
 * put them, not its first slots (which left a real start out and a cleared one in). */
Test(backoff, unstart_of_a_full_ring_counts_the_latest_starts) {
        struct backoff b = throttle(BACKOFF_BURST_MAX - 1, 60 * SEC);

        for (unsigned i = 0; i < BACKOFF_BURST_MAX + 1; i++)
                backoff_started(&b, 1000 * SEC + i);
        backoff_unstart(&b);
        cr_assert_eq(b.n_starts, BACKOFF_BURST_MAX - 1);
        cr_assert(backoff_limit_hit(&b, 1000 * SEC + BACKOFF_BURST_MAX + 1));
}
