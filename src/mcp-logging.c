/* MCP logging; see mcp-logging.h. */
#include "mcp-logging.h"

#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "child.h"
#include "client.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "log.h"
#include "methods.h"

static const char *const levels[] = {
        "emergency", "alert", "critical", "error", "warning", "notice", "info", "debug",
};

int mcp_level_from_string(const char *level) {
        for (int i = 0; level && i < (int)ARRAY_SIZE(levels); i++)
                if (strcmp(levels[i], level) == 0)
                        return i;
        return -1;
}

const char *mcp_level_to_string(int level) {
        return level >= 0 && level < (int)ARRAY_SIZE(levels) ? levels[level] : "info";
}

static int client_level(const struct client *c) {
        return c->session.log_level >= 0 ? c->session.log_level : MCP_LOGGING_DEFAULT_LEVEL;
}

void mcp_levels_add(struct mcp_levels *l, int level) {
        l->clients[level]++;
}

void mcp_levels_remove(struct mcp_levels *l, int level) {
        l->clients[level]--;
}

int mcp_levels_most_verbose(const struct mcp_levels *l) {
        for (int level = MCP_LEVEL_COUNT - 1; level >= 0; level--)
                if (l->clients[level] > 0)
                        return level;
        return -1;
}

/* The clients whose level counts: MCP clients from notifications/initialized on, until
 * they are freed (a phase never goes back). */
static bool counted(const struct client *c) {
        return c->role == LISTEN_MCP && session_operating(&c->session);
}

static void set_server_level(struct server *s, int level) {
        json_object *params;

        if (!server_serving(s) || !catalog_capability(&s->catalog, "logging"))
                return;
        params = json_object_new_object();
        json_object_object_add(params, "level", json_object_new_string(mcp_level_to_string(level)));
        /* No answer awaited: a server that refuses keeps its own level. */
        (void)child_request(server_child(s), "logging/setLevel", params, 0, NULL, NULL);
}

void mcp_logging_server_ready(struct daemon *d, struct server *s) {
        if (d->server_log_level >= 0)
                set_server_level(s, d->server_log_level);
}

static void levels_changed(struct daemon *d) {
        int level = mcp_levels_most_verbose(&d->client_levels);

        if (level < 0 || level == d->server_log_level)
                return;
        d->server_log_level = level;
        for (size_t i = 0; i < d->supervisor.n_servers; i++)
                set_server_level(d->supervisor.servers[i], level);
}

void mcp_logging_client_operating(struct client *c) {
        mcp_levels_add(&c->daemon->client_levels, client_level(c));
        levels_changed(c->daemon);
}

void mcp_logging_client_gone(struct client *c) {
        if (!counted(c))
                return;
        mcp_levels_remove(&c->daemon->client_levels, client_level(c));
        levels_changed(c->daemon);
}

static void set_level(struct client *c, struct jsonrpc_msg *m) {
        json_object *v;
        int level;

        if (!method_params_object(c, m, false))
                return;
        if (!json_object_object_get_ex(m->params, "level", &v) || !json_object_is_type(v, json_type_string) ||
            (level = mcp_level_from_string(json_object_get_string(v))) < 0) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"level\" must be one of debug, info, notice, warning, error, critical, alert, emergency",
                                   NULL);
                return;
        }
        if (counted(c))
                mcp_levels_remove(&c->daemon->client_levels, client_level(c));
        c->session.log_level = level;
        if (counted(c))
                mcp_levels_add(&c->daemon->client_levels, level);
        client_reply_result(c, m->id, json_object_new_object());
        levels_changed(c->daemon);
}

const struct method method_logging_set_level = {
        .name = "logging/setLevel", .flags = METHOD_MCP, .handle = set_level,
};

struct log_message {
        int level;
        const struct server *server;
};

/* A message goes to clients that asked for its level and may hear from its server. */
static bool level_admits(struct client *c, void *arg) {
        const struct log_message *lm = arg;

        return lm->level <= client_level(c) && client_sees_server(c, lm->server);
}

/* A server's log message while the client has exactly one call there is taken as that
 * call's, by the rule its requests follow (server-request.h): over HTTP it then travels
 * with the call's answer, before it, instead of on a stream of its own. */
static json_object *during_call(struct client *c, void *arg) {
        const struct log_message *lm = arg;

        return router_sole_call(c, lm->server);
}

void mcp_logging_forward(struct daemon *d, struct server *s, struct jsonrpc_msg *m) {
        json_object *v, *logger = NULL, *data = NULL, *params;
        const char *name = s->config->name;
        char who[256];
        int level;

        if (!json_object_is_type(m->params, json_type_object) || !json_object_object_get_ex(m->params, "level", &v) ||
            (level = mcp_level_from_string(json_object_get_string(v))) < 0)
                return;
        json_object_object_get_ex(m->params, "logger", &logger);
        json_object_object_get_ex(m->params, "data", &data);
        snprintf(who, sizeof who, "%s%s%s", name, json_object_is_type(logger, json_type_string) ? "/" : "",
                 json_object_is_type(logger, json_type_string) ? json_object_get_string(logger) : "");
        log_server_line(d->supervisor.log, level, name,
                        json_object_is_type(data, json_type_string) ? json_object_get_string(data)
                                                                     : json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN));
        params = jsonrpc_copy_with(m->params, "logger", jsonrpc_text(who)); /* who may be cut mid-character */
        daemon_broadcast_related(d, "notifications/message", params, level_admits, during_call,
                                 &(struct log_message){ .level = level, .server = s });
}
