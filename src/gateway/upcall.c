/* A server's own requests, routed to the client whose call is in progress; see
 * upcall.h. */
#include "upcall.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server-conn.h"
#include "client.h"
#include "client-instances.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "mrtr.h"
#include "mrtr-server.h"
#include "request-meta.h"
#include "router.h"
#include "server.h"

/* The requests that need a client capability, by the capability's bit. */
static const char *const capability_methods[CLIENT_CAP_COUNT] = {
        [CLIENT_CAP_ROOTS] = "roots/list",
        [CLIENT_CAP_SAMPLING] = "sampling/createMessage",
        [CLIENT_CAP_ELICITATION] = "elicitation/create",
};

void server_requests_init(struct server_requests *q, struct daemon *d, const struct router *router,
                          const struct logger *log) {
        *q = (struct server_requests){ .daemon = d, .router = router, .log = log };
        TAILQ_INIT(&q->pending);
        idmap_init(&q->by_id);
}

static void request_free(struct server_requests *q, struct server_request *rq) {
        if (rq->round)
                mrtr_request_gone(rq->round, rq);
        if (rq->inputs)
                mrtr_inputs_request_gone(rq->inputs, rq->id);
        TAILQ_REMOVE(&q->pending, rq, entry);
        idmap_remove(&q->by_id, rq->id);
        json_object_put(rq->child_id);
        json_object_put(rq->token);
        json_object_put(rq->call);
        json_object_put(rq->params);
        free(rq);
}

void server_requests_done(struct server_requests *q) {
        struct server_request *rq;

        while ((rq = TAILQ_FIRST(&q->pending)))
                request_free(q, rq);
        idmap_done(&q->by_id);
}

/* The connection of the run that asked, if that run is still the server's. */
static struct child *asking_child(const struct server_request *rq) {
        return server_run_child(rq->server, rq->run);
}

/* Answers the server's request with an error, and says so once in the log. */
static void refuse(struct server *s, struct jsonrpc_msg *m, int code, const char *why) {
        json_object *data = json_object_new_object();
        char text[512];

        snprintf(text, sizeof text, "cannot pass %.48s to a client: %s", m->method, why);
        server_log(s, LOG_INFO, "%s", text);
        json_object_object_add(data, "server", json_object_new_string(s->config->name));
        child_send(server_child(s), jsonrpc_error(m->id, code, text, data));
}

static int capability_needed(const char *method) {
        for (int i = 0; i < CLIENT_CAP_COUNT; i++)
                if (strcmp(method, capability_methods[i]) == 0)
                        return i;
        return -1;
}

/* A modern client (2026-07-28) takes no requests from servers: what a server asks of it
 * goes in an input_required result, which the daemon does not make yet, so the server's
 * request is refused. When the call it serves did not declare the capability the request
 * needs, that call cannot go on as the client asked: it is answered the specification's
 * MissingRequiredClientCapability (-32021) naming it, and cancelled at the server. */
static void refuse_for_modern(struct server_requests *q, struct server *s, struct jsonrpc_msg *m, struct client *c,
                              int cap) {
        const struct route *rt = router_sole_route(c, s);
        json_object *data, *required, *call;
        char why[300];

        if (cap >= 0 && rt && !(rt->client_caps & (1u << cap))) {
                call = json_object_get(rt->client_id);
                data = json_object_new_object();
                required = json_object_new_object();
                json_object_object_add(required, client_capability_names[cap], json_object_new_object());
                json_object_object_add(data, "requiredCapabilities", required);
                snprintf(why, sizeof why, "Missing required client capability: server '%s' asks for '%s', which this request "
                         "did not declare", s->config->name, client_capability_names[cap]);
                client_reply_error(c, call, MCP_ERROR_MISSING_CAPABILITY, why, data);
                router_cancel(daemon_router(q->daemon), c, call, "the request lacks a client capability the server needs");
                json_object_put(call);
        }
        snprintf(why, sizeof why, "the client with requests in flight to server '%s' speaks %s, which takes no requests "
                 "from servers", s->config->name, c->session.protocol_version);
        refuse(s, m, JSONRPC_METHOD_NOT_FOUND, why);
}

