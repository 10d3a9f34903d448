/* initialize and notifications/initialized: the MCP handshake toward clients; the first
 * request of a modern-era connection (2026-07-28), which opens it without one; and what
 * both eras' descriptions of the daemon share (server/discover answers with them too). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/printbuf.h>

#include "client.h"
#include "client-instances.h"
#include "config.h"
#include "daemon-handle.h"
#include "mcp-logging.h"
#include "jsonrpc.h"
#include "methods.h"
#include "pool.h"
#include "protocol.h"
#include "request-meta.h"
#include "supervisor.h"
#include "version.h"

/* The key of initialize's params' "_meta" that chooses a profile (access.h). */
#define PROFILE_META_KEY "mcpvisor/profile"

json_object *method_server_info(void) {
        json_object *info = json_object_new_object();

        json_object_object_add(info, "name", json_object_new_string("mcpvisor"));
        json_object_object_add(info, "title", json_object_new_string("mcpvisor"));
        json_object_object_add(info, "version", json_object_new_string(MCPVISOR_VERSION));
        return info;
}

static json_object *list_changed(void) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "listChanged", json_object_new_boolean(1));
        return o;
}

/* What the daemon answers itself or routes; servers come and go, so lists always may
 * change (a modern client hears of changes and resource updates through
 * subscriptions/listen). The same in both eras. */
json_object *method_server_capabilities(void) {
        json_object *caps = json_object_new_object();
        json_object *resources = list_changed();

        json_object_object_add(caps, "tools", list_changed());
        json_object_object_add(caps, "prompts", list_changed());
        json_object_object_add(resources, "subscribe", json_object_new_boolean(1));
        json_object_object_add(caps, "resources", resources);
        json_object_object_add(caps, "completions", json_object_new_object());
        json_object_object_add(caps, "logging", json_object_new_object());
        return caps;
}

static void add_instructions(struct printbuf *pb, const char *name, const char *text) {
        sprintbuf(pb, "%s## %s\n%s\n", printbuf_length(pb) ? "\n" : "", name, text);
}

/* The instructions of each ready server c may see, under its name, so a client knows whose
 * they are; of a server run as instances, the ones its instances gave (c has none of its
 * own yet: they start on its first list or call). */
json_object *method_instructions(struct client *c) {
        const struct supervisor *sv = daemon_supervisor(c->daemon);
        struct printbuf *pb = printbuf_new();
        json_object *v, *result = NULL;

        for (size_t i = 0; pb && i < sv->n_servers; i++) {
                const struct server *s = sv->servers[i];
                if (s->owner.kind != OWNER_NONE || !server_serving(s) ||
                    !json_object_object_get_ex(s->catalog.initialize, "instructions", &v) ||
                    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0 ||
                    !client_sees_server(c, s))
                        continue;
                add_instructions(pb, s->config->name, json_object_get_string(v));
        }
        for (size_t i = 0; pb && i < sv->n_pools; i++) {
                const char *text = pool_instructions(sv->pools[i]);

                if (text && *text && client_sees_pool(c, sv->pools[i]))
                        add_instructions(pb, pool_name(sv->pools[i]), text);
        }
        if (pb && printbuf_length(pb) > 0)
                result = json_object_new_string_len(pb->buf, printbuf_length(pb));
        if (pb)
                printbuf_free(pb);
        return result;
}

/* The params fields we rely on; anything else in them is kept as sent. */
static const char *check_params(json_object *params, json_object **ret_caps, json_object **ret_info) {
        json_object *version;

        if (!json_object_object_get_ex(params, "protocolVersion", &version) ||
            !json_object_is_type(version, json_type_string))
                return "Invalid params: initialize needs \"protocolVersion\" (a string)";
        if (json_object_object_get_ex(params, "capabilities", ret_caps) &&
            !json_object_is_type(*ret_caps, json_type_object))
                return "Invalid params: \"capabilities\" must be an object";
        if (json_object_object_get_ex(params, "clientInfo", ret_info) &&
            !json_object_is_type(*ret_info, json_type_object))
                return "Invalid params: \"clientInfo\" must be an object";
        return NULL;
}

/* The profile params' "_meta" chooses (NULL: none) in *ret; false if it is not a string. */
static bool profile_param(json_object *params, const char **ret) {
        json_object *meta, *v;

        *ret = NULL;
        if (!json_object_object_get_ex(params, "_meta", &meta) || !json_object_object_get_ex(meta, PROFILE_META_KEY, &v))
                return true;
        if (!json_object_is_type(v, json_type_string))
                return false;
        *ret = json_object_get_string(v);
        return true;
}

