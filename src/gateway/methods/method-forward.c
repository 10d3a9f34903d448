/* The requests that go to a server: tools/call and prompts/get (routed by exposed name),
 * resources/read (by URI or template) and completion/complete (by its ref). A call that
 * names what no ready server offers waits while a server that may offer it is on its
 * first start (list-wait.h); one that cannot reach a server is answered with why and
 * where its logs are. */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "client-instances.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "list-wait.h"
#include "methods.h"
#include "mrtr.h"
#include "registry.h"
#include "router.h"
#include "signin-elicit.h"
#include "supervisor.h"

/* The server whose prefix an exposed name carries, for a server that is not listed now:
 * a shared one, or c's own instance. */
static struct server *server_by_prefix(struct client *c, const char *name) {
        struct daemon *d = c->daemon;
        const struct supervisor *sv = daemon_supervisor(d);
        const char *sep = daemon_registry(d)->separator;

        for (size_t i = 0; i < sv->n_servers; i++) {
                struct server *s = sv->servers[i];
                const char *prefix = server_prefix(s);
                size_t len = strlen(prefix);

                if (!s->removed && (s->owner.kind == OWNER_NONE || client_owns(c, s)) && len > 0 && strncmp(name, prefix, len) == 0 && strncmp(name + len, sep, strlen(sep)) == 0)
                        return s;
        }
        return NULL;
}

/* A server may offer name (NULL: a URI, which any server may) when the name carries its
 * prefix, or when it has none. */
static bool may_offer(const char *sep, const struct server *s, const char *name) {
        const char *prefix = server_prefix(s);
        size_t len = strlen(prefix);

        return !name || len == 0 || (strncmp(name, prefix, len) == 0 && strncmp(name + len, sep, strlen(sep)) == 0);
}

/* Some server on its first start, that c may see, may offer name: a request for it waits. */
static bool first_start_may_offer(struct client *c, const char *name) {
        const struct supervisor *sv = daemon_supervisor(c->daemon);
        const char *sep = daemon_registry(c->daemon)->separator;

        for (size_t i = 0; i < sv->n_servers; i++) {
                const struct server *s = sv->servers[i];

                if (!s->removed && list_wait_first_start(s) && may_offer(sep, s, name) && client_sees_server(c, s))
                        return true;
        }
        return false;
}

static void reply_not_serving(struct client *c, struct jsonrpc_msg *m, struct server *s) {
        _cleanup_free_ char *where = NULL, *message = NULL;
        json_object *data;
        char log[160];

        /* One waiting for a sign-in: the sign-in link itself, to a client that takes it. */
        if (signin_elicit_offer(c, m, s))
                return;
        where = server_describe(s);
        data = json_object_new_object();

        /* The cause whole: it is the daemon's own sentence. */
        if (asprintf(&message, "server '%s' is not ready (%s); its log: %s", s->config->name,
                     where ? where : server_state_name(s->state),
                     log_server_hint(daemon_logger(c->daemon), s->config->name, log, sizeof log)) < 0)
                message = NULL;
        json_object_object_add(data, "server", json_object_new_string(s->config->name));
        json_object_object_add(data, "state", json_object_new_string(server_state_name(s->state)));
        client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, message ? message : "server not ready", data);
}

