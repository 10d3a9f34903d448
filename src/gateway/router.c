/* Forwarded requests and what comes back; see router.h. */
#include "router.h"
#include "mrtr.h"
#include "mrtr-server.h"

#include <assert.h>
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "audit.h"
#include "server-conn.h"
#include "client.h"
#include "jsonrpc.h"
#include "log.h"
#include "server.h"
#include "time-util.h"

void router_init(struct router *r, struct event_base *base, const struct logger *log) {
        *r = (struct router){ .base = base, .log = log };
        TAILQ_INIT(&r->live);
        TAILQ_INIT(&r->lost);
        idmap_init(&r->by_token);
        idmap_init(&r->by_client_id);
}

static struct route_list *list_of(struct router *r, struct route *rt) {
        return rt->lost ? &r->lost : &r->live;
}

/* A client's id is any string or integer, so routes are found by a hash of the client
 * and its id; routes whose keys collide (or a client that reuses an id) are chained. */
static int64_t key_of(const struct client *c, json_object *id) {
        return (int64_t)jsonrpc_id_hash(id, c->id);
}

static int index_add(struct router *r, struct route *rt) {
        rt->key = key_of(rt->client, rt->client_id);
        rt->same_key = idmap_get(&r->by_client_id, rt->key);
        return idmap_put(&r->by_client_id, rt->key, rt);
}

static void index_remove(struct router *r, struct route *rt) {
        struct route *prev = idmap_get(&r->by_client_id, rt->key);

        if (prev == rt) {
                if (rt->same_key) /* replaces the entry: cannot fail */
                        (void)idmap_put(&r->by_client_id, rt->key, rt->same_key);
                else
                        idmap_remove(&r->by_client_id, rt->key);
                return;
        }
        while (prev && prev->same_key != rt)
                prev = prev->same_key;
        if (prev)
                prev->same_key = rt->same_key;
}

static struct route *index_find(struct router *r, const struct client *c, json_object *id) {
        struct route *rt;

        for (rt = idmap_get(&r->by_client_id, key_of(c, id)); rt; rt = rt->same_key)
                if (rt->client == c && json_object_equal(rt->client_id, id))
                        return rt;
        return NULL;
}

/* Frees a route that was never sent. */
void router_set_audit(struct router *r, const int *mode) {
        r->audit_mode = mode;
}

/* What a call is about: tools/call and prompts/get name it, resources/read and
 * completion/complete a URI or a ref; NULL for another method (audited without a target). */
