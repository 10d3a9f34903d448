/* One client of the MCP or control front door: its messages in, its replies out, limits,
 * and its lifetime. Its MCP state lives in its session (session.h). How its bytes travel
 * (a Unix socket's lines, an HTTP session's requests and event streams) is its transport's,
 * behind struct client_transport_ops: nothing outside client.c and the transports knows
 * which one a client has.
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
#include <sys/uio.h>

#include "access.h"
#include "client-access.h"
#include "listen.h"
#include "log.h"
#include "principal.h"
#include "session.h"

struct access_who;
struct daemon;
struct loan_offer;
struct route;
struct subscriber;
struct sub_listen;

enum client_state { CLIENT_ACTIVE, CLIENT_DRAINING, CLIENT_JUSTFREE, CLIENT_STATE_COUNT };

/* Who is at the other end over the network, for logs and the audit trail: a Unix socket's
 * peer has a pid and command instead (its principal). */
struct client_peer {
        const char *remote;          /* "192.0.2.1:51234"; NULL: none */
        const char *token;           /* the user of the bearer token it came with; NULL: none */
};

struct client;

/* How a client's bytes travel (pgbouncer's SBufIO): client.c decides what to say and when
 * to close; the transport only moves bytes and reports what happens to them through
 * client_receive(), client_end_of_input(), client_output_flushed() and client_set_state(). */
struct client_transport_ops {
        const char *name;            /* "unix", "http": for logs and mcpvisorctl clients */
        /* Queues one whole message: parts hold its JSON text and then a newline. response:
         * it answers the request whose id is id (NULL: JSON's null, for a request that could
         * not be read); else it is a request or notification, and id the client's request it
         * belongs to (progress of that call, a server's request made during it), or NULL for
         * none: HTTP sends such a message on that request's own stream. Everything is
         * borrowed for the call; bytes of a part that offer holds (loan.h; NULL: none) may
         * be kept by reference instead of copied. 0, or -ENOMEM when part of it may be lost
         * (the client is then ended). */
        int (*send)(struct client *c, const struct iovec *parts, size_t n_parts, bool response, json_object *id,
                    const struct loan_offer *offer);
        size_t (*unsent)(const struct client *c);  /* bytes accepted by send() and not written yet */
        void (*stop_reading)(struct client *c);    /* draining: take no more input */
        /* Reads what is left of its input, to its end (client_read_end()); NULL for a
         * transport that never calls client_queue_end(). */
        void (*read_end)(struct client *c);
        void (*stop)(struct client *c);            /* JUSTFREE: no more I/O of any kind */
        /* Adds what an operator reads about where the client is ("transport", "remote", ...)
         * to row (mcpvisorctl clients). */
        void (*describe)(const struct client *c, json_object *row);
        /* Fills in its network peer; NULL for a transport whose peers are named by their
         * pid (the Unix socket). */
        void (*peer)(const struct client *c, struct client_peer *ret);
        void (*free)(struct client *c);            /* frees the transport's state and closes it */
        /* The priority of the lines that say it came and went: LOG_INFO when NULL; a
         * transport whose clients live for one request each logs them at LOG_DEBUG, or a
         * busy client's every request would be three lines of the journal. */
        int (*life_priority)(const struct client *c);
};

struct client {
        TAILQ_ENTRY(client) entry;
        struct daemon *daemon;
        uint64_t id;                 /* daemon-unique, logged as MCPVISOR_CLIENT= */
        enum listen_role role;       /* which socket it came from */
        enum client_state state;
        const struct client_transport_ops *ops;
        void *transport;             /* the transport's own state, only its ops read it */
        bool end_queued;             /* its peer closed; its last input and its end are
                                      * read later (client_read_end()) */
        TAILQ_ENTRY(client) end_entry; /* in the daemon's clients_ended, when end_queued */
        struct session session;
        struct principal principal;  /* who connected, resolved at accept (client_principal()) */
        uint64_t connected_at;       /* now_usec() at accept */
        uint64_t active_at;          /* now_usec() at its last message (or accept) */
        unsigned pending;            /* requests held (routed or waiting), not answered yet */
        uint64_t held;               /* requests held so far (client_hold_request()) */
        bool told_in_flight;         /* maxInFlight was reached and logged once */
        TAILQ_HEAD(, route) routes;  /* its requests forwarded to servers (router.h) */
        struct client_access access; /* its class and view (client-access.h) */
        LIST_HEAD(, subscriber) subscriptions; /* its resources/subscribe (subscriptions.h) */
        LIST_HEAD(, sub_listen) listens; /* its subscriptions/listen (sub-listen.h) */
};

