/* resources/unsubscribe: ends this client's subscription to the URI, if it holds one (the
 * last one ends it at the server); answered alike either way. */
#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "methods.h"
#include "subscriptions.h"

static void unsubscribe(struct client *c, struct jsonrpc_msg *m) {
        const char *uri = method_string_param(c, m, "uri");

        if (!uri)
                return;
        subscriptions_remove(daemon_subscriptions(c->daemon), c, uri);
        client_reply_result(c, m->id, json_object_new_object());
}

const struct method method_resources_unsubscribe =
        MCP_METHOD("resources/unsubscribe", METHOD_ERA_INITIALIZE, METHOD_REACH_ITEM, unsubscribe);
