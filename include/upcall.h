/* Requests a server's process makes of its client: sampling/createMessage, roots/list,
 * elicitation/create, and any method the daemon does not know. A server with "roots"
 * configured has its roots/list answered with them by the daemon, always. Otherwise, a
 * shared child cannot say which client's call caused such a request (stdio carries no
 * correlation), so it goes to the one client with requests in flight to that server:
 *   - toward the client it gets a daemon-unique integer id; the client's answer returns
 *     to the child under the child's own id (its exact value);
 *   - with no such client, or several, the child gets an error saying so: never a guess;
 *   - roots, sampling and elicitation go only to a client that declared the capability,
 *     and only from a server they were offered to ("clientCapabilities");
 *   - the child's notifications/cancelled reaches the client under our id; the client's
 *     progress for the request reaches the child;
 *   - a client that leaves has its pending requests answered with an error; when the
 *     server's process ends, its pending requests are cancelled toward their clients.
 * Notifications from a server that nothing else handles follow the same owner rule. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "idmap.h"

struct client;
struct daemon;
struct server;
struct router;
struct logger;
struct jsonrpc_msg;
struct mrtr_round;
struct mrtr_inputs;

struct server_request {
        TAILQ_ENTRY(server_request) entry;
        struct client *client;
        struct server *server;
        uint64_t run;                  /* the run that asked */
        json_object *child_id;          /* referenced: answered under its exact value */
        json_object *token;             /* params._meta.progressToken, referenced, or NULL */
        json_object *call;              /* the client's id of the call it was made during
                                         * (router_sole_call()), referenced, or NULL */
        int64_t id;                     /* ours toward the client; a round's key (mrtr.h) */
        char method[48];
        json_object *params;            /* referenced while in a round, for its inputRequests */
        struct mrtr_round *round;       /* of a modern client's call: parked there, no client */
        /* A modern server's input request (mrtr-server.h), asked by the daemon: its answer
         * goes there, not to a process (child_id is NULL). */
        struct mrtr_inputs *inputs;
};

TAILQ_HEAD(server_request_list, server_request);

struct server_requests {
        struct daemon *daemon;          /* whose clients own instances (client-instances.h) */
        const struct router *router;
        const struct logger *log;
        struct server_request_list pending;
        struct idmap by_id;             /* our id -> pending request */
        int64_t next_id;
};

void server_requests_init(struct server_requests *q, struct daemon *d, const struct router *router,
                          const struct logger *log);
void server_requests_done(struct server_requests *q);

/* A request from server s's current process; answered now, or once its client answers. */
void server_requests_forward(struct server_requests *q, struct server *s, struct jsonrpc_msg *m);
/* A notification from s's process that no other module handles: its cancellation of one
 * of its requests, or one the daemon does not know, which goes to the owning client. */
void server_requests_child_notification(struct server_requests *q, struct server *s, struct jsonrpc_msg *m);

/* A response from client c, or a broken one (jsonrpc_is_broken_response): to one of our
 * requests, whose server gets it (a broken one as an error), or dropped. */
void server_requests_answer(struct server_requests *q, struct client *c, struct jsonrpc_msg *m);
/* A client's notifications/progress; true if it was about a pending server request. */
bool server_requests_client_progress(struct server_requests *q, struct client *c, struct jsonrpc_msg *m);
void server_requests_client_gone(struct server_requests *q, struct client *c);

/* A modern server's input request (method, params borrowed) of c's call id to s, asked of
 * c as a server's own request is (under an id of ours, related to the call), its answer
 * handed to mrtr_inputs_answered(inputs, ...). Our id, or -EPERM when c did not declare
 * the capability it needs, -ENOMEM. */
int64_t server_requests_ask(struct server_requests *q, struct server *s, struct client *c, json_object *call,
                            const char *method, json_object *params, struct mrtr_inputs *inputs);
/* Such a request withdrawn (its call ended): the client is told it is cancelled. */
void server_requests_withdraw(struct server_requests *q, int64_t id, const char *reason);

/* A request in a round (mrtr.h) answered with the client's result (borrowed), or with an
 * error saying why (result NULL); freed. */
void server_requests_settle(struct server_requests *q, struct server_request *rq, json_object *result, const char *why);
/* A request gathered into a round: its client is owed nothing more. */
void server_requests_park(struct server_request *rq);

/* A server is about to be freed: its pending requests are cancelled toward their clients. */
void server_requests_server_gone(struct server_requests *q, const struct server *s);
/* After servers changed state: requests whose process has ended are cancelled toward
 * their clients. */
void server_requests_sweep(struct server_requests *q);
