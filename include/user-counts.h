/* How many MCP connections each uid holds, for maxClientsPerUser: so that one local user
 * cannot take every connection (and descriptor) the daemon has. Counted when a connection
 * is accepted, released when the daemon frees it.
 *
 * A connection that waits for nothing (an HTTP session with no request pending and no
 * stream open: one its client may have abandoned without a word) is listed as idle here
 * while it is so. A uid at its limit is then not refused while it has an idle one: its
 * least recently used idle connection is ended to admit the new one, so that sessions
 * clients never end do not lock their user out. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "idmap.h"

/* An idle connection, kept inside the connection's own state (no allocation). */
struct user_idle {
        TAILQ_ENTRY(user_idle) entry;
        uid_t uid;
        uint64_t since;       /* when it became idle (monotonic microseconds) */
        bool listed;          /* in the idle list: idle now */
};

struct user_counts {
        struct idmap by_uid; /* uid -> struct user_count (user-counts.c), only while above 0 */
        size_t total;        /* connections counted, of every uid */
        TAILQ_HEAD(, user_idle) idle; /* idle connections of every uid, the longest idle first */
};

enum user_count_verdict {
        USER_COUNT_TAKEN,        /* counted: accept it */
        USER_COUNT_TAKEN_ENDING, /* at the limit, counted in place of an idle connection of the
                                  * uid's, which the caller ends (it is no longer listed) */
        USER_COUNT_OVER,         /* at the limit, none idle: turn it away, and say so in the log */
        USER_COUNT_OVER_AGAIN,   /* at the limit, already said since the uid was last below it */
        USER_COUNT_NO_MEMORY,
};

void user_counts_init(struct user_counts *u);
void user_counts_done(struct user_counts *u);
/* Counts one more connection of uid if it holds fewer than limit (0: no limit); at the limit,
 * in place of the uid's connection idle the longest, if it has one and ret_ended is not
 * NULL (*ret_ended: that one, to be ended by the caller; it is released as any other when
 * it is freed, so the uid is one over its limit until then). */
enum user_count_verdict user_counts_take(struct user_counts *u, uid_t uid, unsigned limit, struct user_idle **ret_ended);
/* A connection user_counts_take() counted is gone. */
void user_counts_release(struct user_counts *u, uid_t uid);
/* Connections counted for uid. */
unsigned user_counts_get(const struct user_counts *u, uid_t uid);

/* A connection of uid became idle at now, or was used again while idle (listed anew, last). */
void user_counts_idle(struct user_counts *u, struct user_idle *e, uid_t uid, uint64_t now);
/* It is in use again, or ending: no longer listed (nothing when it was not). */
void user_counts_busy(struct user_counts *u, struct user_idle *e);
/* An idle connection now counted under another uid (user_counts_release() and _take()). */
void user_counts_idle_moved(struct user_idle *e, uid_t uid);
