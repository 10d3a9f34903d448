/* Modern servers' input_required results; see mrtr-server.h. */
#include "mrtr-server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "config.h"
#include "daemon-handle.h"
#include "json-scan.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "mrtr.h"
#include "mrtr-seal.h"
#include "protocol.h"
#include "roots.h"
#include "router.h"
#include "server.h"
#include "time-util.h"
#include "upcall.h"

/* One round of a legacy client's call: the input requests it is asked, and the answers. */
struct mrtr_inputs {
        struct route *route;
        struct server_requests *requests;
        json_object *responses;        /* inputResponses so far */
        json_object *state;            /* the server's requestState (a string), or NULL */
        struct {
                int64_t id;            /* ours toward the client (upcall.h) */
                char *key;             /* the server's */
        } out[MRTR_ASKS_MAX];
        size_t n_out;
        bool gone;                     /* a request went unanswered: the call fails once none is out */
};

/* The input requests the specification defines, by the capability each needs. */
static int capability_of(const char *method) {
        static const char *const methods[CLIENT_CAP_COUNT] = {
                [CLIENT_CAP_ROOTS] = "roots/list",
                [CLIENT_CAP_SAMPLING] = "sampling/createMessage",
                [CLIENT_CAP_ELICITATION] = "elicitation/create",
        };

        for (int i = 0; i < CLIENT_CAP_COUNT; i++)
                if (method && strcmp(method, methods[i]) == 0)
                        return i;
        return -1;
}

bool mrtr_server_text_is_input_required(const char *text, size_t len) {
        static const char *const names[] = { "resultType" };
        static const char want[] = "\"input_required\"";
        struct json_member m;

        return json_scan_members(text, len, JSONRPC_MAX_DEPTH, names, 1, &m) >= 0 && m.count > 0 &&
               (size_t)(m.end - m.value) == sizeof want - 1 && memcmp(m.value, want, sizeof want - 1) == 0;
}

static const char *string_member(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                                 : NULL;
}

/* "server 'NAME' answered METHOD input_required, and WHY" to the call's client, logged. */
static void reply_failure(struct route *rt, const char *why) {
        json_object *data = json_object_new_object();
        char message[300];

        snprintf(message, sizeof message, "server '%s' answered %s input_required, and %s", rt->server->config->name,
                 rt->method, why);
        log_emit(daemon_logger(rt->client->daemon), LOG_INFO,
                 &(struct log_subject){ .server = rt->server->config->name, .client = rt->client->id }, "%s", message);
        json_object_object_add(data, "server", json_object_new_string(rt->server->config->name));
        client_reply_error(rt->client, rt->client_id, JSONRPC_INTERNAL_ERROR, message, data);
}

/* inputRequests as the specification has them (an object of at most MRTR_ASKS_MAX
 * requests the specification defines), and at least one of it and requestState. */
static bool well_formed(json_object *result) {
        json_object *requests = NULL, *state = NULL;

        json_object_object_get_ex(result, "inputRequests", &requests);
        json_object_object_get_ex(result, "requestState", &state);
        if ((requests && !json_object_is_type(requests, json_type_object)) ||
            (state && !json_object_is_type(state, json_type_string)) || (!requests && !state) ||
            (requests && json_object_object_length(requests) > MRTR_ASKS_MAX))
                return false;
        if (requests) {
                json_object_object_foreach(requests, key, ask) {
                        (void)key;
                        if (!json_object_is_type(ask, json_type_object) || capability_of(string_member(ask, "method")) < 0)
                                return false;
                }
        }
        return true;
}

/* A roots/list the daemon answers itself: the server has roots configured (as upcall.c
 * does for a legacy server's). */
static bool answered_by_daemon(const struct server *s, int cap) {
        return cap == CLIENT_CAP_ROOTS && s->config->roots.n > 0;
}

/* Whether an input request needs a capability the daemon did not offer the server (-32603),
 * or that caps (the client's) lacks (MissingRequiredClientCapability naming it): the
 * client is then answered so. */
static bool refuse_missing(struct route *rt, json_object *requests, unsigned caps) {
        json_object *data, *required;
        char why[300];

        json_object_object_foreach(requests, key, ask) {
                int cap = capability_of(string_member(ask, "method"));

                (void)key;
                if (answered_by_daemon(rt->server, cap))
                        continue;
                if (!(rt->server->config->client_capabilities & (1u << cap))) {
                        /* The daemon's _meta never declared it to the server: as upcall.c
                         * refuses a legacy server's request for it. */
                        snprintf(why, sizeof why, "server '%s' asks for '%s', which mcpvisor did not offer it (see its "
                                 "clientCapabilities)", rt->server->config->name, client_capability_names[cap]);
                        client_reply_error(rt->client, rt->client_id, JSONRPC_INTERNAL_ERROR, why, NULL);
                        return true;
                }
                if (caps & (1u << cap))
                        continue;
                data = json_object_new_object();
                required = json_object_new_object();
                json_object_object_add(required, client_capability_names[cap], json_object_new_object());
                json_object_object_add(data, "requiredCapabilities", required);
                snprintf(why, sizeof why, "Missing required client capability: server '%s' asks for '%s', which this client "
                         "did not declare", rt->server->config->name, client_capability_names[cap]);
                client_reply_error(rt->client, rt->client_id, MCP_ERROR_MISSING_CAPABILITY, why, data);
                return true;
        }
        return false;
}

