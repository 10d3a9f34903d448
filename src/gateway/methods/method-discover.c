/* server/discover, the 2026-07-28 era's probe. We speak the initialize-based era, so the
 * answer is a prompt -32601 on an open connection: dual-era clients then fall back to
 * initialize instead of waiting out their probe timeout. */
#include "client.h"
#include "jsonrpc.h"
#include "methods.h"
#include "protocol.h"

static void discover(struct client *c, struct jsonrpc_msg *m) {
        json_object *data = json_object_new_object();

        json_object_object_add(data, "supportedVersions", protocol_versions_json());
        client_reply_error(c, m->id, JSONRPC_METHOD_NOT_FOUND,
                           "Method not found: server/discover is not supported; this server speaks "
                           "the initialize handshake (protocol " MCP_LATEST_VERSION " and earlier)",
                           data);
}

const struct method method_discover = {
        .name = "server/discover",
        .flags = METHOD_BEFORE_INIT | METHOD_MCP, .eras = METHOD_ERAS_ALL, .reach = METHOD_REACH_DAEMON,
        .handle = discover,
};