static const char *call_target(const struct jsonrpc_msg *m) {
        json_object *o = m->params, *v;

        if (strcmp(m->method, "completion/complete") == 0 && !json_object_object_get_ex(o, "ref", &o))
                return NULL;
        if (strcmp(m->method, "tools/call") != 0 && strcmp(m->method, "prompts/get") != 0 &&
            strcmp(m->method, "resources/read") != 0 && strcmp(m->method, "completion/complete") != 0)
                return NULL;
        if (!json_object_object_get_ex(o, "name", &v) && !json_object_object_get_ex(o, "uri", &v))
                return "";
        return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* One record as a call ends for its client: answered, failed, cancelled or timed out. */
static void route_audit(struct route *rt, enum audit_outcome outcome) {
        struct router *r = rt->router;
        struct audit_record record = { .server = rt->server->config->name, .method = rt->method, .target = rt->target,
                                       .outcome = outcome, .duration_usec = now_usec() - rt->started };

        if (!rt->audit_pending || !rt->client || !r->audit_mode)
                return;
        client_audit_subject(rt->client, &record);
        audit_emit(r->log, *r->audit_mode, &record);
        rt->audit_pending = false; /* once */
}

static void route_drop(struct route *rt) {
        json_object_put(rt->sent);
        free(rt->target);
        json_object_put(rt->client_id);
        json_object_put(rt->client_token);
        free(rt);
}

/* Forgets a route; the client, if still there, is told one request less is pending. */
static void route_free(struct route *rt) {
        struct router *r = rt->router;
        struct client *c = rt->client;

        if (rt->round)
                mrtr_route_answered(rt->round, NULL, NULL);
        if (rt->inputs)
                mrtr_inputs_end(rt->inputs, "the call ended");
        TAILQ_REMOVE(list_of(r, rt), rt, by_router);
        if (c) {
                TAILQ_REMOVE(&c->routes, rt, by_client);
                index_remove(r, rt);
        }
        if (rt->token)
                idmap_remove(&r->by_token, rt->token);
        if (rt->timer)
                event_free(rt->timer);
        server_route_freed(rt->server, rt->client_number, rt->uid, c, rt->abandoned, rt->lost);
        route_drop(rt);
        if (c)
                client_request_done(c);
}

/* At the daemon's end, after its clients and servers: what is left are calls their clients
 * gave up (no client), of servers already freed, which nothing else names any more. */
static void route_forget(struct router *r, struct route *rt) {
        assert(!rt->client);
        TAILQ_REMOVE(list_of(r, rt), rt, by_router);
        if (rt->token)
                idmap_remove(&r->by_token, rt->token);
        if (rt->timer)
                event_free(rt->timer);
        route_drop(rt);
}

void router_done(struct router *r) {
        struct route *rt;

        while ((rt = TAILQ_FIRST(&r->live)))
                route_forget(r, rt);
        while ((rt = TAILQ_FIRST(&r->lost)))
                route_forget(r, rt);
        idmap_done(&r->by_token);
        idmap_done(&r->by_client_id);
}

/* The child connection the route was sent on, if that run is still the server's. */
static struct child *route_child(const struct route *rt) {
        return server_run_child(rt->server, rt->run);
}

/* The route's client is owed nothing more: it may be leaving, and may reuse the id. */
static void route_detach(struct route *rt) {
        struct client *c = rt->client;

        TAILQ_REMOVE(&c->routes, rt, by_client);
        index_remove(rt->router, rt);
        rt->client = NULL;
        if (!rt->lost)
                server_route_detached(rt->server, rt->client_number, c);
}

/* Past the grace, an abandoned call is taken as stopped: a late answer is dropped. */
static void on_grace_end(evutil_socket_t fd, short what, void *userdata) {
        struct route *rt = userdata;
        struct child *ch = route_child(rt);

        log_emit(rt->router->log, LOG_DEBUG, &(struct log_subject){ .server = rt->server->config->name },
                 "%s given up %g s ago and still unanswered: taken as stopped", rt->method, router_grace(rt->server));
        if (ch)
                child_cancel_request(ch, rt->child_id);
        route_free(rt);
}

/* The call was given up (its client cancelled it or left, or it timed out): the child is
 * told to stop, but it may go on, and even ask its client something. Until the child
 * answers, its run ends or the grace passes, the route stays, with no client, so that
 * router_owner knows the server's requests may be that call's. */
static void route_abandon(struct route *rt, const char *reason) {
        struct child *ch = route_child(rt);
        struct timeval tv = timeval_from_seconds(router_grace(rt->server));
        json_object *params;

        if (rt->client)
                route_detach(rt);
        if (rt->inputs) {
                /* Its client was being asked for input: nothing runs at the server. */
                mrtr_inputs_end(rt->inputs, reason);
                route_free(rt);
                return;
        }
        if (rt->timer)
                event_free(rt->timer);
        rt->timer = ch && !rt->lost ? evtimer_new(rt->router->base, on_grace_end, rt) : NULL;
        if (rt->timer && server_route_abandoned(rt->server, rt->uid) < 0) {
                event_free(rt->timer); /* cannot be counted: taken as stopped at once */
                rt->timer = NULL;
                child_cancel_request(ch, rt->child_id);
        }
        if (!rt->timer) {
                route_free(rt);
                return;
        }
        params = json_object_new_object();
        json_object_object_add(params, "requestId", json_object_new_int64(rt->child_id));
        json_object_object_add(params, "reason", jsonrpc_text(reason));
        (void)child_notify(ch, "notifications/cancelled", params);
        rt->abandoned = true;
        evtimer_add(rt->timer, &tv);
}

static void reply_error(struct route *rt, int code, const char *message, const char *what) {
        json_object *data = json_object_new_object();

        json_object_object_add(data, "server", json_object_new_string(rt->server->config->name));
        json_object_object_add(data, "reason", json_object_new_string(what));
        if (rt->client)
                client_reply_error(rt->client, rt->client_id, code, message, data);
        else
                json_object_put(data);
}

/* Of what servers answer, a resources/read result is the one the specification marks
 * cacheable (the daemon answers the lists and server/discover itself). */
static bool route_cacheable(const struct route *rt) {
        return strcmp(rt->method, "resources/read") == 0;
}

/* A modern server's input_required, handed to mrtr-server.c; true when the route is done
 * with (answered and freed, or going on there). */
static bool input_taken(struct route *rt, json_object *result) {
        enum mrtr_server_take take;

        if (!rt->client || rt->server->era != MCP_ERA_MODERN || !mrtr_method_takes_input(rt->method))
                return false;
        take = mrtr_server_result(rt, result);
        if (take == MRTR_SERVER_PASS)
                return false;
        if (take == MRTR_SERVER_GOES_ON)
                return true;
        route_audit(rt, take == MRTR_SERVER_ANSWERED ? AUDIT_OK : AUDIT_ERROR);
        route_free(rt);
        return true;
}

static void on_reply(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct route *rt = userdata;
        struct router *r = rt->router;

        if (status < 0) {
                /* The connection ended with the process: answered once the server has decided
                 * what comes next (router_collect). */
                TAILQ_REMOVE(&r->live, rt, by_router);
                server_route_lost(rt->server, rt->client_number, rt->uid, rt->client, rt->abandoned);
                rt->lost = true;
                TAILQ_INSERT_TAIL(&r->lost, rt, by_router);
                return;
        }
        if (!error && input_taken(rt, result))
                return;
        route_audit(rt, error ? AUDIT_ERROR : AUDIT_OK);
        if (rt->round) {
                mrtr_route_answered(rt->round, result, error);
                rt->round = NULL;
        }
        if (rt->client && !error && route_cacheable(rt) && session_stateless(&rt->client->session) &&
            json_object_is_type(result, json_type_object) && !json_object_object_get_ex(result, "ttlMs", NULL))
                client_add_cache_hints(rt->client, result);
        if (rt->client)
                client_send(rt->client, error ? jsonrpc_error_object(rt->client_id, json_object_get(error))
                                              : jsonrpc_result(rt->client_id, json_object_get(result)));
        route_free(rt);
}

static void on_result_text(struct child *ch, const char *text, size_t len, const struct loan_offer *offer,
                           void *userdata) {
        struct route *rt = userdata;

        if (rt->client && rt->server->era == MCP_ERA_MODERN && mrtr_method_takes_input(rt->method) &&
            mrtr_server_text_is_input_required(text, len)) {
                json_tokener *tok = json_tokener_new();
                json_object *result = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
                bool taken = result && input_taken(rt, result);

                json_object_put(result);
                if (tok)
                        json_tokener_free(tok);
                if (taken)
                        return;
        }
        route_audit(rt, AUDIT_OK);
        if (rt->round) {
                json_tokener *tok = json_tokener_new();
                json_object *result = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;

                mrtr_route_answered(rt->round, result, NULL);
                rt->round = NULL;
                json_object_put(result);
                if (tok)
                        json_tokener_free(tok);
        }
        if (rt->client)
                client_send_result_text(rt->client, rt->client_id, text, len, route_cacheable(rt), offer);
        route_free(rt);
}

/* Abandons a route of a client that stays: it has one request less pending. */
static void abandon_for_client(struct route *rt, const char *reason) {
        struct client *c = rt->client;

        route_abandon(rt, reason);
        client_request_done(c);
}

static void on_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct route *rt = userdata;
        const struct server_config *c = rt->server->config;
        char message[256];
        uint64_t now = now_usec();

        /* libevent's clock is coarse (and cached for the loop iteration): its timer may end a
         * few milliseconds early. A call is timed out only once requestTimeout has passed. */
        if (now < rt->deadline) {
                struct timeval tv = timeval_from_usec(rt->deadline - now);

                evtimer_add(rt->timer, &tv);
                return;
        }
        snprintf(message, sizeof message,
                 "server '%s' did not answer %s within %g s (requestTimeout); the request was cancelled", c->name,
                 rt->method, c->request_timeout);
        log_emit(rt->router->log, LOG_WARNING, &(struct log_subject){ .server = c->name }, "%s", message);
        route_audit(rt, AUDIT_TIMEOUT);
        reply_error(rt, JSONRPC_INTERNAL_ERROR, message, "timeout");
        abandon_for_client(rt, "request timed out in mcpvisor");
}