/* ---- toward a modern client: passed on, the server's state sealed ---- */

static enum mrtr_server_take pass_on(struct route *rt, json_object *result) {
        struct client *c = rt->client;
        struct daemon *d = c->daemon;
        struct mrtr_claims claims = { .server = rt->server->config->name,
                                      .server_state = string_member(result, "requestState") };
        json_object *requests = NULL;
        _cleanup_free_ char *sealed = NULL;

        json_object_object_get_ex(result, "inputRequests", &requests);
        if (requests && refuse_missing(rt, requests, rt->client_caps))
                return MRTR_SERVER_FAILED;
        mrtr_principal(c, claims.principal, sizeof claims.principal);
        memcpy(claims.request, rt->digest, sizeof claims.request);
        claims.expires = realtime_usec() / 1000000 + (uint64_t)(daemon_config(d)->mrtr_timeout + 0.999);
        sealed = mrtr_seal(&daemon_mrtr(d)->key, &claims);
        if (!sealed) {
                reply_failure(rt, "mcpvisor could not seal its state");
                return MRTR_SERVER_FAILED;
        }
        /* Always a state of ours, even when the server gave none: the retry is then checked
         * too (principal, request, expiry) before it reaches the server. */
        client_send(c, jsonrpc_result(rt->client_id, jsonrpc_copy_with(result, "requestState", json_object_new_string(sealed))));
        return MRTR_SERVER_ANSWERED;
}

void mrtr_server_retry(struct client *c, struct jsonrpc_msg *m, struct server *s, const struct access_ask *ask,
                       json_object *params, const struct mrtr_opened *opened) {
        json_object *sent;

        if (strcmp(opened->server, s->config->name) != 0) {
                json_object_put(params);
                client_log(c, LOG_INFO, "refused a retry of %s: its requestState is made for another server", m->method);
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: requestState made for another server", NULL);
                return;
        }
        if (opened->server_state) {
                sent = jsonrpc_copy_with(params, "requestState", json_object_new_string(opened->server_state));
        } else {
                sent = jsonrpc_copy_with(params, NULL, NULL);
                json_object_object_del(sent, "requestState");
        }
        json_object_put(params);
        if (!server_serving(s)) {
                json_object_put(sent);
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "the server is not ready; retry the request later", NULL);
                return;
        }
        router_forward(daemon_router(c->daemon), c, m, s, ask, sent);
}

/* ---- toward a legacy client: asked as server requests, then sent again ---- */

static void inputs_free(struct mrtr_inputs *in) {
        for (size_t i = 0; i < in->n_out; i++)
                free(in->out[i].key);
        json_object_put(in->responses);
        json_object_put(in->state);
        free(in);
}

void mrtr_inputs_end(struct mrtr_inputs *in, const char *reason) {
        in->route->inputs = NULL;
        while (in->n_out > 0) {
                in->n_out--;
                server_requests_withdraw(in->requests, in->out[in->n_out].id, reason);
                free(in->out[in->n_out].key);
        }
        inputs_free(in);
}

/* The answers gathered: the call goes to its server again with them. The round is freed;
 * 0, or the error with which the route cannot go on. */
static int send_again(struct mrtr_inputs *in) {
        struct route *rt = in->route;
        json_object *params;

        rt->inputs = NULL;
        if (!rt->sent) {
                inputs_free(in);
                return -EINVAL;
        }
        params = jsonrpc_copy_with(rt->sent, "inputResponses", json_object_get(in->responses));
        if (in->state)
                json_object_object_add(params, "requestState", json_object_get(in->state));
        else
                json_object_object_del(params, "requestState");
        inputs_free(in);
        return router_send_again(rt, params);
}

static void fail_sent_again(struct route *rt, int r) {
        char message[300];

        snprintf(message, sizeof message, "cannot send %s to server '%s' again with its client's input (%s)", rt->method,
                 rt->server->config->name, r == -ECONNRESET ? "its process ended meanwhile" : strerror(-r));
        router_fail_call(rt, JSONRPC_INTERNAL_ERROR, message, NULL);
}

/* The answer of the last request out: the call goes on, or fails. */
static void settled(struct mrtr_inputs *in) {
        struct route *rt = in->route;
        char message[300];
        int r;

        if (in->n_out > 0)
                return;
        if (in->gone) {
                snprintf(message, sizeof message, "server '%s' ended while its client was asked for the input %s needs",
                         rt->server->config->name, rt->method);
                router_fail_call(rt, JSONRPC_INTERNAL_ERROR, message, NULL);
                return;
        }
        r = send_again(in);
        if (r < 0)
                fail_sent_again(rt, r);
}

/* The key of request id, taken out of the round (the caller frees it); NULL: none. */
static char *take_out(struct mrtr_inputs *in, int64_t id) {
        for (size_t i = 0; i < in->n_out; i++)
                if (in->out[i].id == id) {
                        char *key = in->out[i].key;

                        in->out[i] = in->out[--in->n_out];
                        return key;
                }
        return NULL;
}

