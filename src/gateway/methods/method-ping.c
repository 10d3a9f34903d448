/* ping: answered by the daemon itself, at any point of the session. */
#include "client.h"
#include "jsonrpc.h"
#include "methods.h"

static void ping(struct client *c, struct jsonrpc_msg *m) {
        if (method_params_object(c, m, true))
                client_reply_result(c, m->id, json_object_new_object());
}

const struct method method_ping = {
        .name = "ping",
        .flags = METHOD_BEFORE_INIT | METHOD_MCP | METHOD_CONTROL,
        .eras = METHOD_ERA_INITIALIZE,
        .reach = METHOD_REACH_DAEMON,
        .handle = ping,
};
