/* One connection on the MCP or control socket: reading lines, writing replies, limits,
 * and its lifetime. Its MCP state lives in its session (session.h).
 *
 * States (one list per state in the daemon; client_set_state() is the only way to move):
 *   ACTIVE    reading and answering
 *   DRAINING  the peer finished sending (EOF) or the daemon is stopping: answer what is
 *             pending, flush, then close
 *   JUSTFREE  done; freed by the daemon between loop iterations, never inside a callback */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "access.h"
#include "client-access.h"
#include "framing.h"
#include "listen.h"
#include "log.h"
#include "principal.h"
#include "session.h"

struct access_who;
struct daemon;
struct bufferevent;
struct route;
struct subscriber;

enum client_state { CLIENT_ACTIVE, CLIENT_DRAINING, CLIENT_JUSTFREE, CLIENT_STATE_COUNT };

struct client {
        TAILQ_ENTRY(client) entry;
        struct daemon *daemon;
        uint64_t id;                 /* daemon-unique, logged as MCPVISOR_CLIENT= */
        enum listen_role role;       /* which socket it came from */
        enum client_state state;
        struct bufferevent *bev;     /* writes */
        struct event *readable;      /* its socket, read by client.c itself */
        bool end_queued;             /* its peer closed; its last input and its end are
                                      * read later (client_read_end()) */
        TAILQ_ENTRY(client) end_entry; /* in the daemon's clients_ended, when end_queued */
        struct evbuffer *input;      /* what was read and not yet taken as messages */
        struct framer framer;
        struct session session;
        struct principal principal;  /* who connected, resolved at accept (client_principal()) */
        uint64_t connected_at;       /* now_usec() at accept */
        unsigned pending;            /* requests held (routed or waiting), not answered yet */
        uint64_t held;               /* requests held so far (client_hold_request()) */
        bool told_in_flight;         /* maxInFlight was reached and logged once */
        TAILQ_HEAD(, route) routes;  /* its requests forwarded to servers (router.h) */
        struct client_access access; /* its class and view (client-access.h) */
        LIST_HEAD(, subscriber) subscriptions; /* its resources/subscribe (subscriptions.h) */
};

TAILQ_HEAD(client_list, client);

/* A client whose peer closed (EV_CLOSED, epoll's EPOLLRDHUP) is not read when the kernel
 * says so but no longer watched and queued, and read to its end here, a batch a loop
 * iteration (daemon.c): closes in a burst come first in epoll's ready list, and each read
 * there kept another client's message waiting (issue 14: 15,000 closes at once, 88 to
 * 150 ms). What it sent before closing is still read and answered, only later. */
#define CLIENT_ENDS_PER_ITERATION 64
void client_read_end(struct client *c);

/* Takes ownership of fd. Returns NULL (fd closed) when out of memory. */
struct client *client_new(struct daemon *d, int fd, const struct ucred *peer, enum listen_role role);
/* Frees c and what only it holds. The daemon tells the other modules that c is gone first
 * (daemon.c, client_gone()): this module calls none of them. */
void client_free(struct client *c);
/* Who is at the other end: taken at accept, never read from the socket again. */
const struct principal *client_principal(const struct client *c);
/* The principal as the access policy reads it (access.h); valid while c is. */
void client_access_who(const struct client *c, struct access_who *ret);
void client_set_state(struct client *c, enum client_state state);
const char *client_state_name(enum client_state state);

/* Queues one message (consumed). Drops the client if its unsent output passes the limit. */
void client_send(struct client *c, json_object *msg);
/* Sends a result response under id (borrowed) whose result is JSON text already checked
 * (a server's, passed on as it wrote it). */
void client_send_result_text(struct client *c, json_object *id, const char *result, size_t len);
void client_reply_result(struct client *c, json_object *id, json_object *result);
void client_reply_error(struct client *c, json_object *id, int code, const char *message, json_object *data);

/* The daemon is about to hold request id (forward it, or let it wait): true, counted in
 * c->pending, while fewer than maxInFlight are held; else the request is answered with
 * an error at once and false returned, and nothing else changes. */
bool client_hold_request(struct client *c, json_object *id);
/* A request that was pending (c->pending) has been answered or cancelled. */
void client_request_done(struct client *c);
/* How many of its requests are held, not answered yet (c->pending). */
unsigned client_in_flight(const struct client *c);
/* How many requests it has had held so far (c->held). */
uint64_t client_requests_held(const struct client *c);

/* Stop reading; close once pending requests are answered and output is flushed. The
 * daemon tells the other modules (daemon_client_draining()). */
void client_drain(struct client *c);

/* Logs with MCPVISOR_CLIENT= set to this client. */
void client_log(struct client *c, int priority, const char *fmt, ...) _printf_(3, 4);
