/* Requests that arrive while servers are on their first start wait for them (bounded by
 * listWait), so the first client after socket activation sees every tool and its first
 * call reaches its server: a list while any server is on its first start, a call whose
 * name or URI no ready server offers while a server that may offer it, and that the client
 * may see, is (method-forward.c decides). A held request is handled again by its method
 * once no server it waits for is on its first start (each became ready or failed), or at
 * its deadline; that second handling never waits. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/queue.h>

#include "catalog.h"
#include "jsonrpc.h"

struct daemon;
struct client;
struct server;
struct event;

/* A method's handler, and whether a request of it waits now. */
typedef void list_wait_handler(struct client *c, struct jsonrpc_msg *m);
typedef bool list_wait_check(struct client *c, struct jsonrpc_msg *m);

struct list_waiter {
        TAILQ_ENTRY(list_waiter) entry;
        struct list_waits *list;   /* the daemon's, which holds it */
        struct client *client;
        struct jsonrpc_msg msg;    /* the request; its root referenced */
        list_wait_handler *handle; /* handles it again */
        list_wait_check *waits;    /* asked again whenever servers changed */
        int kind;                  /* a list's enum catalog_kind, -1 for a call */
        struct event *timer;
};

TAILQ_HEAD(list_waiter_list, list_waiter);

/* The daemon's waiting requests. */
struct list_waits {
        struct list_waiter_list queue;
        const struct jsonrpc_msg *resumed; /* the request being handled again: never held twice */
};

/* True while server s is starting (or waits for its turn to) and has never been ready. */
bool list_wait_first_start(const struct server *s);
/* True while some enabled server is on its first start. */
bool list_wait_needed(struct daemon *d);
/* True while a shared server, or one of c's own instances, is on its first start: another
 * client's new instance holds nobody else's lists. */
bool list_wait_needed_by(struct client *c);
/* Holds request m of c if waits(c, m), to be handed to handle again once waits() says no
 * more after a change of servers, or at its deadline; kind is a list's kind, or -1. False,
 * nothing done, when it does not wait: waits() says no, listWait is 0, or m is that second
 * handling. True when held, or answered (maxInFlight). */
bool list_waiters_hold(struct client *c, struct jsonrpc_msg *m, list_wait_handler *handle, list_wait_check *waits,
                       int kind);
/* Servers changed: hands back the waiting requests that no longer wait. */
void list_waiters_flush(struct list_waits *lw);
/* True if a request of c's for list kind is waiting. */
bool list_waiters_has(const struct list_waits *lw, const struct client *c, enum catalog_kind kind);
void list_waiters_client_gone(struct list_waits *lw, struct client *c);
void list_waiters_done(struct list_waits *lw);