/* Whose call the request was made for, by what the server said (the call's own answer
 * stream, over HTTP), else by who has calls there (router_owner()): the client, and in
 * *call its id of that call (borrowed, or NULL when it cannot be told). */
static enum router_owner request_owner(struct server_requests *q, struct server *s, struct client **c, json_object **call) {
        const struct route *rt = router_find_child(q->router, s, child_related(server_child(s)));
        enum router_owner owner;

        if (rt) {
                *c = rt->client;
                *call = rt->client_id;
                return rt->client ? ROUTER_OWNER_ONE : ROUTER_OWNER_GIVEN_UP;
        }
        owner = router_owner(q->router, s, c);
        /* Another user's call parked for its retry (mrtr.h) goes on at the server and may ask
         * more, as a given-up one may. */
        if (owner == ROUTER_OWNER_ONE && mrtr_parked_by_other(daemon_mrtr(q->daemon), s, client_principal(*c)->uid))
                owner = ROUTER_OWNER_ABANDONED;
        *call = owner == ROUTER_OWNER_ONE ? router_sole_call(*c, s) : NULL;
        return owner;
}

/* The client to ask, or NULL with the server's request refused; *call as request_owner(). */
static struct client *owner_or_refuse(struct server_requests *q, struct server *s, struct jsonrpc_msg *m,
                                      json_object **call) {
        int cap = capability_needed(m->method);
        struct client *c;
        char why[300];

        if (cap >= 0 && !(s->config->client_capabilities & (1u << cap))) {
                snprintf(why, sizeof why, "mcpvisor did not offer '%s' to server '%s' (see its clientCapabilities)",
                         client_capability_names[cap], s->config->name);
                refuse(s, m, JSONRPC_METHOD_NOT_FOUND, why);
                return NULL;
        }
        switch (request_owner(q, s, &c, call)) {
        case ROUTER_OWNER_NONE:
                /* An instance's owner is known without a call (a server that asks for its
                 * roots as it starts). */
                if ((c = client_instances_owner(q->daemon, s)))
                        break;
                snprintf(why, sizeof why, "no client has a request in flight to server '%s'", s->config->name);
                refuse(s, m, JSONRPC_INTERNAL_ERROR, why);
                return NULL;
        case ROUTER_OWNER_ONE:
                break;
        case ROUTER_OWNER_SEVERAL:
                snprintf(why, sizeof why,
                         "several clients have requests in flight to server '%s', and a request does not say which call it serves",
                         s->config->name);
                refuse(s, m, JSONRPC_INTERNAL_ERROR, why);
                return NULL;
        case ROUTER_OWNER_ABANDONED:
                snprintf(why, sizeof why,
                         "several clients may have calls in flight to server '%s' (another user's was cancelled, or "
                         "waits for its client's input, and may still be running), and a request does not say which "
                         "call it serves",
                         s->config->name);
                refuse(s, m, JSONRPC_INTERNAL_ERROR, why);
                return NULL;
        case ROUTER_OWNER_GIVEN_UP:
                refuse(s, m, JSONRPC_INTERNAL_ERROR,
                       "the call it was made for has been given up (cancelled, its client gone or timed out) or waits "
                       "for its client's retry");
                return NULL;
        }
        if (c->state != CLIENT_ACTIVE) {
                snprintf(why, sizeof why, "the client with requests in flight to server '%s' has stopped sending", s->config->name);
                refuse(s, m, JSONRPC_INTERNAL_ERROR, why);
                return NULL;
        }
        if (!client_sees_server(c, s)) {
                snprintf(why, sizeof why, "the client with requests in flight to server '%s' may not hear from it", s->config->name);
                refuse(s, m, JSONRPC_INTERNAL_ERROR, why);
                return NULL;
        }
        if (session_stateless(&c->session) && !mrtr_takes(c, s, cap)) {
                refuse_for_modern(q, s, m, c, cap);
                return NULL;
        }
        if (cap >= 0 && !session_stateless(&c->session) && !(c->session.client_caps & (1u << cap))) {
                snprintf(why, sizeof why, "the client with requests in flight to server '%s' did not declare the '%s' capability",
                         s->config->name, client_capability_names[cap]);
                refuse(s, m, JSONRPC_METHOD_NOT_FOUND, why);
                return NULL;
        }
        return c;
}

