/* subscriptions/listen, the modern era's (2026-07-28) long-lived request for change
 * notifications: acknowledged at once (notifications/subscriptions/acknowledged with the
 * subset honoured), then held open, and fed with notifications/{tools,prompts,resources}/
 * list_changed when what the client's own view shows of a list it asked about changes
 * (list-changes.c calls at the end of each window), and notifications/resources/updated of
 * the URIs in its resourceSubscriptions (subscribed at their servers through
 * subscriptions.c, after the same access decision as resources/subscribe's), each
 * carrying the listen request's id
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
        char **uris;                           /* the resource subscriptions honoured: held in
                                                * subscriptions.c for its client while a listen
                                                * of the client names them */
        size_t n_uris;
};

/* The most resourceSubscriptions one listen takes; more are left out of its acknowledgement. */
#define SUB_LISTEN_MAX_URIS 256

/* Request m of c (its params an object or NULL): a new listener, acknowledged; or answered
 * why not. */
void sub_listen_open(struct client *c, struct jsonrpc_msg *m);
/* The client cancelled its request id: true when that was a listen, now gone. */
bool sub_listen_cancel(struct client *c, json_object *id);
/* c is drained: each listen answered with its completion, and gone. */
void sub_listen_end(struct client *c);
/* c is freed: its listeners go, unanswered. */
void sub_listen_client_gone(struct client *c);
/* A server's notifications/resources/updated of uri (params: its params), for c, a modern
 * client holding a subscription to uri (subscriptions.c): sent once under each of c's
 * listens that names uri. */
void sub_listen_resource_updated(struct client *c, const char *uri, json_object *params);
/* The lists may have changed: each listener whose client's view of a list it hears of
 * differs from what it was last told is told. */
void sub_listen_lists_changed(struct daemon *d);
