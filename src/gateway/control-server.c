/* "start", "stop" and "restart" NAME on the control socket: an operator's command fed to
 * the server's state machine. The answer says what state it went to at once; mcpvisorctl
 * follows the rest with "status". */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "methods.h"

void control_reply_unknown_server(struct client *c, struct jsonrpc_msg *m, const char *name) {
        const struct supervisor *sv = &c->daemon->supervisor;
        char message[1024];
        size_t used;

        size_t listed = 0;

        used = (size_t)snprintf(message, sizeof message, "unknown server '%.64s'; configured:", name);
        for (size_t i = 0; i < sv->n_servers && used < sizeof message; i++)
                if (!sv->servers[i]->removed)
                        used += (size_t)snprintf(message + used, sizeof message - used, "%s %s", listed++ ? "," : "",
                                                 sv->servers[i]->config->name);
        if (listed == 0)
                snprintf(message + used, sizeof message - used, " none");
        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
}

static void command(struct client *c, struct jsonrpc_msg *m, enum server_event ev, const char *verb) {
        json_object *v, *result;
        struct server *s;
        char detail[96];

        if (!method_params_object(c, m, false))
                return;
        if (!json_object_object_get_ex(m->params, "name", &v) || !json_object_is_type(v, json_type_string)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"name\" (a string) is required", NULL);
                return;
        }
        s = supervisor_find(&c->daemon->supervisor, json_object_get_string(v));
        if (!s) {
                control_reply_unknown_server(c, m, json_object_get_string(v));
                return;
        }
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

const struct method control_start = {
        .name = "start",
        .flags = METHOD_CONTROL | METHOD_BEFORE_INIT,
        .eras = METHOD_ERAS_ALL,
        .reach = METHOD_REACH_DAEMON,
        .handle = start,
};
const struct method control_stop = {
        .name = "stop",
        .flags = METHOD_CONTROL | METHOD_BEFORE_INIT,
        .eras = METHOD_ERAS_ALL,
        .reach = METHOD_REACH_DAEMON,
        .handle = stop,
};
const struct method control_restart = {
        .name = "restart",
        .flags = METHOD_CONTROL | METHOD_BEFORE_INIT,
        .eras = METHOD_ERAS_ALL,
        .reach = METHOD_REACH_DAEMON,
        .handle = restart,
};
