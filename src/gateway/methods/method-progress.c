/* notifications/progress from a client: about a request a server made of it (sampling,
 * elicitation...), which goes back to that server (upcall.h). Any other is
 * ignored: the daemon asks clients nothing else. */
#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "methods.h"
#include "upcall.h"

static void progress(struct client *c, struct jsonrpc_msg *m) {
        if (!server_requests_client_progress(daemon_server_requests(c->daemon), c, m))
                client_log(c, LOG_DEBUG, "ignoring progress for no request of a server's");
}

const struct method notification_progress = {
        .name = "notifications/progress",
        .flags = METHOD_MCP, .eras = METHOD_ERA_INITIALIZE, .reach = METHOD_REACH_REQUEST,
        .handle = progress,
};
