/* "status" on the control socket: the daemon and a row per server, for mcpvisorctl
 * status. Servers a reload removed are listed while they stop ("removed": true). */
#include <stdio.h>
#include <unistd.h>

#include "client.h"
#include "daemon.h"
#include "instance.h"
#include "jsonrpc.h"
#include "methods.h"
#include "time-util.h"
#include "version.h"

/* Seconds, to the millisecond: json-c would print 17 significant digits. */
static json_object *seconds_since(uint64_t then, uint64_t now) {
        double seconds = (double)((now - then) / 1000) / 1000.0;
        char text[32];

        snprintf(text, sizeof text, "%.3f", seconds);
        return json_object_new_double_s(seconds, text);
}

static json_object *server_row(const struct server *s, uint64_t now) {
        json_object *row = json_object_new_object();
        const struct instance *in = s->run;
        char end[128];

        json_object_object_add(row, "name", json_object_new_string(s->config->name));
        json_object_object_add(row, "state", json_object_new_string(server_state_name(s->state)));
        json_object_object_add(row, "disabled", json_object_new_boolean(s->config->disabled));
        if (s->removed)
                json_object_object_add(row, "removed", json_object_new_boolean(true));
        json_object_object_add(row, "pid", in ? json_object_new_int(in->proc.pid) : NULL);
        json_object_object_add(row, "uptime", in ? seconds_since(in->started_at, now) : NULL);
        json_object_object_add(row, "since", seconds_since(s->state_since, now));
        json_object_object_add(row, "restarts", json_object_new_int64(s->starts > 0 ? s->starts - 1 : 0));
        json_object_object_add(row, "lastExit",
                               s->last_exit.code ? jsonrpc_text(server_exit_text(&s->last_exit, end, sizeof end)) : NULL);
        json_object_object_add(row, "cause", jsonrpc_text(server_state_cause(s)));
        json_object_object_add(row, "tools", json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_TOOLS)));
        json_object_object_add(row, "prompts", json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_PROMPTS)));
        json_object_object_add(row, "resources",
                               json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_RESOURCES)));
        json_object_object_add(row, "templates",
                               json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_TEMPLATES)));
        json_object_object_add(row, "inFlight", json_object_new_int64(s->in_flight));
        return row;
}

static json_object *daemon_row(const struct daemon *d, uint64_t now) {
        json_object *row = json_object_new_object();
        unsigned mcp = 0;
        const struct client *c;

        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++)
                TAILQ_FOREACH(c, &d->clients[st], entry)
                        mcp += c->role == LISTEN_MCP;
        json_object_object_add(row, "version", json_object_new_string(MCPVISOR_VERSION));
        json_object_object_add(row, "pid", json_object_new_int(getpid()));
        json_object_object_add(row, "uptime", seconds_since(d->started_at, now));
        json_object_object_add(row, "clients", json_object_new_int64(mcp));
        json_object_object_add(row, "config", json_object_new_string(d->source.path));
        return row;
}

static void status(struct client *c, struct jsonrpc_msg *m) {
        const struct daemon *d = c->daemon;
        json_object *result = json_object_new_object(), *servers = json_object_new_array();
        uint64_t now = now_usec();

        for (size_t i = 0; i < d->supervisor.n_servers; i++)
                json_object_array_add(servers, server_row(d->supervisor.servers[i], now));
        json_object_object_add(result, "daemon", daemon_row(d, now));
        json_object_object_add(result, "servers", servers);
        client_reply_result(c, m->id, result);
}

const struct method control_status = {
        .name = "status",
        .flags = METHOD_CONTROL | METHOD_BEFORE_INIT,
        .handle = status,
};
