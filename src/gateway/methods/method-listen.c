/* subscriptions/listen: the modern era's stream of change notifications (sub-listen.c). */
#include "client.h"
#include "sub-listen.h"
#include "methods.h"

static void listen_request(struct client *c, struct jsonrpc_msg *m) {
        if (method_params_object(c, m, true))
                sub_listen_open(c, m);
}

const struct method method_subscriptions_listen =
        MCP_METHOD("subscriptions/listen", METHOD_ERA_STATELESS, METHOD_REACH_DAEMON, listen_request);
