/* notifications/roots/list_changed from a client. Roots belong to one client while a
 * server process is shared by all: a server without configured roots asks roots/list
 * during a call (upcall.h) and gets the caller's roots then, and one with
 * configured roots gets those whoever calls (roots.listChanged is offered to it for a
 * reload's changes, server.c). Nothing is forwarded. */
#include "client.h"
#include "jsonrpc.h"
#include "methods.h"

static void roots_changed(struct client *c, struct jsonrpc_msg *m) {
        client_log(c, LOG_DEBUG, "roots changed; servers ask for them again on their next call's request");
}

const struct method notification_roots_list_changed = {
        .name = "notifications/roots/list_changed",
        .flags = METHOD_MCP, .eras = METHOD_ERA_INITIALIZE, .reach = METHOD_REACH_DAEMON,
        .handle = roots_changed,
};