void mrtr_inputs_answered(struct mrtr_inputs *in, int64_t id, const struct jsonrpc_msg *m, bool allowed) {
        _cleanup_free_ char *key = take_out(in, id);
        struct route *rt = in->route;
        char message[400];
        json_object *v;

        if (!key)
                return;
        if (!allowed || m->kind == JSONRPC_INVALID || m->error) {
                const char *said = m->error ? string_member(m->error, "message") : NULL;

                json_object_object_get_ex(m->error, "code", &v);
                if (!allowed)
                        snprintf(message, sizeof message, "the client may no longer hear from server '%s'", rt->server->config->name);
                else
                        snprintf(message, sizeof message, "the client answered server '%s''s input request with %s%s%.200s",
                                 rt->server->config->name, m->error ? "an error" : "an invalid response",
                                 said ? ": " : "", said ? said : "");
                router_fail_call(rt, JSONRPC_INTERNAL_ERROR, message, NULL);
                return;
        }
        json_object_object_add(in->responses, key, json_object_get(m->result));
        settled(in);
}

void mrtr_inputs_request_gone(struct mrtr_inputs *in, int64_t id) {
        free(take_out(in, id));
        in->gone = true;
        settled(in);
}

/* The round's requests out to the client, or answered by the daemon; false when the call
 * was failed (the round freed with it). */
static bool ask_all(struct mrtr_inputs *in, json_object *requests) {
        struct route *rt = in->route;

        json_object_object_foreach(requests, key, ask) {
                int cap = capability_of(string_member(ask, "method"));
                json_object *params = NULL;
                int64_t id;

                if (answered_by_daemon(rt->server, cap)) {
                        json_object_object_add(in->responses, key, roots_result(&rt->server->config->roots));
                        continue;
                }
                json_object_object_get_ex(ask, "params", &params);
                id = server_requests_ask(in->requests, rt->server, rt->client, rt->client_id, string_member(ask, "method"),
                                         params, in);
                if (id >= 0 && !(in->out[in->n_out].key = strdup(key)))
                        server_requests_withdraw(in->requests, id, "mcpvisor is out of memory");
                if (id < 0 || !in->out[in->n_out].key)
                        return false;
                in->out[in->n_out++].id = id;
        }
        return true;
}

static enum mrtr_server_take bridge(struct route *rt, json_object *result) {
        struct client *c = rt->client;
        struct mrtr_inputs *in;
        json_object *requests = NULL, *state = NULL;
        char message[300];
        int r;

        json_object_object_get_ex(result, "inputRequests", &requests);
        json_object_object_get_ex(result, "requestState", &state);
        if (++rt->input_rounds > MRTR_SERVER_ROUNDS_MAX) {
                snprintf(message, sizeof message, "it did so more than %d times in one call", MRTR_SERVER_ROUNDS_MAX);
                reply_failure(rt, message);
                return MRTR_SERVER_FAILED;
        }
        if (requests && refuse_missing(rt, requests, c->session.client_caps))
                return MRTR_SERVER_FAILED;
        in = calloc(1, sizeof *in);
        if (!in || !(in->responses = json_object_new_object())) {
                free(in);
                reply_failure(rt, "mcpvisor is out of memory");
                return MRTR_SERVER_FAILED;
        }
        *in = (struct mrtr_inputs){ .route = rt, .requests = daemon_server_requests(c->daemon), .responses = in->responses,
                                    .state = json_object_get(state) };
        rt->inputs = in;
        log_emit(daemon_logger(c->daemon), LOG_DEBUG, &(struct log_subject){ .server = rt->server->config->name, .client = c->id },
                 "%s answered input_required (round %u): asking the client", rt->method, rt->input_rounds);
        if (requests && !ask_all(in, requests)) {
                mrtr_inputs_end(in, "mcpvisor is out of memory");
                reply_failure(rt, "mcpvisor is out of memory");
                return MRTR_SERVER_FAILED;
        }
        if (in->n_out > 0)
                return MRTR_SERVER_GOES_ON;
        /* Nothing to ask the client (only a requestState, or roots the daemon knows). */
        r = send_again(in);
        if (r >= 0)
                return MRTR_SERVER_GOES_ON;
        snprintf(message, sizeof message, "cannot send %s to server '%s' again (%s)", rt->method, rt->server->config->name,
                 strerror(-r));
        client_reply_error(c, rt->client_id, JSONRPC_INTERNAL_ERROR, message, NULL);
        return MRTR_SERVER_FAILED;
}

enum mrtr_server_take mrtr_server_result(struct route *rt, json_object *result) {
        const char *type = string_member(result, "resultType");

        if (!type || strcmp(type, "input_required") != 0)
                return MRTR_SERVER_PASS;
        if (!well_formed(result)) {
                reply_failure(rt, "its inputRequests or requestState are not what the specification defines");
                return MRTR_SERVER_FAILED;
        }
        return session_stateless(&rt->client->session) ? pass_on(rt, result) : bridge(rt, result);
}
