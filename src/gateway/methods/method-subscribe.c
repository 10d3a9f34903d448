/* resources/subscribe: the URI is decided for this client, whoever else holds a
 * subscription to it, as any message to a server is; the subscription itself is counted
 * across clients by subscriptions.c. */
#include <errno.h>

#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "methods.h"
#include "registry.h"
#include "subscriptions.h"

static void subscribe(struct client *c, struct jsonrpc_msg *m) {
        const char *uri = method_string_param(c, m, "uri");
        const struct registry_entry *e;
        enum access_verdict verdict;
        int r;

        if (!uri)
                return;
        e = client_access_find_uri(c, uri, &verdict);
        if (!e) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: no ready server lists this resource", NULL);
                return;
        }
        if (!client_access_pass(c, e->server, m,
                                &(struct access_ask){ .about = ACCESS_ABOUT_ITEM, .kind = CATALOG_RESOURCES, .key = uri }))
                return;
        r = subscriptions_add(daemon_subscriptions(c->daemon), c, e->server, uri);
        if (r == -EXDEV)
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: another server serves this resource now; subscribe again once it is ready",
                                   NULL);
        else if (r == -EOPNOTSUPP)
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: the server of this resource does not support subscriptions", NULL);
        else if (r < 0)
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
        else
                client_reply_result(c, m->id, json_object_new_object());
}

const struct method method_resources_subscribe =
        MCP_METHOD("resources/subscribe", METHOD_ERA_INITIALIZE, METHOD_REACH_ITEM, subscribe);
