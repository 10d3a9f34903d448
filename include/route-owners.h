/* Which clients a server's calls in flight belong to, kept as the calls come and go, so
 * that a server's request or notification finds its one client (or learns there are
 * several) without walking the calls. A call is "owned" while its client waits for it,
 * counted by the client's daemon-unique number; "abandoned" once given up (cancelled,
 * timed out, its client gone) while it may still run at the server, counted by whose it
 * was: its client's user (the caller's number for it, a uid). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "idmap.h"

struct route_owners {
        struct idmap owned;        /* client number -> its owned calls, as (void *)(uintptr_t) */
        struct idmap abandoned;    /* user -> its abandoned calls, the same way */
        unsigned n_owners;         /* clients with an owned call */
        unsigned n_abandoners;     /* users with an abandoned call */
        uintptr_t owners_sum;      /* the sum of the owners' pointers: the owner's when one */
};

void route_owners_init(struct route_owners *o);
void route_owners_done(struct route_owners *o);

/* A call of client (number, client) starts: -ENOMEM when it cannot be counted. */
int route_owners_add(struct route_owners *o, uint64_t number, void *client);
/* Its client no longer waits for it (answered, given up, or the client left). */
void route_owners_drop(struct route_owners *o, uint64_t number, void *client);
/* A call of user who given up that may still run: -ENOMEM when it cannot be counted. */
int route_owners_abandon(struct route_owners *o, uint64_t who);
/* An abandoned call counted by route_owners_abandon() ends. */
void route_owners_end(struct route_owners *o, uint64_t who);

/* The number of clients with owned calls, and with one, that client. */
unsigned route_owners_sole(const struct route_owners *o, void **ret);
/* Whether a user other than who has an abandoned call. */
bool route_owners_abandoned_by_other(const struct route_owners *o, uint64_t who);
