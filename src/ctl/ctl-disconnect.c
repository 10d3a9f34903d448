/* mcpvisorctl disconnect ID: ends one MCP client, by the id mcpvisorctl clients shows (the
 * journal's MCPVISOR_CLIENT=): a socket client's connection is closed, an HTTP session is
 * ended (its next request is answered 404). Its calls are cancelled at their servers. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl-connection.h"
#include "ctl-status.h"
#include "ctl.h"
#include "time-util.h"

/* A client id: a positive whole number, as mcpvisorctl clients prints it. */
static int parse_id(const char *s, int64_t *ret) {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v <= 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int run_disconnect(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL, *error = NULL;
        int64_t id;

        if (parse_id(argv[0], &id) < 0) {
                fprintf(stderr, CTL_NAME ": disconnect: '%s' is not a client id (a number from mcpvisorctl clients)\n", argv[0]);
                return CTL_EXIT_USAGE;
        }
        if (!params || json_object_object_add(params, "id", json_object_new_int64(id)) < 0) {
                fprintf(stderr, CTL_NAME ": out of memory\n");
                return CTL_EXIT_FAILURE;
        }
        if (ctl_call_once(ctl, "disconnect", params, &result, &error) < 0)
                return CTL_EXIT_FAILURE;
        if (error)
                return ctl_print_daemon_error(error);
        printf("client %" PRId64 " disconnected (%s)\n", id, ctl_json_str(result, "transport") ?: "?");
        return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

const struct ctl_command ctl_cmd_disconnect = {
        .name = "disconnect",
        .synopsis = "ID",
        .summary = "end one MCP client (its connection or HTTP session), by its id in clients",
        .min_args = 1,
        .max_args = 1,
        .options = CTL_OPT_TIMEOUT,
        .default_timeout_usec = CTL_DEFAULT_TIMEOUT_USEC,
        .run = run_disconnect,
};
