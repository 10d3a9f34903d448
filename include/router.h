/* Requests forwarded from clients to the shared server processes, and everything that
 * comes back. Each forwarded request is a route:
 *   - toward the child it gets the child connection's own id; the answer returns to the
 *     client that asked, under that client's id (its exact JSON value and type);
 *   - its progress token is replaced by a daemon-unique one and restored on the way back,
 *     since clients reuse the same token values;
 *   - a client's notifications/cancelled reaches the child under the child-side id (the
 *     route found by a hash of the client and its id), and a late answer or progress is
 *     dropped; a client that leaves has its routes cancelled;
 *   - a route given up (cancelled, its client gone, timed out) stays, with no client, until
 *     the child answers it, its run ends or router_grace() passes: the call may still run
 *     there, so the server's requests may be its; while it is another user's, the server's
 *     requests are not passed on (router_owner);
 *   - a client holds at most maxInFlight requests (client_hold_request); past it, the
 *     request is answered with an error at once;
 *   - requestTimeout (reset by progress) cancels downstream and answers with an error;
 *   - when a server's process ends, its routes are answered once, after the loop
 *     iteration in which the server decided what happens next, with a message that names
 *     the server, what happened and what follows.
 * Every forwarded request gets exactly one answer, or was cancelled by its client. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "idmap.h"
#include "mrtr-seal.h"

struct client;
struct server;
struct logger;
struct event_base;
struct event;
struct jsonrpc_msg;
struct access_ask;
struct mrtr_round;
struct mrtr_inputs;

struct route {
        TAILQ_ENTRY(route) by_router;   /* live, or lost (awaiting its error) */
        TAILQ_ENTRY(route) by_client;
        struct router *router;
        struct client *client;          /* NULL once given up or its client left */
        uint64_t client_number;         /* the client's daemon-unique id, kept when given up */
        uid_t uid;                      /* its client's user: whose a given-up call is (router_owner) */
        json_object *client_id;         /* referenced */
        int64_t key;                    /* hash of (client, client_id): by_client_id */
        struct route *same_key;         /* next route under the same key */
        json_object *client_token;      /* the client's progressToken, referenced, or NULL */
        int64_t token;                  /* ours toward the child, 0 if none */
        struct server *server;
        uint64_t run;                  /* the run it was sent to */
        int64_t child_id;
        char method[48];
        struct event *timer;            /* requestTimeout */
        uint64_t deadline;              /* usec, monotonic: when requestTimeout ends, as last armed */
        char *target;                   /* a call's tool, prompt or URI, for the audit; NULL: none */
        bool audit_pending;             /* its end not audited yet */
        uint64_t started;               /* usec, monotonic: when it was forwarded */
        bool lost;
        bool abandoned;                 /* given up, and may still run at the server */
        /* What the request declared, for what the daemon does on its behalf while it is in
         * flight (session_request_caps(), session_request_log_level()): a modern client's
         * request's own, a legacy session's. */
        unsigned client_caps;
        int log_level;
        /* While its client is to retry with input (mrtr.h): no client, not given up. */
        struct mrtr_round *round;
        /* A modern client's request: what its requestState binds (mrtr_request_digest()). */
        unsigned char digest[MRTR_DIGEST_LEN];
        /* A legacy client's call to a modern server that may answer input_required
         * (mrtr-server.h): the params as sent, to send again with the client's answers;
         * the rounds so far; while the client is asked, that round (nothing runs at the
         * server then). */
        json_object *sent;
        unsigned input_rounds;
        struct mrtr_inputs *inputs;
};

TAILQ_HEAD(route_list, route);

struct router {
        struct event_base *base;
        const struct logger *log;
        struct route_list live, lost;
        struct idmap by_token;          /* our progress token -> route */
        struct idmap by_client_id;      /* key -> first route with it, then ->same_key */
        int64_t next_token;
        const int *audit_mode;          /* the daemon's "audit" setting (enum audit_mode); NULL: off */
};

void router_init(struct router *r, struct event_base *base, const struct logger *log);
/* Calls are audited (audit.h) as *mode says, read at each call's end. */
void router_set_audit(struct router *r, const int *mode);
/* For the daemon's end, after its clients and servers are freed: frees the calls they gave up. */
void router_done(struct router *r);