static void arm_timeout(struct route *rt) {
        uint64_t usec = usec_from_seconds(rt->server->config->request_timeout);
        struct timeval tv = timeval_from_usec(usec);

        if (!rt->timer)
                return;
        rt->deadline = now_usec() + usec;
        evtimer_add(rt->timer, &tv);
}

/* Gives *params our progress token in place of the client's, in copies made only then
 * (never in the client's objects, which the caller may share). A token must be a string
 * or an integer; -EINVAL otherwise. */
static int rewrite_token(struct router *r, struct route *rt, json_object **params) {
        json_object *meta, *token, *copy;

        if (!json_object_object_get_ex(*params, "_meta", &meta) || !json_object_object_get_ex(meta, "progressToken", &token))
                return 0;
        if (!jsonrpc_id_valid(token))
                return -EINVAL;
        rt->client_token = json_object_get(token);
        rt->token = ++r->next_token;
        copy = jsonrpc_copy_with(*params, "_meta", jsonrpc_copy_with(meta, "progressToken", json_object_new_int64(rt->token)));
        json_object_put(*params);
        *params = copy;
        return 0;
}

/* Finds the route by its client's id from now on, and counts it at its server. */
static int count_route(struct router *r, struct route *rt) {
        int e = server_route_added(rt->server, rt->client_number, rt->client);

        if (e >= 0 && (e = index_add(r, rt)) < 0)
                server_route_freed(rt->server, rt->client_number, rt->uid, rt->client, false, false);
        return e;
}

