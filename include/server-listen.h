/* The daemon's subscriptions/listen at a modern server (MCP 2026-07-28). A modern server
 * sends no notification on its own: while it is ready, one listen request stays open at it,
 * asking for the list changes its capabilities announce (toolsListChanged, ...) and the
 * updates of the resource URIs the daemon's clients subscribed to there
 * (resourceSubscriptions); what arrives on it takes the path a legacy server's
 * notifications take (server.c). The filter of a listen is fixed when it opens: a change
 * of the URIs opens a new listen, then cancels the old one, so that no update falls between
 * them; the changes of one loop turn go into one request. A listen the server ends (a
 * result, or an error once it acknowledged the listen: its stream cut) is opened again, after
 * a second if it lasted less than one; one answered with an error before its
 * acknowledgement (refused) is logged once and not asked again during that run (nothing
 * is polled instead). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct child;
struct event;
struct event_base;
struct jsonrpc_msg;
struct logger;

enum listen_state {
        LISTEN_STOPPED,  /* no connection to listen on (not ready, or a legacy server) */
        LISTEN_WAITING,  /* the (re)open is due on the timer */
        LISTEN_OPEN,     /* a request is open at the server */
        LISTEN_IDLE,     /* nothing to hear of (no list changes announced, no URI asked) */
        LISTEN_REFUSED,  /* the server answered it with an error: not asked again this run */
};

/* What a listen asks, apart from the URIs. */
enum {
        LISTEN_TOOLS = 1u << 0,
        LISTEN_PROMPTS = 1u << 1,
        LISTEN_RESOURCES = 1u << 2,
};

struct server_listen {
        enum listen_state state;
        struct event *timer;          /* the (re)open */
        struct child *child;          /* the connection listened on; NULL when stopped */
        const char *name;             /* the server's, for logs: its settings' while it runs */
        const struct logger *log;
        unsigned lists;               /* LISTEN_* */
        char **uris;                  /* resourceSubscriptions, in the order subscribed */
        size_t n_uris, cap_uris;
        int64_t request;              /* the open listen's id, 0 none */
        uint64_t opened_at;           /* usec, monotonic */
        bool acknowledged;            /* the open one's acknowledgement came */
};

int server_listen_init(struct server_listen *l, struct event_base *base, const struct logger *log);
void server_listen_done(struct server_listen *l);
/* Begins listening on ch (a modern server's connection, just ready; name its name while it
 * runs) for lists, LISTEN_*: the request goes out on the next loop turn, with the URIs
 * added meanwhile. */
void server_listen_start(struct server_listen *l, struct child *ch, const char *name, unsigned lists);
/* The connection is going away: the listen is cancelled while ch can still be written to,
 * and the URIs forgotten (they are added again when the server is next ready). */
void server_listen_stop(struct server_listen *l);
/* A resource subscription begins (on) or ends at this server: the listen is replaced on the
 * next loop turn. -ENOMEM. */
int server_listen_uri(struct server_listen *l, const char *uri, bool on);
/* Whether m, a notification from the server, was the listen's own (its acknowledgement),
 * taken here; any other has the listen's id taken out of its _meta (the daemon's, not its
 * clients'). */
bool server_listen_notification(struct server_listen *l, struct jsonrpc_msg *m);