static json_object *progress_token(json_object *params) {
        json_object *meta, *token;

        if (json_object_object_get_ex(params, "_meta", &meta) && json_object_object_get_ex(meta, "progressToken", &token))
                return token;
        return NULL;
}

/* A server with roots configured gets those, whoever is calling: one client's roots must
 * not become what every client of a shared process works in. */
static bool answer_configured_roots(struct server *s, struct jsonrpc_msg *m) {
        if (strcmp(m->method, capability_methods[CLIENT_CAP_ROOTS]) != 0 || s->config->roots.n == 0)
                return false;
        server_log(s, LOG_DEBUG, "answered roots/list with its %zu configured roots", s->config->roots.n);
        child_send(server_child(s), jsonrpc_result(m->id, roots_result(&s->config->roots)));
        return true;
}

/* A modern client's call: the request goes into the call's round (mrtr.h), or is refused. */
static void gather(struct server_requests *q, struct server *s, struct jsonrpc_msg *m, struct client *c,
                   struct server_request *rq) {
        char why[200];
        int r;

        rq->params = json_object_get(m->params);
        r = mrtr_gather(daemon_mrtr(q->daemon), c, s, rq);
        if (r >= 0)
                return;
        snprintf(why, sizeof why, r == -EBUSY ? "its client has too many input_required rounds waiting for a retry"
                                              : "mcpvisor is out of memory");
        request_free(q, rq);
        refuse(s, m, JSONRPC_INTERNAL_ERROR, why);
}

void server_requests_forward(struct server_requests *q, struct server *s, struct jsonrpc_msg *m) {
        json_object *call = NULL;
        struct server_request *rq;
        struct client *c;

        if (answer_configured_roots(s, m))
                return;
        c = owner_or_refuse(q, s, m, &call);
        if (!c)
                return;
        rq = calloc(1, sizeof *rq);
        if (!rq || idmap_put(&q->by_id, q->next_id + 1, rq) < 0) {
                free(rq);
                child_send(server_child(s), jsonrpc_error(m->id, JSONRPC_INTERNAL_ERROR, "mcpvisor is out of memory", NULL));
                return;
        }
        *rq = (struct server_request){ .client = c, .server = s, .run = server_run_number(s), .id = ++q->next_id,
                                       .child_id = json_object_get(m->id),
                                       .token = json_object_get(progress_token(m->params)),
                                       .call = json_object_get(call) };
        snprintf(rq->method, sizeof rq->method, "%s", m->method);
        TAILQ_INSERT_TAIL(&q->pending, rq, entry);
        if (session_stateless(&c->session)) {
                gather(q, s, m, c, rq);
                return;
        }
        log_emit(q->log, LOG_DEBUG, &(struct log_subject){ .server = s->config->name, .client = c->id },
                 "passing %s to the client as request %" PRId64, rq->method, rq->id);
        client_send_related(c, jsonrpc_request(rq->id, m->method, json_object_get(m->params)), rq->call);
}

static void tell_client_cancelled(struct server_request *rq, const char *reason);

