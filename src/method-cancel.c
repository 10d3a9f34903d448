/* notifications/cancelled from a client. */
#include "client.h"
#include "jsonrpc.h"
#include "methods.h"

static void cancelled(struct client *c, struct jsonrpc_msg *m) {
        /* Every request is answered as soon as it arrives today, so nothing is ever in
         * flight to cancel; a late cancellation is simply ignored, as the spec allows. */
}

const struct method notification_cancelled = {
        .name = "notifications/cancelled",
        .flags = METHOD_MCP,
        .handle = cancelled,
};
