/* logging/setLevel: the level of the log messages this client receives; what the servers
 * are asked follows from all clients' levels (mcp-logging.c). */
#include "client.h"
#include "jsonrpc.h"
#include "mcp-logging.h"
#include "methods.h"

static void set_level(struct client *c, struct jsonrpc_msg *m) {
        json_object *v;
        int level;

        if (!method_params_object(c, m, false))
                return;
        if (!json_object_object_get_ex(m->params, "level", &v) || !json_object_is_type(v, json_type_string) ||
            (level = mcp_level_from_string(json_object_get_string(v))) < 0) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"level\" must be one of debug, info, notice, warning, error, critical, alert, emergency",
                                   NULL);
                return;
        }
        mcp_logging_client_level(c, level);
        client_reply_result(c, m->id, json_object_new_object());
}

const struct method method_logging_set_level =
        MCP_METHOD("logging/setLevel", METHOD_ERA_INITIALIZE, METHOD_REACH_HEARD, set_level);