static const char *string_param(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool name_waits(struct client *c, enum catalog_kind kind, const char *name) {
        enum access_verdict verdict;

        return name && !client_access_find(c, kind, name, &verdict) && first_start_may_offer(c, name);
}

static bool uri_waits(struct client *c, const char *uri) {
        enum access_verdict verdict;

        return uri && !client_access_find_uri(c, uri, &verdict) && first_start_may_offer(c, NULL);
}

static bool tools_call_waits(struct client *c, struct jsonrpc_msg *m) {
        return name_waits(c, CATALOG_TOOLS, string_param(m->params, "name"));
}

static bool prompts_get_waits(struct client *c, struct jsonrpc_msg *m) {
        return name_waits(c, CATALOG_PROMPTS, string_param(m->params, "name"));
}

static bool resources_read_waits(struct client *c, struct jsonrpc_msg *m) {
        return uri_waits(c, string_param(m->params, "uri"));
}

static bool completion_waits(struct client *c, struct jsonrpc_msg *m) {
        json_object *ref;
        const char *type;

        if (!json_object_object_get_ex(m->params, "ref", &ref) || !(type = string_param(ref, "type")))
                return false;
        if (strcmp(type, "ref/prompt") == 0)
                return name_waits(c, CATALOG_PROMPTS, string_param(ref, "name"));
        return strcmp(type, "ref/resource") == 0 && uri_waits(c, string_param(ref, "uri"));
}

void method_send_to(struct client *c, struct jsonrpc_msg *m, struct server *s, const struct access_ask *ask,
                    json_object *params) {
        if (session_stateless(&c->session) && json_object_object_get_ex(m->params, "requestState", NULL)) {
                if (!mrtr_state_is_own(daemon_mrtr(c->daemon), c, m, MRTR_ROUND_SIGNIN)) {
                        /* The retry of a call that answered input_required (mrtr.h). */
                        mrtr_retry(daemon_mrtr(c->daemon), c, m, s, ask, params);
                        return;
                }
                /* The retry of a call answered with the sign-in link: the call again, as it
                 * was first asked. */
                json_object *copy = jsonrpc_copy_with(params, NULL, NULL);

                json_object_put(params);
                params = copy;
                json_object_object_del(params, "requestState");
                json_object_object_del(params, "inputResponses");
        }
        if (!server_serving(s)) {
                /* Its state is told only to whom the request would have been let through. */
                json_object_put(params);
                if (client_access_pass(c, s, m, ask))
                        reply_not_serving(c, m, s);
                return;
        }
        router_forward(daemon_router(c->daemon), c, m, s, ask, params);
}

static void send_item(struct client *c, struct jsonrpc_msg *m, const struct registry_entry *e, enum catalog_kind kind,
                      const char *key, json_object *params) {
        method_send_to(c, m, e->server, &(struct access_ask){ .about = ACCESS_ABOUT_ITEM, .kind = kind, .key = key }, params);
}

/* tools/call and prompts/get: the exposed name is swapped for the server's own. */
static void call_by_name(struct client *c, struct jsonrpc_msg *m, enum catalog_kind kind, const char *what,
                         list_wait_handler *handle, list_wait_check *waits) {
        const struct registry_entry *e;
        enum access_verdict verdict;
        struct server *s;
        const char *name;
        json_object *params;
        char message[300];

        name = method_string_param(c, m, "name");
        if (!name)
                return;
        e = client_access_find(c, kind, name, &verdict);
        if (!e) {
                if (list_waiters_hold(c, m, handle, waits, -1))
                        return;
                /* A server the client may not see is answered as one that does not exist. */
                s = server_by_prefix(c, name);
                if (s && !server_serving(s) && client_sees_server(c, s)) {
                        reply_not_serving(c, m, s);
                        return;
                }
                if (client_instances_refusal(c, name)) {
                        client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, client_instances_refusal(c, name), NULL);
                        return;
                }
                snprintf(message, sizeof message, "Unknown %s: %.200s", what, name);
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
                return;
        }
        if (verdict == ACCESS_DENY) {
                client_access_deny(c, m->id, m->method, JSONRPC_INVALID_PARAMS, what, name, e->server->config->name);
                return;
        }
        params = jsonrpc_copy_with(m->params, "name", json_object_new_string(e->name));
        send_item(c, m, e, kind, name, params);
}

static void tools_call(struct client *c, struct jsonrpc_msg *m) {
        call_by_name(c, m, CATALOG_TOOLS, "tool", tools_call, tools_call_waits);
}

static void prompts_get(struct client *c, struct jsonrpc_msg *m) {
        call_by_name(c, m, CATALOG_PROMPTS, "prompt", prompts_get, prompts_get_waits);
}

