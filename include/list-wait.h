/* List requests that arrive while servers are still on their first start wait for them
 * (bounded by listWait), so the first client after socket activation sees every tool. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/queue.h>

#include "catalog.h"

struct daemon;
struct client;
struct jsonrpc_msg;
struct event;

struct list_waiter {
        TAILQ_ENTRY(list_waiter) entry;
        struct daemon *daemon;
        struct client *client;
        json_object *id;         /* referenced */
        json_object *params;     /* referenced, may be NULL */
        enum catalog_kind kind;
        struct event *timer;
};

TAILQ_HEAD(list_waiter_list, list_waiter);

/* True while some enabled server is starting and has never been ready. */
bool list_wait_needed(const struct daemon *d);
/* Queues the request; it is answered by flush or its deadline. */
void list_waiters_add(struct daemon *d, struct client *c, struct jsonrpc_msg *m, enum catalog_kind kind);
/* Answers the waiting requests once nothing is worth waiting for (or all, if all). */
void list_waiters_flush(struct daemon *d, bool all);
/* True if a request of c's for kind is waiting. */
bool list_waiters_has(const struct daemon *d, const struct client *c, enum catalog_kind kind);
void list_waiters_client_gone(struct daemon *d, struct client *c);
void list_waiters_done(struct daemon *d);
