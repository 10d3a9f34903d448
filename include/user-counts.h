/* How many MCP connections each uid holds, for maxClientsPerUser: so that one local user
 * cannot take every connection (and descriptor) the daemon has. Counted when a connection
 * is accepted, released when the daemon frees it. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "idmap.h"

struct user_counts {
        struct idmap by_uid; /* uid -> struct user_count (user-counts.c), only while above 0 */
        size_t total;        /* connections counted, of every uid */
};

enum user_count_verdict {
        USER_COUNT_TAKEN,        /* counted: accept it */
        USER_COUNT_OVER,         /* at the limit: turn it away, and say so in the log */
        USER_COUNT_OVER_AGAIN,   /* at the limit, already said since the uid was last below it */
        USER_COUNT_NO_MEMORY,
};

void user_counts_init(struct user_counts *u);
void user_counts_done(struct user_counts *u);
/* Counts one more connection of uid if it holds fewer than limit (0: no limit). */
enum user_count_verdict user_counts_take(struct user_counts *u, uid_t uid, unsigned limit);
/* A connection user_counts_take() counted is gone. */
void user_counts_release(struct user_counts *u, uid_t uid);
/* Connections counted for uid. */
unsigned user_counts_get(const struct user_counts *u, uid_t uid);