static void reply_no_resource(struct client *c, struct jsonrpc_msg *m, const char *uri) {
        json_object *data = json_object_new_object();

        json_object_object_add(data, "uri", json_object_new_string(uri));
        client_reply_error(c, m->id, client_access_resource_not_found(c),
                           "Resource not found: no ready server lists it or a template that matches it", data);
}

static void resources_read(struct client *c, struct jsonrpc_msg *m);

/* The entry that may serve uri to c, or NULL when c has been answered (or it waits). */
static const struct registry_entry *entry_of_uri(struct client *c, struct jsonrpc_msg *m, const char *uri) {
        enum access_verdict verdict;
        const struct registry_entry *e = client_access_find_uri(c, uri, &verdict);

        if (!e) {
                if (!list_waiters_hold(c, m, resources_read, resources_read_waits, -1))
                        reply_no_resource(c, m, uri);
                return NULL;
        }
        if (verdict == ACCESS_DENY) {
                client_access_deny(c, m->id, m->method, client_access_resource_not_found(c), "resource", uri,
                                   e->server->config->name);
                return NULL;
        }
        return e;
}

static void resources_read(struct client *c, struct jsonrpc_msg *m) {
        const struct registry_entry *e;
        const char *uri;

        uri = method_string_param(c, m, "uri");
        if (!uri)
                return;
        e = entry_of_uri(c, m, uri);
        if (e)
                send_item(c, m, e, CATALOG_RESOURCES, uri, json_object_get(m->params));
}

/* completion/complete: a prompt ref by its exposed name (renamed on the way), a resource
 * ref by its template or URI. */
static void completion_complete(struct client *c, struct jsonrpc_msg *m) {
        const struct registry_entry *e = NULL;
        enum access_verdict verdict = ACCESS_NOT_FOUND;
        json_object *ref, *params, *newref;
        const char *type, *key;

        if (!method_params_object(c, m, false))
                return;
        if (!json_object_object_get_ex(m->params, "ref", &ref) || !(type = string_param(ref, "type")) ||
            !(key = string_param(ref, strcmp(type, "ref/prompt") == 0 ? "name" : "uri"))) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"ref\" needs {\"type\": \"ref/prompt\", \"name\"} or {\"type\": \"ref/resource\", \"uri\"}",
                                   NULL);
                return;
        }
        if (strcmp(type, "ref/prompt") == 0)
                e = client_access_find(c, CATALOG_PROMPTS, key, &verdict);
        else if (strcmp(type, "ref/resource") == 0 && (e = client_access_find_uri(c, key, &verdict)) &&
                 verdict == ACCESS_ALLOW) {
                send_item(c, m, e, CATALOG_RESOURCES, key, json_object_get(m->params));
                return;
        }
        if (e && verdict == ACCESS_DENY) {
                client_access_deny(c, m->id, m->method, JSONRPC_INVALID_PARAMS, strcmp(type, "ref/prompt") == 0 ? "prompt" : "resource",
                                   key, e->server->config->name);
                return;
        }
        if (!e && list_waiters_hold(c, m, completion_complete, completion_waits, -1))
                return;
        if (!e) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: no ready server has that prompt or resource", NULL);
                return;
        }
        newref = jsonrpc_copy_with(ref, "name", json_object_new_string(e->name));
        params = jsonrpc_copy_with(m->params, "ref", newref);
        send_item(c, m, e, CATALOG_PROMPTS, key, params);
}

const struct method method_tools_call =
        MCP_METHOD("tools/call", METHOD_ERAS_ALL, METHOD_REACH_ITEM, tools_call);
const struct method method_prompts_get =
        MCP_METHOD("prompts/get", METHOD_ERAS_ALL, METHOD_REACH_ITEM, prompts_get);
const struct method method_resources_read =
        MCP_METHOD("resources/read", METHOD_ERAS_ALL, METHOD_REACH_ITEM, resources_read);
const struct method method_completion_complete =
        MCP_METHOD("completion/complete", METHOD_ERAS_ALL, METHOD_REACH_ITEM, completion_complete);
