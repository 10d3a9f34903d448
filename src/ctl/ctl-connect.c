/* mcpvisorctl connect: stdin and stdout joined to the MCP socket, so that a client that can
 * only launch MCP servers as commands reaches every server of the daemon:
 * {"command": "mcpvisorctl", "args": ["connect"]}.
 *
 * Bytes go through unchanged both ways (ctl-bridge.c; the daemon does the MCP framing and
 * parsing), and nothing but the daemon's bytes is ever written to stdout. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl-bridge.h"
#include "ctl-connection.h"
#include "ctl.h"
#include "time-util.h"

#define DEFAULT_TIMEOUT_USEC (10 * USEC_PER_SEC)

static int run_connect(struct ctl *ctl, int argc, char **argv) {
        const char *path = ctl_mcp_path(ctl);
        enum bridge_end end;
        int fd;

        if (!path)
                return CTL_EXIT_FAILURE;
        fd = ctl_socket_connect(path, CTL_SOCKET_MCP, ctl->timeout_usec);
        if (fd < 0)
                return CTL_EXIT_FAILURE;
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
        .synopsis = "",
        .summary = "stdin and stdout to the MCP socket, for clients",
        .min_args = 0,
        .max_args = 0,
        .options = CTL_OPT_TIMEOUT,
        .default_timeout_usec = DEFAULT_TIMEOUT_USEC,
        .run = run_connect,
};
