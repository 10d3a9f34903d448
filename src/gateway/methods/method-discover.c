/* server/discover: the daemon's versions (both eras), capabilities, identity and the
 * instructions of the servers this client sees, as initialize computes them. Served in
 * both eras and before initialize: a dual-era client probes with it first, and a legacy
 * client that asks learns the same. */
#include "client.h"
#include "client-access.h"
#include "jsonrpc.h"
#include "methods.h"
#include "protocol.h"
#include "request-meta.h"

static void discover(struct client *c, struct jsonrpc_msg *m) {
        json_object *result, *meta, *instr;

        if (!method_params_object(c, m, true))
                return;
        result = json_object_new_object();
        meta = json_object_new_object();
        json_object_object_add(result, "resultType", json_object_new_string("complete"));
        json_object_object_add(result, "supportedVersions", protocol_all_versions_json());
        json_object_object_add(result, "capabilities", method_server_capabilities());
        json_object_object_add(meta, META_SERVER_INFO, method_server_info());
        json_object_object_add(result, "_meta", meta);
        if ((instr = method_instructions(c)))
                json_object_object_add(result, "instructions", instr);
        client_add_cache_hints(c, result);
        client_reply_result(c, m->id, result);
}

const struct method method_discover = {
        .name = "server/discover",
        .flags = METHOD_BEFORE_INIT | METHOD_MCP, .eras = METHOD_ERAS_ALL, .reach = METHOD_REACH_DAEMON,
        .handle = discover,
};