/* Sets c's profile; false when c was answered with why not. */
static bool choose_profile(struct client *c, struct jsonrpc_msg *m) {
        const struct access_policy *a = &daemon_config(c->daemon)->access;
        const char *profile;
        char message[1024];
        size_t used;
        int r;

        if (!profile_param(m->params, &profile)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"_meta\": {\"" PROFILE_META_KEY "\"} must be a string", NULL);
                return false;
        }
        r = client_access_choose(c, profile ? profile : c->access.asked); /* the client's own choice wins */
        if (r == -ENOENT) {
                used = (size_t)snprintf(message, sizeof message, "Invalid params: unknown profile '%.200s' (known:",
                                        profile ? profile : c->access.asked);
                for (size_t i = 0; i < a->n_profiles && used < sizeof message; i++)
                        used += (size_t)snprintf(message + used, sizeof message - used, " %s", a->profiles[i].name);
                if (used < sizeof message)
                        snprintf(message + used, sizeof message - used, "%s)", a->n_profiles ? "" : " none");
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
                return false;
        }
        if (r < 0) {
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
                return false;
        }
        return true;
}

static void initialize(struct client *c, struct jsonrpc_msg *m) {
        struct session *s = &c->session;
        json_object *caps = NULL, *info = NULL, *version, *result, *instr;
        const char *problem;

        if (!method_params_object(c, m, false))
                return;
        if (s->phase != SESSION_NEW) {
                client_reply_error(c, m->id, JSONRPC_INVALID_REQUEST,
                                   "Invalid Request: this session is already initialized", NULL);
                return;
        }
        problem = check_params(m->params, &caps, &info);
        if (problem) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, problem, NULL);
                return;
        }
        if (!choose_profile(c, m))
                return;
        json_object_object_get_ex(m->params, "protocolVersion", &version);
        (void)session_initialize(s, protocol_negotiate(json_object_get_string(version)), caps, info); /* new: checked above */

        client_log(c, LOG_INFO, "initialized by %s %s (protocol %s, asked for %s%s%s)",
                   s->client_name ?: "?", s->client_version ?: "?",
                   s->protocol_version, json_object_get_string(version), c->access.profile ? "; profile " : "",
                   c->access.profile ? c->access.profile : "");
        result = json_object_new_object();
        json_object_object_add(result, "protocolVersion", json_object_new_string(s->protocol_version));
        json_object_object_add(result, "capabilities", method_server_capabilities());
        json_object_object_add(result, "serverInfo", method_server_info());
        if ((instr = method_instructions(c)))
                json_object_object_add(result, "instructions", instr);
        client_reply_result(c, m->id, result);
}

bool method_open_stateless(struct client *c, struct jsonrpc_msg *m, const struct request_meta *meta) {
        struct session *s = &c->session;

        if (!choose_profile(c, m))
                return false;
        (void)session_begin_stateless(s, meta->version, meta->info); /* new: the caller's condition */
        client_log(c, client_life_priority(c), "serving a %s client %s %s without a session%s%s", s->protocol_version,
                   s->client_name ?: "?", s->client_version ?: "?", c->access.profile ? "; profile " : "",
                   c->access.profile ? c->access.profile : "");
        return true;
}

bool method_stateless_profile_kept(struct client *c, struct jsonrpc_msg *m) {
        const char *profile, *now = client_access_profile(c);
        char message[400];

        if (!profile_param(m->params, &profile)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"_meta\": {\"" PROFILE_META_KEY "\"} must be a string", NULL);
                return false;
        }
        if (!profile || (now && strcmp(profile, now) == 0))
                return true;
        snprintf(message, sizeof message,
                 "Invalid params: this connection is in %s%.150s%s (its first request's); a profile is chosen per connection",
                 now ? "profile '" : "no profile", now ? now : "", now ? "'" : "");
        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
        return false;
}

const struct method method_initialize = {
        .name = "initialize",
        .flags = METHOD_BEFORE_INIT | METHOD_MCP, .eras = METHOD_ERA_INITIALIZE, .reach = METHOD_REACH_DAEMON,
        .handle = initialize,
};

static void initialized(struct client *c, struct jsonrpc_msg *m) {
        if (!session_begin_operating(&c->session))
                return;
        mcp_logging_client_operating(c);
        list_changes_client_operating(c);
}

/* notifications/mcpvisor/profile {"profile": NAME}, before initialize: the profile that
 * initialize uses when its params do not choose one. mcpvisorctl connect --profile sends it
 * ahead of the client's bytes, so the bridge need not rewrite them. */
static void profile_hello(struct client *c, struct jsonrpc_msg *m) {
        json_object *v;
        char *copy;

        if (c->session.phase != SESSION_NEW || !json_object_object_get_ex(m->params, "profile", &v) ||
            !json_object_is_type(v, json_type_string)) {
                client_log(c, LOG_WARNING, "ignored %s: it needs {\"profile\": NAME} before initialize", m->method);
                return;
        }
        copy = strdup(json_object_get_string(v));
        if (!copy)
                return;
        free(c->access.asked);
        c->access.asked = copy;
}

const struct method notification_mcpvisor_profile = {
        .name = "notifications/mcpvisor/profile",
        .flags = METHOD_BEFORE_INIT | METHOD_MCP, .eras = METHOD_ERA_INITIALIZE, .reach = METHOD_REACH_DAEMON,
        .handle = profile_hello,
};

const struct method notification_initialized = {
        .name = "notifications/initialized",
        .flags = METHOD_MCP, .eras = METHOD_ERA_INITIALIZE, .reach = METHOD_REACH_DAEMON,
        .handle = initialized,
};
