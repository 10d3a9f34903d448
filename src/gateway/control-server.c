/* "start", "stop" and "restart" NAME on the control socket: an operator's command fed to
 * the server's state machine. The answer says what state it went to at once; mcpvisorctl
 * follows the rest with "status". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "macro.h"
#include "methods.h"
#include "supervisor.h"

/* The error for a control command naming no configured server: the names it could use. */
static void reply_unknown_server(struct client *c, struct jsonrpc_msg *m, const char *name) {
        const struct supervisor *sv = daemon_supervisor(c->daemon);
        _cleanup_free_ char *message = NULL;
        size_t size = 0, listed = 0;
        FILE *f = open_memstream(&message, &size);

        if (!f) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "unknown server", NULL);
                return;
        }
        fprintf(f, "unknown server '%.64s'; configured:", name);
        for (size_t i = 0; i < sv->n_servers; i++)
                if (!sv->servers[i]->removed)
                        fprintf(f, "%s %s", listed++ ? "," : "", sv->servers[i]->config->name);
        if (listed == 0)
                fputs(" none", f);
        if (fclose(f) != 0) {
                free(message);
                message = NULL;
        }
        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message ? message : "unknown server", NULL);
}

struct server *control_named_server(struct client *c, struct jsonrpc_msg *m) {
        json_object *v;
        struct server *s;

        if (!method_params_object(c, m, false))
                return NULL;
        if (!json_object_object_get_ex(m->params, "name", &v) || !json_object_is_type(v, json_type_string)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"name\" (a string) is required", NULL);
                return NULL;
        }
        s = supervisor_find(daemon_supervisor(c->daemon), json_object_get_string(v));
        if (!s)
                reply_unknown_server(c, m, json_object_get_string(v));
        return s;
}

static void command(struct client *c, struct jsonrpc_msg *m, enum server_event ev, const char *verb) {
        json_object *result;
        struct server *s = control_named_server(c, m);
        char detail[96];

        if (!s)
                return;
        snprintf(detail, sizeof detail, "%s by uid %u (mcpvisorctl)", verb, (unsigned)client_principal(c)->uid);
        server_handle(s, ev, detail);
        result = json_object_new_object();
        json_object_object_add(result, "name", json_object_new_string(s->config->name));
        json_object_object_add(result, "state", json_object_new_string(server_state_name(s->state)));
        client_reply_result(c, m->id, result);
}

static void start(struct client *c, struct jsonrpc_msg *m) {
        command(c, m, SERVER_EV_START, "started");
}

static void stop(struct client *c, struct jsonrpc_msg *m) {
        command(c, m, SERVER_EV_STOP, "stopped");
}

static void restart(struct client *c, struct jsonrpc_msg *m) {
        command(c, m, SERVER_EV_RESTART, "restarted");
}

const struct method control_start = CONTROL_METHOD("start", start);
const struct method control_stop = CONTROL_METHOD("stop", stop);
const struct method control_restart = CONTROL_METHOD("restart", restart);
