/* notifications/cancelled from a client: the request reaches the server's process under
 * its child-side id, or ends the subscriptions/listen it names, and nothing is answered for
 * it. Unknown or finished ids are ignored,
 * as the spec allows. */
#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "sub-listen.h"
#include "methods.h"
#include "router.h"

static void cancelled(struct client *c, struct jsonrpc_msg *m) {
        json_object *id, *reason;

        if (!json_object_is_type(m->params, json_type_object) || !json_object_object_get_ex(m->params, "requestId", &id) ||
            !jsonrpc_id_valid(id))
                return;
        if (!json_object_object_get_ex(m->params, "reason", &reason) || !json_object_is_type(reason, json_type_string))
                reason = NULL;
        if (!sub_listen_cancel(c, id))
                router_cancel(daemon_router(c->daemon), c, id, reason ? json_object_get_string(reason) : NULL);
}

const struct method notification_cancelled = {
        .name = "notifications/cancelled",
        .flags = METHOD_MCP, .eras = METHOD_ERAS_ALL, .reach = METHOD_REACH_REQUEST,
        .handle = cancelled,
};
