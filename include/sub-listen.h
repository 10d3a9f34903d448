/* subscriptions/listen, the modern era's (2026-07-28) long-lived request for change
 * notifications: acknowledged at once (notifications/subscriptions/acknowledged with the
 * subset honoured), then held open, and fed with notifications/{tools,prompts,resources}/
 * list_changed when what the client's own view shows of a list it asked about changes
 * (list-changes.c calls at the end of each window), each carrying the listen request's id
 * as its subscription id and travelling as that request's (over HTTP, on its stream). It
 * ends when the client cancels it (notifications/cancelled, or over HTTP its stream's
 * close: no answer), or, answered with a completion result, when the client is drained
 * (the daemon stops, the peer finished sending). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "catalog.h"

struct client;
struct daemon;
struct jsonrpc_msg;

struct sub_listen {
        LIST_ENTRY(sub_listen) entry;            /* in its client's listens */
        json_object *id;                       /* the listen request's, referenced: the subscription id */
        unsigned kinds;                        /* bits 1 << enum catalog_kind it hears of */
        uint64_t signature[CATALOG_KIND_COUNT]; /* each list as it was last told (or at its start) */
};

/* Request m of c (its params an object or NULL): a new listener, acknowledged; or answered
 * why not. */
void sub_listen_open(struct client *c, struct jsonrpc_msg *m);
/* The client cancelled its request id: true when that was a listen, now gone. */
bool sub_listen_cancel(struct client *c, json_object *id);
/* c is drained: each listen answered with its completion, and gone. */
void sub_listen_end(struct client *c);
/* c is freed: its listeners go, unanswered. */
void sub_listen_client_gone(struct client *c);
/* The lists may have changed: each listener whose client's view of a list it hears of
 * differs from what it was last told is told. */
void sub_listen_lists_changed(struct daemon *d);
