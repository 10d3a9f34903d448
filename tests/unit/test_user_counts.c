/* Connections per uid for maxClientsPerUser: counted up to the limit, refused past it (the
 * first refusal of each run marked to be logged), released as connections close; at the
 * limit, taken in place of the uid's connection idle the longest, never a busy one nor
 * another uid's. */
#include <criterion/criterion.h>

#include "user-counts.h"

Test(user_counts, limit_per_uid) {
        struct user_counts u;

        user_counts_init(&u);
        for (int i = 0; i < 3; i++)
                cr_assert_eq(user_counts_take(&u, 4242, 3, NULL), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_take(&u, 4242, 3, NULL), USER_COUNT_OVER);
        cr_assert_eq(user_counts_take(&u, 4242, 3, NULL), USER_COUNT_OVER_AGAIN);
        cr_assert_eq(user_counts_get(&u, 4242), 3);
        /* Another uid is not affected. */
        cr_assert_eq(user_counts_take(&u, 0, 3, NULL), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_get(&u, 0), 1);
        /* One closes: one more is taken, and the next refusal is a new episode. */
        user_counts_release(&u, 4242);
        cr_assert_eq(user_counts_get(&u, 4242), 2);
        cr_assert_eq(user_counts_take(&u, 4242, 3, NULL), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_take(&u, 4242, 3, NULL), USER_COUNT_OVER);
        user_counts_done(&u);
}

Test(user_counts, zero_is_no_limit) {
        struct user_counts u;

        user_counts_init(&u);
        for (int i = 0; i < 10000; i++)
                cr_assert_eq(user_counts_take(&u, 1000, 0, NULL), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_get(&u, 1000), 10000);
        user_counts_done(&u);
}

Test(user_counts, released_to_nothing) {
        struct user_counts u;

        user_counts_init(&u);
        cr_assert_eq(user_counts_take(&u, 7, 1, NULL), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_take(&u, 7, 1, NULL), USER_COUNT_OVER);
        user_counts_release(&u, 7);
        cr_assert_eq(user_counts_get(&u, 7), 0);
        user_counts_release(&u, 7); /* not counted: nothing happens */
        cr_assert_eq(user_counts_get(&u, 7), 0);
        cr_assert_eq(user_counts_take(&u, 7, 1, NULL), USER_COUNT_TAKEN);
        /* Many uids at once, each counted apart (the map grows). */
        for (uid_t id = 100; id < 1100; id++)
                cr_assert_eq(user_counts_take(&u, id, 1, NULL), USER_COUNT_TAKEN);
        for (uid_t id = 100; id < 1100; id++)
                cr_assert_eq(user_counts_get(&u, id), 1);
        user_counts_done(&u);
}

/* Takes one of uid at limit, expecting the verdict and, for TAKEN_ENDING, that one ended. */
static void take_expect(struct user_counts *u, uid_t uid, unsigned limit, enum user_count_verdict want,
                        const struct user_idle *ended) {
        struct user_idle *got = (void *)1;

        cr_assert_eq(user_counts_take(u, uid, limit, &got), want);
        cr_assert_eq(got, ended, "ended %p, expected %p", (void *)got, (const void *)ended);
        if (ended)
                cr_assert_not(got->listed, "an ended connection is no longer idle");
}

Test(user_counts, at_the_limit_the_least_recently_used_idle_one_is_ended) {
        struct user_idle a = { 0 }, b = { 0 }, c = { 0 }, other = { 0 };
        struct user_counts u;

        user_counts_init(&u);
        for (int i = 0; i < 3; i++)
                take_expect(&u, 1000, 3, USER_COUNT_TAKEN, NULL);
        take_expect(&u, 4242, 3, USER_COUNT_TAKEN, NULL);
        /* None idle: refused as before. */
        take_expect(&u, 1000, 3, USER_COUNT_OVER, NULL);
        /* Another uid's idle connection is never taken for this one, however old. */
        user_counts_idle(&u, &other, 4242, 10);
        take_expect(&u, 1000, 3, USER_COUNT_OVER_AGAIN, NULL);
        /* a idle since 20, b since 30, c since 40; a used again at 50 (last now). */
        user_counts_idle(&u, &a, 1000, 20);
        user_counts_idle(&u, &b, 1000, 30);
        user_counts_idle(&u, &c, 1000, 40);
        user_counts_idle(&u, &a, 1000, 50);
        take_expect(&u, 1000, 3, USER_COUNT_TAKEN_ENDING, &b);
        cr_assert_eq(user_counts_get(&u, 1000), 4, "one over until the ended one is freed");
        /* The ended one is not taken twice: the next is c; a busy one (a) never. */
        user_counts_busy(&u, &a);
        take_expect(&u, 1000, 3, USER_COUNT_TAKEN_ENDING, &c);
        take_expect(&u, 1000, 3, USER_COUNT_OVER, NULL);
        cr_assert(other.listed, "the other uid's idle connection is untouched");
        cr_assert_eq(user_counts_get(&u, 4242), 1);
        /* Freed: counted down as any other. */
        user_counts_release(&u, 1000);
        user_counts_release(&u, 1000);
        cr_assert_eq(user_counts_get(&u, 1000), 3);
        user_counts_done(&u);
}

Test(user_counts, below_the_limit_or_without_a_limit_nothing_is_ended) {
        struct user_idle a = { 0 };
        struct user_counts u;

        user_counts_init(&u);
        user_counts_idle(&u, &a, 7, 1);
        take_expect(&u, 7, 2, USER_COUNT_TAKEN, NULL);
        take_expect(&u, 7, 2, USER_COUNT_TAKEN, NULL);
        take_expect(&u, 7, 0, USER_COUNT_TAKEN, NULL);
        cr_assert(a.listed);
        /* No place to put the ended one (a count moved to another uid): refused instead. */
        cr_assert_eq(user_counts_take(&u, 7, 2, NULL), USER_COUNT_OVER);
        cr_assert(a.listed);
        user_counts_done(&u);
}

Test(user_counts, an_idle_connection_moved_to_another_uid) {
        struct user_idle a = { 0 };
        struct user_counts u;

        user_counts_init(&u);
        take_expect(&u, 1, 1, USER_COUNT_TAKEN, NULL);
        take_expect(&u, 2, 1, USER_COUNT_TAKEN, NULL);
        user_counts_idle(&u, &a, 1, 5);
        user_counts_idle_moved(&a, 2);
        take_expect(&u, 1, 1, USER_COUNT_OVER, NULL);
        take_expect(&u, 2, 1, USER_COUNT_TAKEN_ENDING, &a);
        user_counts_done(&u);
}