/* Forwards request m of client c to server s with params (consumed; its
 * _meta.progressToken is rewritten here), once client_access_pass() lets it, ask saying what
 * it is about: every request a client makes of a server comes this way. Answers the client
 * itself on refusal and failure. */
void router_forward(struct router *r, struct client *c, struct jsonrpc_msg *m, struct server *s,
                    const struct access_ask *ask, json_object *params);

/* The client cancelled request id. Silently ignored when unknown or already answered. */
void router_cancel(struct router *r, struct client *c, json_object *id, const char *reason);
/* The client is going away: cancel its routes downstream. */
void router_client_gone(struct router *r, struct client *c);

/* A notification from a server's process: progress goes to the route's client; false if
 * the router does not handle this method. */
bool router_child_notification(struct router *r, struct server *s, struct jsonrpc_msg *m);

/* How long a given-up call is taken as possibly still running, when the server neither
 * answers it nor ends: its requestTimeout, or ROUTER_GRACE_SEC without one. */
#define ROUTER_GRACE_SEC 60.0
double router_grace(const struct server *s);

enum router_owner {
        ROUTER_OWNER_NONE,      /* no client has requests in flight there */
        ROUTER_OWNER_ONE,       /* *ret */
        ROUTER_OWNER_SEVERAL,   /* two or more clients have */
        ROUTER_OWNER_ABANDONED, /* one has, but another user's given-up call may still run there */
        ROUTER_OWNER_GIVEN_UP,  /* the request says its call, which nobody waits for any more (upcall.c) */
};

/* The client a request from server s's current process belongs to: the one client with
 * requests in flight there (a request does not say which call it serves; never guess).
 * A given-up call counts for no owner: the server was told to stop it, and a request it
 * makes anyway with no live call there is refused. But while another user's given-up call
 * may still run there, the request might carry that user's text into the owner's work, so
 * there is no owner (ROUTER_OWNER_ABANDONED); the same user's given-up calls (each modern
 * HTTP request is a client of its own) do not keep the owner from its server's requests.
 * *ret is set for ROUTER_OWNER_ONE. Not on the hot path: a server's own requests
 * (sampling, roots, elicitation) are rare. */
enum router_owner router_owner(const struct router *r, const struct server *s, struct client **ret);
/* The client's own id of c's one call in flight to s (borrowed), the call a request of s
 * to c belongs to; NULL when c has none there, or several (it cannot be told which). */
json_object *router_sole_call(const struct client *c, const struct server *s);
/* The same call's route (NULL as above). */
const struct route *router_sole_route(const struct client *c, const struct server *s);

/* Client c's request id in flight, or NULL. */
struct route *router_find(struct router *r, const struct client *c, json_object *id);
/* The call in flight to s's current run under the child-side id child_id (0: none), given
 * up or not; NULL when there is none. Walks the calls: for a server's own requests. */
struct route *router_find_child(const struct router *r, const struct server *s, int64_t child_id);

/* A modern client's call that waits for input the client is to give in a retry (mrtr.h):
 * its client is owed nothing more under this id, but the call goes on at the server, its
 * requestTimeout paused. An answer the server gives meanwhile goes to
 * mrtr_route_answered(). */
void router_park(struct route *rt, struct mrtr_round *round);
/* The retry, request id of client c (which holds it: client_hold_request()), takes the
 * parked call over: its answer, progress and next requests go to c under id. -ENOMEM. */
int router_resume(struct route *rt, struct client *c, json_object *id);
/* A parked call nobody retried: given up, the server told to stop. */
void router_abandon_parked(struct route *rt, const char *reason);

/* A call whose server answered input_required for a legacy client (mrtr-server.h): sent
 * again on the same run with params (consumed), its answer coming back as the first did.
 * -ECONNRESET when that run has ended, or the send's error. */
int router_send_again(struct route *rt, json_object *params);
/* Such a call that cannot go on: its client answered the error, the route freed. */
void router_fail_call(struct route *rt, int code, const char *message, json_object *data);

/* After each loop iteration: answers lost routes with their server's outcome. */
void router_collect(struct router *r);
