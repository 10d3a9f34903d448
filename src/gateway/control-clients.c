/* "clients" on the control socket: who is connected to the MCP socket, for mcpvisorctl
 * clients. A row per MCP connection not yet closed: its principal as taken at accept, the
 * name and version its initialize gave (shown, never trusted: session.h), what it has in
 * flight and has sent so far, since when, and when it last sent anything. The facts only;
 * mcpvisorctl renders them, with the profile it chose (null: none). */
#include <stdio.h>
#include <time.h>

#include "client-access.h"
#include "client.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "methods.h"
#include "time-util.h"

static json_object *groups_array(const struct principal *p) {
        json_object *a = json_object_new_array_ext((int)p->n_groups);

        for (size_t i = 0; i < p->n_groups; i++)
                json_object_array_add(a, json_object_new_int64(p->groups[i]));
        return a;
}

/* Seconds, to the millisecond, as control-status.c writes them. */
static json_object *seconds(uint64_t usec) {
        double s = (double)(usec / 1000) / 1000.0;
        char text[32];

        snprintf(text, sizeof text, "%.3f", s);
        return json_object_new_double_s(s, text);
}

/* connected_at is monotonic: the wall clock's now, less the time since. */
static json_object *wall_clock_of(uint64_t then, uint64_t now) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return json_object_new_int64((int64_t)ts.tv_sec - (int64_t)((now - then) / USEC_PER_SEC));
}

static json_object *client_row(const struct client *c, uint64_t now) {
        const struct principal *p = client_principal(c);
        json_object *row = json_object_new_object();

        json_object_object_add(row, "id", json_object_new_int64((int64_t)c->id));
        json_object_object_add(row, "uid", json_object_new_int64(p->uid));
        json_object_object_add(row, "user", p->user ? jsonrpc_text(p->user) : NULL);
        json_object_object_add(row, "gid", json_object_new_int64(p->gid));
        json_object_object_add(row, "groups", groups_array(p));
        json_object_object_add(row, "pid", p->pid > 0 ? json_object_new_int(p->pid) : NULL);
        json_object_object_add(row, "command", p->comm[0] ? jsonrpc_text(p->comm) : NULL);
        json_object_object_add(row, "name", client_name(c) ? json_object_new_string(client_name(c)) : NULL);
        json_object_object_add(row, "version", client_version(c) ? json_object_new_string(client_version(c)) : NULL);
        /* Its era ("legacy": a session opened with initialize, "modern": each request names
         * its version) and protocol version; both null before its first request says. */
        json_object_object_add(row, "era",
                               session_era_name(&c->session) ? json_object_new_string(session_era_name(&c->session)) : NULL);
        json_object_object_add(row, "protocolVersion", c->session.protocol_version
                                                               ? json_object_new_string(c->session.protocol_version)
                                                               : NULL);
        json_object_object_add(row, "profile",
                               client_access_profile(c) ? jsonrpc_text(client_access_profile(c)) : NULL);
        json_object_object_add(row, "inFlight", json_object_new_int64(client_in_flight(c)));
        json_object_object_add(row, "calls", json_object_new_int64((int64_t)client_requests_held(c)));
        json_object_object_add(row, "connectedAt", wall_clock_of(c->connected_at, now));
        json_object_object_add(row, "connected", seconds(now - c->connected_at));
        json_object_object_add(row, "lastActivityAt", wall_clock_of(c->active_at, now));
        json_object_object_add(row, "lastActivity", seconds(now - c->active_at));
        c->ops->describe(c, row);
        return row;
}

static void clients(struct client *c, struct jsonrpc_msg *m) {
        const struct daemon *d = c->daemon;
        json_object *result = json_object_new_object(), *rows = json_object_new_array();
        uint64_t now = now_usec();
        const struct client *x;

        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++)
                TAILQ_FOREACH(x, &d->clients[st], entry)
                        if (x->role == LISTEN_MCP)
                                json_object_array_add(rows, client_row(x, now));
        json_object_object_add(result, "clients", rows);
        client_reply_result(c, m->id, result);
}

const struct method control_clients = CONTROL_METHOD("clients", clients);
