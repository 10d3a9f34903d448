/* MCP logging; see mcp-logging.h. */
#include "mcp-logging.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "server-conn.h"
#include "client.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "log.h"
#include "time-util.h"

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

        if (!server_serving(s) || !catalog_capability(&s->catalog, "logging") || level == s->log_level_sent)
                return;
        s->log_level_sent = level;
        params = json_object_new_object();
        json_object_object_add(params, "level", json_object_new_string(mcp_level_to_string(level)));
        /* No answer awaited: a server that refuses keeps its own level. */
        (void)child_request(server_child(s), "logging/setLevel", params, 0, NULL, NULL);
}

void mcp_logging_changed(struct daemon *d) {
        d->log_levels_due = true;
}

/* The counted clients, most verbose first (a counting sort by level); *ret_n of them. */
static struct client **clients_by_level(struct daemon *d, size_t *ret_n) {
        struct mcp_levels at = { 0 };
        size_t n = 0, next[MCP_LEVEL_COUNT];
        struct client **by, *c;

        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++)
                TAILQ_FOREACH(c, &d->clients[st], entry)
                        if (counted(c)) {
                                mcp_levels_add(&at, client_level(c));
                                n++;
                        }
        by = malloc((n ? n : 1) * sizeof *by);
        if (!by)
                return NULL;
        for (int level = MCP_LEVEL_COUNT - 1, i = 0; level >= 0; level--) {
                next[level] = (size_t)i;
                i += (int)at.clients[level];
        }
        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++)
                TAILQ_FOREACH(c, &d->clients[st], entry)
                        if (counted(c))
                                by[next[client_level(c)]++] = c;
        *ret_n = n;
        return by;
}

/* What is asked of s: the most verbose level a client that may hear from it wants (the
 * first such client in by[]); with none, the default once s was asked for another, so
 * that a client gone no longer makes it verbose; -1: nothing to ask. */
static int wanted_level(struct client *const *by, size_t n, const struct server *s) {
        for (size_t i = 0; i < n; i++)
                if (client_sees_server(by[i], s))
                        return client_level(by[i]);
        return s->log_level_sent >= 0 ? MCP_LOGGING_DEFAULT_LEVEL : -1;
}

void mcp_logging_settle(struct daemon *d) {
        _cleanup_free_ struct client **by = NULL;
        size_t n = 0;

        if (!d->log_levels_due)
                return;
        d->log_levels_due = false;
        by = clients_by_level(d, &n);
        if (!by)
                return;
        for (size_t i = 0; i < d->supervisor.n_servers; i++) {
                struct server *s = d->supervisor.servers[i];
                int level = server_serving(s) ? wanted_level(by, n, s) : -1;

                if (level >= 0)
                        set_server_level(s, level);
        }
}

static void report_dropped(struct server *s, uint64_t dropped) {
        if (dropped > 0)
                server_log(s, LOG_WARNING, "server sent too many log messages: %" PRIu64 " not logged (limit %u per %llu s)",
                           dropped, MCP_LOGGING_RATE_BURST, MCP_LOGGING_RATE_INTERVAL_USEC / USEC_PER_SEC);
}

void mcp_logging_server_ready(struct daemon *d, struct server *s) {
        s->log_level_sent = -1; /* a new run: asked again */
        report_dropped(s, rate_limit_take_dropped(&s->log_messages));
        mcp_logging_changed(d);
}

void mcp_logging_client_operating(struct client *c) {
        mcp_logging_changed(c->daemon);
}

void mcp_logging_client_gone(struct client *c) {
        if (counted(c))
                mcp_logging_changed(c->daemon);
}

void mcp_logging_client_level(struct client *c, int level) {
        c->session.log_level = level;
        if (counted(c))
                mcp_logging_changed(c->daemon);
}

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
 * call's, by the rule its requests follow (upcall.h): over HTTP it then travels
 * with the call's answer, before it, instead of on a stream of its own. */
static json_object *during_call(struct client *c, void *arg) {
        const struct log_message *lm = arg;

        return router_sole_call(c, lm->server);
}

/* Whether a message at level is logged: one the log level drops costs nothing, the
 * others count against the server's rate limit. */
static bool admit(struct daemon *d, struct server *s, int level) {
        uint64_t told, now = now_usec();
        bool admitted;

        if (level > d->supervisor.log->max_priority)
                return false;
        if (s->log_messages.interval_usec == 0)
                rate_limit_init(&s->log_messages, MCP_LOGGING_RATE_INTERVAL_USEC, MCP_LOGGING_RATE_BURST, now);
        admitted = rate_limit_admit(&s->log_messages, now, &told);
        report_dropped(s, told);
        return admitted;
}

/* A modern client hears a server's log messages only as its request asked: while its one
 * call to s is in flight, when that call's _meta logLevel admits the message, on that
 * call's own stream (a server's level itself is what legacy sessions set). */
static void forward_to_modern_calls(struct daemon *d, const struct server *s, int level, json_object *params) {
        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++) {
                struct client *c, *next;

                for (c = TAILQ_FIRST(&d->clients[st]); c; c = next) {
                        const struct route *rt;

                        next = TAILQ_NEXT(c, entry);
                        if (!session_stateless(&c->session) || !(rt = router_sole_route(c, s)) || level > rt->log_level ||
                            !client_sees_server(c, s))
                                continue;
                        client_send_related(c, jsonrpc_notification("notifications/message", json_object_get(params)),
                                            rt->client_id);
                }
        }
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
        if (admit(d, s, level))
                log_server_line(d->supervisor.log, level, name,
                                json_object_is_type(data, json_type_string)
                                        ? json_object_get_string(data)
                                        : json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN));
        params = jsonrpc_copy_with(m->params, "logger", jsonrpc_text(who)); /* who may be cut mid-character */
        forward_to_modern_calls(d, s, level, params);
        daemon_broadcast_related(d, "notifications/message", params, level_admits, during_call,
                                 &(struct log_message){ .level = level, .server = s });
}