int64_t server_requests_ask(struct server_requests *q, struct server *s, struct client *c, json_object *call,
                            const char *method, json_object *params, struct mrtr_inputs *inputs) {
        int cap = capability_needed(method);
        struct server_request *rq;

        if (cap >= 0 && !(c->session.client_caps & (1u << cap)))
                return -EPERM;
        rq = calloc(1, sizeof *rq);
        if (!rq || idmap_put(&q->by_id, q->next_id + 1, rq) < 0) {
                free(rq);
                return -ENOMEM;
        }
        *rq = (struct server_request){ .client = c, .server = s, .run = server_run_number(s), .id = ++q->next_id,
                                       .token = json_object_get(progress_token(params)), .call = json_object_get(call),
                                       .inputs = inputs };
        snprintf(rq->method, sizeof rq->method, "%s", method);
        TAILQ_INSERT_TAIL(&q->pending, rq, entry);
        log_emit(q->log, LOG_DEBUG, &(struct log_subject){ .server = s->config->name, .client = c->id },
                 "passing the server's input request %s to the client as request %" PRId64, rq->method, rq->id);
        client_send_related(c, jsonrpc_request(rq->id, method, json_object_get(params)), rq->call);
        return rq->id;
}

void server_requests_withdraw(struct server_requests *q, int64_t id, const char *reason) {
        struct server_request *rq = idmap_get(&q->by_id, id);

        if (!rq || !rq->inputs)
                return;
        rq->inputs = NULL; /* its round is the one withdrawing it */
        tell_client_cancelled(rq, reason);
        request_free(q, rq);
}

static struct server_request *find_by_child_id(struct server_requests *q, const struct server *s, json_object *id) {
        struct server_request *rq;

        TAILQ_FOREACH(rq, &q->pending, entry)
                if (rq->server == s && asking_child(rq) && json_object_equal(rq->child_id, id))
                        return rq;
        return NULL;
}

static void tell_client_cancelled(struct server_request *rq, const char *reason) {
        json_object *params;

        if (!rq->client || rq->round)
                return; /* in a round: the client was not asked as a request */
        params = json_object_new_object();

        json_object_object_add(params, "requestId", json_object_new_int64(rq->id));
        json_object_object_add(params, "reason", json_object_new_string(reason));
        client_send_related(rq->client, jsonrpc_notification("notifications/cancelled", params), rq->call);
}

static void child_cancelled(struct server_requests *q, struct server *s, struct jsonrpc_msg *m) {
        json_object *id, *reason;
        struct server_request *rq;

        if (!json_object_object_get_ex(m->params, "requestId", &id) || !(rq = find_by_child_id(q, s, id)))
                return; /* not one of its requests to a client: nothing to pass on */
        json_object_object_get_ex(m->params, "reason", &reason);
        tell_client_cancelled(rq, json_object_is_type(reason, json_type_string) ? json_object_get_string(reason)
                                                                                   : "cancelled by the server");
        request_free(q, rq);
}

void server_requests_child_notification(struct server_requests *q, struct server *s, struct jsonrpc_msg *m) {
        struct client *c;

        if (strcmp(m->method, "notifications/cancelled") == 0) {
                child_cancelled(q, s, m);
                return;
        }
        if (router_owner(q->router, s, &c) != ROUTER_OWNER_ONE || c->state != CLIENT_ACTIVE || !client_sees_server(c, s)) {
                server_log(s, LOG_DEBUG, "dropped a notification with no single client to go to");
                return;
        }
        client_send(c, json_object_get(m->root));
}

/* What a client's answer and progress to a server's request are about. */
static const struct access_ask ASKED = { .about = ACCESS_ABOUT_ASKED };

/* The client's answer, under the child's id; a broken one becomes an error. */
static json_object *answer_for_child(const struct server_request *rq, const struct jsonrpc_msg *m) {
        char text[256];

        if (m->kind == JSONRPC_INVALID) {
                snprintf(text, sizeof text, "the client answered with an invalid response: %s", m->error_message);
                return jsonrpc_error(rq->child_id, JSONRPC_INTERNAL_ERROR, text, NULL);
        }
        return m->error ? jsonrpc_error_object(rq->child_id, json_object_get(m->error))
                        : jsonrpc_result(rq->child_id, json_object_get(m->result));
}

