/* "disconnect" {"id": N} on the control socket (mcpvisorctl disconnect ID): ends one MCP
 * client, whatever carries it. A socket client's connection closes; an HTTP session ends
 * (its next request is answered 404). Either leaves as every client does (JUSTFREE, then
 * freed by the daemon, which cancels its calls downstream and tells whatever holds
 * something of it), so an ended client holds nothing afterwards. Who may: anyone the
 * control socket admits, as for stop and restart. */
#include <inttypes.h>
#include <stdio.h>

#include "client.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "methods.h"

/* The MCP client with this id, not ended yet; NULL when none. */
static struct client *find_client(struct daemon *d, int64_t id) {
        struct client *x;

        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++)
                TAILQ_FOREACH(x, &d->clients[st], entry)
                        if (x->role == LISTEN_MCP && (int64_t)x->id == id)
                                return x;
        return NULL;
}

static void disconnect(struct client *c, struct jsonrpc_msg *m) {
        json_object *v, *result;
        struct client *x;
        char message[160];
        int64_t id;

        if (!method_params_object(c, m, false))
                return;
        if (!json_object_object_get_ex(m->params, "id", &v) || !json_object_is_type(v, json_type_int) ||
            (id = json_object_get_int64(v)) <= 0) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"id\" (a client's id, as mcpvisorctl clients shows it) is required", NULL);
                return;
        }
        x = find_client(c->daemon, id);
        if (!x) {
                snprintf(message, sizeof message, "no MCP client with id %" PRId64 " is connected (mcpvisorctl clients lists them)", id);
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
                return;
        }
        client_log(x, LOG_NOTICE, "disconnected by uid %u (mcpvisorctl disconnect)", (unsigned)client_principal(c)->uid);
        result = json_object_new_object();
        json_object_object_add(result, "id", json_object_new_int64(id));
        x->ops->describe(x, result);
        client_set_state(x, CLIENT_JUSTFREE);
        client_reply_result(c, m->id, result);
}

const struct method control_disconnect = CONTROL_METHOD("disconnect", disconnect);