/* A route for request m of c toward s, found by the client's id, with our progress token
 * in *params; NULL when the client was answered with why not. */
static struct route *route_new(struct router *r, struct client *c, struct jsonrpc_msg *m, struct server *s,
                               json_object **params) {
        struct route *rt = calloc(1, sizeof *rt);

        if (!rt || !server_serving(s)) {
                free(rt);
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "cannot forward the request (out of memory)", NULL);
                return NULL;
        }
        *rt = (struct route){ .router = r, .client = c, .client_number = c->id, .uid = client_principal(c)->uid, .client_id = json_object_get(m->id),
                              .server = s, .run = server_run_number(s), .audit_pending = true };
        snprintf(rt->method, sizeof rt->method, "%s", m->method);
        rt->started = now_usec();
        rt->client_caps = session_request_caps(&c->session, m->params);
        rt->log_level = session_request_log_level(&c->session, m->params);
        if (session_stateless(&c->session) && mrtr_method_takes_input(m->method))
                mrtr_request_digest(m->method, m->params, rt->digest);
        if (call_target(m) && !(rt->target = strdup(call_target(m)))) {
                route_drop(rt);
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "cannot forward the request (out of memory)", NULL);
                return NULL;
        }
        if (rewrite_token(r, rt, params) < 0) {
                route_drop(rt);
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: _meta.progressToken must be a string or an integer", NULL);
                return NULL;
        }
        if (count_route(r, rt) < 0) {
                route_drop(rt);
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "cannot forward the request (out of memory)", NULL);
                return NULL;
        }
        if (s->config->request_timeout > 0)
                rt->timer = evtimer_new(r->base, on_timeout, rt);
        return rt;
}