void server_requests_answer(struct server_requests *q, struct client *c, struct jsonrpc_msg *m) {
        json_object *id = jsonrpc_answer_id(m);
        struct server_request *rq = NULL;
        struct child *ch;

        if (json_object_is_type(id, json_type_int))
                rq = idmap_get(&q->by_id, json_object_get_int64(id));
        if (!rq || rq->client != c || rq->round) {
                client_log(c, LOG_DEBUG, "dropping a response to no request of ours (answered, cancelled or unknown)");
                return;
        }
        if (rq->inputs) {
                struct mrtr_inputs *inputs = rq->inputs;
                bool allowed = client_access_pass(c, rq->server, m, &ASKED);
                int64_t asked = rq->id;

                rq->inputs = NULL; /* answered, not gone */
                request_free(q, rq);
                mrtr_inputs_answered(inputs, asked, m, allowed);
                return;
        }
        ch = asking_child(rq);
        if (ch && client_access_pass(c, rq->server, m, &ASKED))
                child_send(ch, answer_for_child(rq, m));
        else if (ch)
                child_send(ch, jsonrpc_error(rq->child_id, JSONRPC_INTERNAL_ERROR,
                                             "the client that was asked may no longer hear from this server", NULL));
        request_free(q, rq);
}

bool server_requests_client_progress(struct server_requests *q, struct client *c, struct jsonrpc_msg *m) {
        struct server_request *rq;
        json_object *token;
        struct child *ch;

        if (!json_object_object_get_ex(m->params, "progressToken", &token))
                return false;
        TAILQ_FOREACH(rq, &q->pending, entry)
                if (rq->client == c && !rq->round && !rq->inputs && rq->token && json_object_equal(rq->token, token)) {
                        ch = asking_child(rq);
                        if (ch && client_access_pass(c, rq->server, m, &ASKED))
                                child_send(ch, json_object_get(m->root));
                        return true;
                }
        return false;
}

void server_requests_client_gone(struct server_requests *q, struct client *c) {
        struct server_request *rq, *next;
        struct child *ch;
        char text[200];

        for (rq = TAILQ_FIRST(&q->pending); rq; rq = next) {
                next = TAILQ_NEXT(rq, entry);
                if (rq->client != c)
                        continue;
                ch = rq->inputs ? NULL : asking_child(rq);
                snprintf(text, sizeof text, "the client that was asked (client %" PRIu64 ") disconnected or closed its input before answering",
                         c->id);
                if (ch)
                        child_send(ch, jsonrpc_error(rq->child_id, JSONRPC_INTERNAL_ERROR, text, NULL));
                request_free(q, rq);
        }
}

void server_requests_park(struct server_request *rq) {
        rq->client = NULL;
}

void server_requests_settle(struct server_requests *q, struct server_request *rq, json_object *result, const char *why) {
        struct child *ch = asking_child(rq);

        if (ch)
                child_send(ch, result ? jsonrpc_result(rq->child_id, json_object_get(result))
                                      : jsonrpc_error(rq->child_id, JSONRPC_INTERNAL_ERROR, why, NULL));
        rq->round = NULL; /* the round forgets it itself */
        request_free(q, rq);
}

/* Cancels toward their clients the requests of server s (NULL: of every server whose
 * asking process has ended). */
static void cancel_ended(struct server_requests *q, const struct server *s) {
        struct server_request *rq, *next;

        for (rq = TAILQ_FIRST(&q->pending); rq; rq = next) {
                _cleanup_free_ char *reason = NULL;

                next = TAILQ_NEXT(rq, entry);
                if (s ? rq->server != s : asking_child(rq) != NULL)
                        continue;
                if (asprintf(&reason, "server '%s' ended", rq->server->config->name) < 0)
                        reason = NULL;
                tell_client_cancelled(rq, reason ? reason : "its server ended");
                request_free(q, rq);
        }
}

void server_requests_sweep(struct server_requests *q) {
        cancel_ended(q, NULL);
}

void server_requests_server_gone(struct server_requests *q, const struct server *s) {
        cancel_ended(q, s);
}
