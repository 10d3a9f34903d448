/* Requests and notifications the daemon does not know (newer protocol features, or a
 * server's own extensions). They pass through unchanged, ids and progress tokens mapped as
 * for any call, where their route is clear: when exactly one server is configured, and the
 * access rules on that server as a whole let the client use it (client_access_pass()). With
 * several, nothing in an unknown message says which server it is for, so a request gets
 * "Method not found" and a notification is ignored, as JSON-RPC asks. */
#include <stdio.h>

#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "methods.h"
#include "supervisor.h"

/* The one enabled shared server, if exactly one is configured (and none is run as instances). */
static struct server *sole_server(const struct supervisor *sv) {
        struct server *found = NULL;

        if (sv->n_pools > 0)
                return NULL;
        for (size_t i = 0; i < sv->n_servers; i++) {
                if (sv->servers[i]->config->disabled || sv->servers[i]->removed)
                        continue;
                if (found)
                        return NULL;
                found = sv->servers[i];
        }
        return found;
}

void method_passthrough_request(struct client *c, struct jsonrpc_msg *m) {
        struct server *s = sole_server(daemon_supervisor(c->daemon));
        char msg[256];

        if (!s) {
                snprintf(msg, sizeof msg, "Method not found: %.200s", m->method);
                client_reply_error(c, m->id, JSONRPC_METHOD_NOT_FOUND, msg, NULL);
                return;
        }
        method_send_to(c, m, s, &(struct access_ask){ .about = ACCESS_ABOUT_SERVER }, json_object_get(m->params));
}

void method_passthrough_notification(struct client *c, struct jsonrpc_msg *m) {
        struct server *s = session_operating(&c->session) ? sole_server(daemon_supervisor(c->daemon)) : NULL;

        if (!s) {
                client_log(c, LOG_DEBUG, "ignoring notification %s (no single server to pass it to)", m->method);
                return;
        }
        client_access_notify(c, s, m);
}