/* A call the server's connection did not take: closing, or (-ENOBUFS) its input queue is
 * full because the server does not read it. */
static void refuse_send(struct route *rt, int64_t r) {
        const struct server *s = rt->server;
        char message[256];

        route_audit(rt, AUDIT_ERROR);
        if (r != -ENOBUFS) {
                reply_error(rt, JSONRPC_INTERNAL_ERROR, "cannot send the request to the server (its connection is closing)",
                            "send failed");
                return;
        }
        snprintf(message, sizeof message,
                 "server '%s' is not reading its input: %zu bytes queued for it, and this request would pass serverInputLimit (%zu bytes)",
                 s->config->name, child_input_queued(server_child(s)), child_input_limit(server_child(s)));
        reply_error(rt, JSONRPC_INTERNAL_ERROR, message, "input full");
}

void router_forward(struct router *r, struct client *c, struct jsonrpc_msg *m, struct server *s,
                    const struct access_ask *ask, json_object *params) {
        json_object *forwarded = params; /* absent params stay absent */
        struct route *rt = NULL;

        if (!client_access_pass(c, s, m, ask)) {
                json_object_put(params);
                return;
        }
        if (client_hold_request(c, m->id) && !(rt = route_new(r, c, m, s, &forwarded)))
                client_request_done(c);
        if (!rt) {
                json_object_put(forwarded);
                return;
        }
        TAILQ_INSERT_TAIL(&r->live, rt, by_router);
        TAILQ_INSERT_TAIL(&c->routes, rt, by_client);
        if (rt->token && idmap_put(&r->by_token, rt->token, rt) < 0)
                rt->token = 0;
        if (s->era == MCP_ERA_MODERN && mrtr_method_takes_input(m->method) && !session_stateless(&c->session))
                rt->sent = json_object_get(forwarded);
        rt->child_id = child_forward(server_child(s), m->method, forwarded, server_caps_for(s, rt->client_caps), on_reply,
                                     on_result_text, rt);
        if (rt->child_id < 0) {
                refuse_send(rt, rt->child_id);
                route_free(rt);
                return;
        }
        arm_timeout(rt);
}

/* No access decision here: a client reaches only its own calls, each let through when it
 * was forwarded, and what the server gets is the daemon's own notifications/cancelled, as
 * for a timeout or a client gone. */
void router_cancel(struct router *r, struct client *c, json_object *id, const char *reason) {
        struct route *rt = index_find(r, c, id);

        if (!rt || rt->lost)
                return; /* unknown, answered already, or about to be answered */
        log_emit(r->log, LOG_DEBUG, &(struct log_subject){ .server = rt->server->config->name, .client = c->id },
                 "%s cancelled by the client%s%s", rt->method, reason ? ": " : "", reason ? reason : "");
        route_audit(rt, AUDIT_CANCELLED);
        abandon_for_client(rt, reason ? reason : "cancelled by the client");
}

void router_client_gone(struct router *r, struct client *c) {
        struct route *rt;

        while ((rt = TAILQ_FIRST(&c->routes))) {
                route_audit(rt, AUDIT_CANCELLED);
                route_detach(rt); /* a client being freed is told nothing */
                route_abandon(rt, "the client disconnected");
        }
}

