/* "reload" on the control socket: answered once the reload is done (reload.c calls
 * control_reload_answer() when the read that follows the request has been applied), so
 * that ExecReload=mcpvisorctl reload reports (and fails on) an invalid configuration. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "jsonrpc.h"
#include "methods.h"
#include "reload.h"

#define CONTROL_RELOAD_FAILED (-32000)

static size_t errors_in(json_object *problems) {
        size_t n = 0;

        for (size_t i = 0; i < json_object_array_length(problems); i++) {
                json_object *severity;
                if (json_object_object_get_ex(json_object_array_get_idx(problems, i), "severity", &severity) &&
                    strcmp(json_object_get_string(severity), "error") == 0)
                        n++;
        }
        return n;
}

void control_reload_answer(struct client *c, json_object *id, int r, json_object *outcome) {
        json_object *problems;
        char message[256];

        if (r >= 0) {
                client_reply_result(c, id, outcome);
                return;
        }
        if (outcome && json_object_object_get_ex(outcome, "problems", &problems))
                snprintf(message, sizeof message, "configuration not reloaded: %zu error%s; nothing changed",
                         errors_in(problems), errors_in(problems) == 1 ? "" : "s");
        else if (r == -ESHUTDOWN)
                snprintf(message, sizeof message, "configuration not reloaded: mcpvisord is stopping");
        else
                snprintf(message, sizeof message, "configuration not reloaded: %s; nothing changed", strerror(-r));
        client_reply_error(c, id, CONTROL_RELOAD_FAILED, message, outcome);
}

static void reload(struct client *c, struct jsonrpc_msg *m) {
        char why[64];

        snprintf(why, sizeof why, "reload by uid %u", (unsigned)client_principal(c)->uid);
        daemon_reload(c->daemon, why, c, m->id);
}

const struct method control_reload = CONTROL_METHOD("reload", reload);
