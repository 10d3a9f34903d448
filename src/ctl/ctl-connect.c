/* mcpvisorctl connect: stdin and stdout joined to the MCP socket, so that a client that can
 * only launch MCP servers as commands reaches every server of the daemon:
 * {"command": "mcpvisorctl", "args": ["connect"]}.
 *
 * Bytes go through unchanged both ways (ctl-bridge.c; the daemon does the MCP framing and
 * parsing), and nothing but the daemon's bytes is ever written to stdout. A profile
 * (--profile, else $MCPVISOR_PROFILE) goes ahead of the client's bytes as one line of our
 * own, notifications/mcpvisor/profile, which the daemon's initialize uses unless the
 * client's own initialize chooses one: the client's bytes are never rewritten. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl-bridge.h"
#include "ctl-connection.h"
#include "ctl.h"

/* Sends the profile line on fd, still blocking: the socket's buffer takes it at once. */
static int send_profile(int fd, const char *path, const char *profile) {
        json_object *msg = json_object_new_object(), *params = json_object_new_object();
        char *line = NULL;
        ssize_t n = -1;
        int len;

        json_object_object_add(params, "profile", json_object_new_string(profile));
        json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(msg, "method", json_object_new_string("notifications/mcpvisor/profile"));
        json_object_object_add(msg, "params", params);
        len = asprintf(&line, "%s\n", json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
        json_object_put(msg);
        if (len > 0)
                n = write(fd, line, (size_t)len);
        free(line);
        if (n != len) {
                fprintf(stderr, CTL_NAME ": %s: cannot send the profile: %s\n", path, n < 0 ? strerror(errno) : "short write");
                return -EIO;
        }
        return 0;
}

static const char *profile_of(const struct ctl *ctl) {
        const char *e = getenv("MCPVISOR_PROFILE");

        return ctl->profile ? ctl->profile : e && *e ? e : NULL;
}

static int run_connect(struct ctl *ctl, int argc, char **argv) {
        const char *path = ctl_mcp_path(ctl), *profile = profile_of(ctl);
        enum bridge_end end;
        int fd;

        if (!path)
                return CTL_EXIT_FAILURE;
        if (profile && !*profile) {
                fprintf(stderr, CTL_NAME ": --profile: the name is empty\n");
                return CTL_EXIT_USAGE;
        }
        fd = ctl_socket_connect(path, CTL_SOCKET_MCP, ctl->timeout_usec);
        if (fd < 0)
                return CTL_EXIT_FAILURE;
        if (profile && send_profile(fd, path, profile) < 0) {
                close(fd);
                return CTL_EXIT_FAILURE;
        }
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
                fprintf(stderr, CTL_NAME ": %s: %s\n", path, strerror(errno));
                close(fd);
                return CTL_EXIT_FAILURE;
        }
        /* A client that dies leaves a pipe without a reader: EPIPE tells us, not a signal. */
        signal(SIGPIPE, SIG_IGN);
        end = bridge_run(STDIN_FILENO, STDOUT_FILENO, fd);
        close(fd);
        return end == BRIDGE_DONE ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

const struct ctl_command ctl_cmd_connect = {
        .name = "connect",
        .synopsis = "[--profile NAME]",
        .summary = "stdin and stdout to the MCP socket, for clients",
        .min_args = 0,
        .max_args = 0,
        .options = CTL_OPT_TIMEOUT | CTL_OPT_PROFILE,
        .run = run_connect,
};