static bool forward_progress(struct router *r, struct server *s, json_object *params) {
        json_object *token, *copy;
        struct route *rt = NULL;

        if (json_object_object_get_ex(params, "progressToken", &token) && json_object_is_type(token, json_type_int))
                rt = idmap_get(&r->by_token, json_object_get_int64(token));
        if (!rt || rt->server != s || rt->lost || !rt->client) {
                /* After completion or cancellation: the client must not see it. */
                log_emit(r->log, LOG_DEBUG, &(struct log_subject){ .server = s->config->name },
                         "dropped progress for no request in flight");
                return true;
        }
        arm_timeout(rt); /* progress shows the call is alive */
        copy = jsonrpc_copy_with(params, "progressToken", json_object_get(rt->client_token));
        client_send_related(rt->client, jsonrpc_notification("notifications/progress", copy), rt->client_id);
        return true;
}

bool router_child_notification(struct router *r, struct server *s, struct jsonrpc_msg *m) {
        if (strcmp(m->method, "notifications/progress") == 0)
                return forward_progress(r, s, m->params);
        return false;
}

double router_grace(const struct server *s) {
        double t = s->config->request_timeout;

        return t > 0 ? t : ROUTER_GRACE_SEC;
}

/* Every live route is of its server's current run: when a run ends, its child fails its
 * calls (on_reply) and they are lost before the server has another run. */
enum router_owner router_owner(const struct router *r, const struct server *s, struct client **ret) {
        struct client *owner;
        unsigned n = server_route_owners(s, &owner);

        *ret = NULL;
        if (!server_running(s) || n == 0)
                return ROUTER_OWNER_NONE;
        if (n > 1)
                return ROUTER_OWNER_SEVERAL;
        if (server_abandoned_by_other(s, client_principal(owner)->uid))
                return ROUTER_OWNER_ABANDONED;
        *ret = owner;
        return ROUTER_OWNER_ONE;
}

const struct route *router_sole_route(const struct client *c, const struct server *s) {
        const struct route *rt, *found = NULL;

        TAILQ_FOREACH(rt, &c->routes, by_client)
                if (rt->server == s && !rt->lost) {
                        if (found)
                                return NULL;
                        found = rt;
                }
        return found;
}

json_object *router_sole_call(const struct client *c, const struct server *s) {
        const struct route *rt = router_sole_route(c, s);

        return rt ? rt->client_id : NULL;
}

/* The daemon ended the run (a timeout, failed pings, its own signal, ...), not the server. */
static bool ended_by_daemon(const struct server *s) {
        switch (s->why.kind) {
        case SERVER_CAUSE_EXIT:
        case SERVER_CAUSE_CONNECTION:
                return server_exit_by_daemon(&s->last_exit);
        default:
                return s->why.kind != SERVER_CAUSE_NONE;
        }
}

/* How the run ended, as a verb phrase: "exited with status 1", "was killed by SIGKILL", or
 * why the daemon ended it: "ended (startTimeout (30 s) passed before it was ready, ...)".
 * Malloc'd (the cause is never cut), or NULL. */
static char *how_it_ended(const struct server *s) {
        const struct server_exit *e = &s->last_exit;
        char *text = NULL;
        int r;

        if (ended_by_daemon(s)) {
                _cleanup_free_ char *why = server_cause_text(&s->why);
                r = asprintf(&text, "ended (%s)", why ? why : "stopped by mcpvisord");
        } else if (e->code == CLD_EXITED)
                r = asprintf(&text, "exited with status %d", e->status);
        else if (e->code) {
                _cleanup_free_ char *end = server_exit_text(e);
                r = end ? asprintf(&text, "%s%s", e->code == CLD_KILLED ? "was " : "", end) : -ENOMEM;
        }
        else if (s->why.kind == SERVER_CAUSE_CONNECTION && s->why.detail)
                /* a run without a process (a server reached by URL): what broke it, its HTTP status */
                r = asprintf(&text, "lost its connection (%s)", s->why.detail);
        else
                r = asprintf(&text, "lost its connection");
        return r < 0 ? NULL : text;
}

/* "server 'github' exited with status 1 during this call; restarting in 2.0 s; its log: ..."
 * Malloc'd, or NULL. */
