/* Connections per uid for maxClientsPerUser: counted up to the limit, refused past it (the
 * first refusal of each run marked to be logged), released as connections close. */
#include <criterion/criterion.h>

#include "user-counts.h"

Test(user_counts, limit_per_uid) {
        struct user_counts u;

        user_counts_init(&u);
        for (int i = 0; i < 3; i++)
                cr_assert_eq(user_counts_take(&u, 4242, 3), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_take(&u, 4242, 3), USER_COUNT_OVER);
        cr_assert_eq(user_counts_take(&u, 4242, 3), USER_COUNT_OVER_AGAIN);
        cr_assert_eq(user_counts_get(&u, 4242), 3);
        /* Another uid is not affected. */
        cr_assert_eq(user_counts_take(&u, 0, 3), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_get(&u, 0), 1);
        /* One closes: one more is taken, and the next refusal is a new episode. */
        user_counts_release(&u, 4242);
        cr_assert_eq(user_counts_get(&u, 4242), 2);
        cr_assert_eq(user_counts_take(&u, 4242, 3), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_take(&u, 4242, 3), USER_COUNT_OVER);
        user_counts_done(&u);
}

Test(user_counts, zero_is_no_limit) {
        struct user_counts u;

        user_counts_init(&u);
        for (int i = 0; i < 10000; i++)
                cr_assert_eq(user_counts_take(&u, 1000, 0), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_get(&u, 1000), 10000);
        user_counts_done(&u);
}

Test(user_counts, released_to_nothing) {
        struct user_counts u;

        user_counts_init(&u);
        cr_assert_eq(user_counts_take(&u, 7, 1), USER_COUNT_TAKEN);
        cr_assert_eq(user_counts_take(&u, 7, 1), USER_COUNT_OVER);
        user_counts_release(&u, 7);
        cr_assert_eq(user_counts_get(&u, 7), 0);
        user_counts_release(&u, 7); /* not counted: nothing happens */
        cr_assert_eq(user_counts_get(&u, 7), 0);
        cr_assert_eq(user_counts_take(&u, 7, 1), USER_COUNT_TAKEN);
        /* Many uids at once, each counted apart (the map grows). */
        for (uid_t id = 100; id < 1100; id++)
                cr_assert_eq(user_counts_take(&u, id, 1), USER_COUNT_TAKEN);
        for (uid_t id = 100; id < 1100; id++)
                cr_assert_eq(user_counts_get(&u, id), 1);
        user_counts_done(&u);
}
