/* Connections per uid; see user-counts.h. */
#include "user-counts.h"

#include <stdint.h>

/* An entry is present only while its uid holds connections, so the value, the count and the
 * flag saying a refusal was logged since it was last below the limit, is never 0 and fits
 * in the pointer: no allocation per uid. */
static void *pack(unsigned n, bool told) {
        return (void *)(((uintptr_t)n << 1) | told);
}

static unsigned count_of(const void *v) {
        return (unsigned)((uintptr_t)v >> 1);
}

void user_counts_init(struct user_counts *u) {
        idmap_init(&u->by_uid);
}

void user_counts_done(struct user_counts *u) {
        idmap_done(&u->by_uid);
}

enum user_count_verdict user_counts_take(struct user_counts *u, uid_t uid, unsigned limit) {
        void *v = idmap_get(&u->by_uid, (int64_t)uid);
        unsigned n = count_of(v);
        bool told = (uintptr_t)v & 1;

        if (limit == 0 || n < limit) {
                if (idmap_put(&u->by_uid, (int64_t)uid, pack(n + 1, false)) < 0)
                        return USER_COUNT_NO_MEMORY;
                u->total++;
                return USER_COUNT_TAKEN;
        }
        (void)idmap_put(&u->by_uid, (int64_t)uid, pack(n, true)); /* replaces: cannot fail */
        return told ? USER_COUNT_OVER_AGAIN : USER_COUNT_OVER;
}

void user_counts_release(struct user_counts *u, uid_t uid) {
        unsigned n = count_of(idmap_get(&u->by_uid, (int64_t)uid));

        if (n > 0)
                u->total--;
        /* Below the limit again: the next refusal starts a new episode, and is logged. */
        if (n > 1)
                (void)idmap_put(&u->by_uid, (int64_t)uid, pack(n - 1, false));
        else if (n == 1)
                idmap_remove(&u->by_uid, (int64_t)uid);
}

unsigned user_counts_get(const struct user_counts *u, uid_t uid) {
        return count_of(idmap_get(&u->by_uid, (int64_t)uid));
}