static char *outcome(const struct router *r, const struct server *s) {
        const char *name = s->config->name;
        _cleanup_free_ char *how = how_it_ended(s);
        uint64_t now = now_usec();
        char log[160], *text = NULL;
        int q;

        log_server_hint(r->log, name, log, sizeof log);
        if (s->state == SERVER_STOPPED || server_stopping(s))
                q = asprintf(&text, "server '%s' was stopped during this call (%s)", name, server_state_cause(s));
        else if (s->state == SERVER_BACKOFF)
                q = asprintf(&text, "server '%s' %s during this call; restarting in %.1f s; its log: %s", name,
                             how ? how : "ended", s->restart_at > now ? (double)(s->restart_at - now) / (double)USEC_PER_SEC : 0.0,
                             log);
        else if (s->state == SERVER_FAILED)
                q = asprintf(&text, "server '%s' %s during this call; not restarting (%s); its log: %s", name,
                             how ? how : "ended", server_state_cause(s), log);
        else
                q = asprintf(&text, "server '%s' %s during this call; it was restarted; its log: %s", name,
                             how ? how : "ended", log);
        return q < 0 ? NULL : text;
}

void router_collect(struct router *r) {
        struct route *rt;

        while ((rt = TAILQ_FIRST(&r->lost))) {
                _cleanup_free_ char *message = outcome(r, rt->server);

                route_audit(rt, AUDIT_ERROR);
                reply_error(rt, JSONRPC_INTERNAL_ERROR, message ? message : "the server ended during this call",
                            "server ended");
                route_free(rt);
        }
}

struct route *router_find(struct router *r, const struct client *c, json_object *id) {
        struct route *rt = index_find(r, c, id);

        return rt && !rt->lost ? rt : NULL;
}

struct route *router_find_child(const struct router *r, const struct server *s, int64_t child_id) {
        struct route *rt;

        if (child_id <= 0)
                return NULL;
        TAILQ_FOREACH(rt, &r->live, by_router)
                if (rt->server == s && rt->child_id == child_id && rt->run == server_run_number(s))
                        return rt;
        return NULL;
}

void router_park(struct route *rt, struct mrtr_round *round) {
        struct client *c = rt->client;

        route_detach(rt);
        rt->round = round;
        if (rt->timer)
                evtimer_del(rt->timer);
        client_request_done(c);
}

int router_resume(struct route *rt, struct client *c, json_object *id) {
        json_object_put(rt->client_id);
        rt->client_id = json_object_get(id);
        rt->client = c;
        rt->client_number = c->id;
        rt->uid = client_principal(c)->uid;
        if (index_add(rt->router, rt) < 0 || server_route_attached(rt->server, c->id, c) < 0) {
                rt->client = NULL;
                return -ENOMEM;
        }
        rt->round = NULL;
        TAILQ_INSERT_TAIL(&c->routes, rt, by_client);
        arm_timeout(rt);
        return 0;
}

void router_abandon_parked(struct route *rt, const char *reason) {
        rt->round = NULL;
        route_audit(rt, AUDIT_CANCELLED);
        route_abandon(rt, reason);
}

int router_send_again(struct route *rt, json_object *params) {
        struct child *ch = route_child(rt);
        int64_t id;

        if (!ch) {
                json_object_put(params);
                return -ECONNRESET;
        }
        id = child_forward(ch, rt->method, params, server_caps_for(rt->server, rt->client_caps), on_reply, on_result_text,
                           rt);
        if (id < 0)
                return (int)id;
        rt->child_id = id;
        arm_timeout(rt);
        return 0;
}

void router_fail_call(struct route *rt, int code, const char *message, json_object *data) {
        route_audit(rt, AUDIT_ERROR);
        if (rt->client)
                client_reply_error(rt->client, rt->client_id, code, message, data);
        else
                json_object_put(data);
        route_free(rt);
}