TAILQ_HEAD(client_list, client);

/* A new ACTIVE client over a transport (ops, transport: taken, freed with the client) for
 * principal (its contents taken; left empty). Returns NULL when out of memory, having freed
 * neither: the caller still owns the transport and the principal. */
struct client *client_new(struct daemon *d, enum listen_role role, const struct client_transport_ops *ops,
                          void *transport, struct principal *principal);
/* A client whose peer closed (EV_CLOSED, epoll's EPOLLRDHUP) is not read when the kernel
 * says so: its transport stops watching it and queues it here, and it is read to its end
 * (client_read_end()), a batch a loop iteration (daemon.c): closes in a burst come first in
 * epoll's ready list, and each read there would keep another client's message waiting (for
 * 88 to 150 ms with 15,000 closes at once). What it sent before closing is still read and
 * answered, only later. */
#define CLIENT_ENDS_PER_ITERATION 64
void client_queue_end(struct client *c);
void client_read_end(struct client *c);

/* Frees c and what only it holds. The daemon tells the other modules that c is gone first
 * (daemon.c, client_gone()): this module calls none of them. */
void client_free(struct client *c);
/* Who is at the other end: taken at accept, never read from the socket again. */
const struct principal *client_principal(const struct client *c);
/* Its network peer (both NULL on a Unix socket). */
struct client_peer client_peer(const struct client *c);
/* The name and version it gave itself in initialize (clientInfo), made fit to show and
 * bounded (session.h); NULL when none. For display only. */
const char *client_name(const struct client *c);
const char *client_version(const struct client *c);
/* Fills in who r is about (client, uid, pid, token, remote, name) for the audit trail. */
struct audit_record;
void client_audit_subject(const struct client *c, struct audit_record *r);
/* Another principal for c (its contents taken, p left empty): an HTTP session whose token
 * now stands for another user or groups. Its class is computed anew by the caller. */
void client_set_principal(struct client *c, struct principal *p);
/* The principal as the access policy reads it (access.h); valid while c is. */
void client_access_who(const struct client *c, struct access_who *ret);
void client_set_state(struct client *c, enum client_state state);
const char *client_state_name(enum client_state state);

/* Queues one message (consumed). Drops the client if its unsent output passes the limit. */
void client_send(struct client *c, json_object *msg);
/* The same for a request or notification that belongs to the client's request whose id is
 * related (borrowed; NULL: to none): a call's progress, a server's request made during it. */
void client_send_related(struct client *c, json_object *msg, json_object *related);
/* Sends a result response under id (borrowed) whose result is JSON text already checked
 * (a server's, passed on as it wrote it). To a modern client it says its type, and, when
 * cacheable (a resources/read's), its caching hints, unless it has them. offer: the result's
 * bytes may be lent (loan.h), NULL when not. */
void client_send_result_text(struct client *c, json_object *id, const char *result, size_t len, bool cacheable,
                             const struct loan_offer *offer);
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

/* From its transport: one whole message, parsed and handled (session.c). */
void client_receive(struct client *c, const char *data, size_t len);
/* The same for a message the transport parsed itself (jsonrpc_parse(); still the caller's). */
void client_handle(struct client *c, struct jsonrpc_msg *m);
/* A request held by client_hold_request() handed to handle again (list-wait.h). */
void client_handle_held(struct client *c, void (*handle)(struct client *c, struct jsonrpc_msg *m), struct jsonrpc_msg *m);
/* From its transport: a message over maxMessageSize (max bytes) was discarded; answered. */
void client_receive_oversize(struct client *c, size_t max);
/* From its transport: the peer will send nothing more. peer_gone: it will read nothing
 * either, so nothing is answered. */
void client_end_of_input(struct client *c, bool peer_gone);
/* From its transport: it queued output of its own (a replay of kept events): checked
 * against clientOutputLimit as a send is. */
void client_output_added(struct client *c);
/* From its transport: everything queued was written. */
void client_output_flushed(struct client *c);

/* The priority of c's lines about its coming and going (ops->life_priority). */
int client_life_priority(const struct client *c);
/* Logs with MCPVISOR_CLIENT= set to this client. */
void client_log(struct client *c, int priority, const char *fmt, ...) _printf_(3, 4);
