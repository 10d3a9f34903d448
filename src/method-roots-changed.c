/* notifications/roots/list_changed from a client. Roots belong to one client while a
 * server process is shared by all, so servers are never offered roots.listChanged: a
 * server asks roots/list during a call (server-request.h) and gets the caller's roots
 * then. Nothing is forwarded. */
#include "client.h"
#include "jsonrpc.h"
#include "methods.h"

static void roots_changed(struct client *c, struct jsonrpc_msg *m) {
        client_log(c, LOG_DEBUG, "roots changed; servers ask for them again on their next call's request");
}

const struct method notification_roots_list_changed = {
        .name = "notifications/roots/list_changed",
        .flags = METHOD_MCP,
        .handle = roots_changed,
};
