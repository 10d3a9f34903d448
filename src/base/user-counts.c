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
        u->total = 0;
        TAILQ_INIT(&u->idle);
}

void user_counts_done(struct user_counts *u) {
        idmap_done(&u->by_uid);
}

/* The uid's connection idle the longest: the first of its in the list, which is kept in
 * the order they became idle. The walk passes other uids' idle connections only, and is
 * made only at the limit. */
static struct user_idle *oldest_idle(const struct user_counts *u, uid_t uid) {
        struct user_idle *e;

        TAILQ_FOREACH(e, &u->idle, entry)
                if (e->uid == uid)
                        return e;
        return NULL;
}

enum user_count_verdict user_counts_take(struct user_counts *u, uid_t uid, unsigned limit, struct user_idle **ret_ended) {
        void *v = idmap_get(&u->by_uid, (int64_t)uid);
        unsigned n = count_of(v);
        bool told = (uintptr_t)v & 1;
        struct user_idle *idle = NULL;

        if (ret_ended)
                *ret_ended = NULL;
        if (limit != 0 && n >= limit && ret_ended)
                idle = oldest_idle(u, uid);
        if (limit == 0 || n < limit || idle) {
                if (idmap_put(&u->by_uid, (int64_t)uid, pack(n + 1, false)) < 0)
                        return USER_COUNT_NO_MEMORY;
                u->total++;
                if (!idle)
                        return USER_COUNT_TAKEN;
                user_counts_busy(u, idle);
                *ret_ended = idle;
                return USER_COUNT_TAKEN_ENDING;
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

void user_counts_idle(struct user_counts *u, struct user_idle *e, uid_t uid, uint64_t now) {
        user_counts_busy(u, e);
        e->uid = uid;
        e->since = now;
        e->listed = true;
        TAILQ_INSERT_TAIL(&u->idle, e, entry); /* now is the latest: the list stays in order */
}

void user_counts_busy(struct user_counts *u, struct user_idle *e) {
        if (!e->listed)
                return;
        TAILQ_REMOVE(&u->idle, e, entry);
        e->listed = false;
}

void user_counts_idle_moved(struct user_idle *e, uid_t uid) {
        e->uid = uid;
}
