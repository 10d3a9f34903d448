/* The bench's MCP client side: the same code over a socket to the daemon and over pipes to
 * a server run directly, so that the difference between the two is the daemon. It never
 * parses JSON: an answer is recognised by its id and "result" member, which both peers
 * write in the same place. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define READ_CHUNK (256 * 1024)

static const char INITIALIZE[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
        "\"capabilities\":{},\"clientInfo\":{\"name\":\"mcpvisor-bench\",\"version\":\"1\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

static void conn_init(struct conn *c) {
        *c = (struct conn){ .rfd = -1, .wfd = -1, .next_id = 1 };
}

int conn_unix(struct conn *c, const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        conn_init(c);
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        c->rfd = c->wfd = fd;
        return 0;
}

int conn_spawn(struct conn *c, const char *server) {
        const char *argv[] = { server, NULL };

        return conn_spawn_argv(c, argv);
}

int conn_bridge(struct conn *c, const char *ctl, const char *sock) {
        const char *argv[] = { ctl, "-s", sock, "connect", NULL };

        return conn_spawn_argv(c, argv);
}

int conn_spawn_argv(struct conn *c, const char *const *argv) {
        int in[2], out[2], r;
        char *envp[] = { NULL };
        posix_spawn_file_actions_t fa;

        conn_init(c);
        if (pipe2(in, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(out, O_CLOEXEC) < 0) {
                r = -errno;
                close(in[0]);
                close(in[1]);
                return r;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        r = posix_spawn(&c->child, argv[0], &fa, NULL, (char *const *)argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        if (r != 0) {
                close(in[1]);
                close(out[0]);
                c->child = 0;
                return -r;
        }
        c->wfd = in[1];
        c->rfd = out[0];
        return 0;
}

void conn_close(struct conn *c) {
        if (c->wfd >= 0 && c->wfd != c->rfd)
                close(c->wfd);
        if (c->rfd >= 0)
                close(c->rfd);
        if (c->child > 0)
                waitpid(c->child, NULL, 0); /* its stdin is closed: it exits */
        free(c->buf);
        conn_init(c);
}

int conn_set_nonblocking(struct conn *c) {
        int flags = fcntl(c->rfd, F_GETFL);

        if (flags < 0 || fcntl(c->rfd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

/* Writes all of it, with write() on both paths (a socket and a pipe alike: one system call
 * each; main() ignores SIGPIPE). A socket we read in non-blocking mode is written to here
 * only with room to spare (one or a few small requests in flight), so a short write is
 * waited out. */
int conn_write(struct conn *c, const char *p, size_t len) {
        while (len > 0) {
                ssize_t n = write(c->wfd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        struct pollfd pfd = { c->wfd, POLLOUT, 0 };
                        poll(&pfd, 1, -1);
                        continue;
                }
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Room for one more read: unread bytes moved to the front, the buffer grown if needed. */
static int make_room(struct conn *c) {
        if (c->start > 0 && (c->start == c->len || c->cap - c->len < READ_CHUNK)) {
                memmove(c->buf, c->buf + c->start, c->len - c->start);
                c->len -= c->start;
                c->start = 0;
        }
        if (c->cap - c->len < READ_CHUNK) {
                size_t cap = c->cap ? c->cap * 2 : 2 * READ_CHUNK;
                char *buf = realloc(c->buf, cap);
                if (!buf)
                        return -ENOMEM;
                c->buf = buf;
                c->cap = cap;
        }
        return 0;
}

ssize_t conn_fill(struct conn *c) {
        ssize_t n;
        int r = make_room(c);

        if (r < 0)
                return r;
        do
                n = read(c->rfd, c->buf + c->len, c->cap - c->len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        c->len += (size_t)n;
        return n;
}

bool conn_take_line(struct conn *c, struct line *ret) {
        const char *from = c->buf + c->start + c->scanned;
        size_t avail = c->len - c->start - c->scanned;
        const char *nl = avail ? memchr(from, '\n', avail) : NULL;

        if (!nl) {
                c->scanned += avail; /* a 10 MiB line is scanned once, not once per read */
                return false;
        }
        *ret = (struct line){ c->buf + c->start, (size_t)(nl - (c->buf + c->start)) };
        c->start += ret->len + 1;
        c->scanned = 0;
        return true;
}

int conn_read_line(struct conn *c, struct daemon_run *d, int64_t deadline_ns, struct line *ret) {
        for (;;) {
                struct pollfd p[2] = { { c->rfd, POLLIN, 0 }, { d ? d->notify_fd : -1, POLLIN, 0 } };
                ssize_t n;

                if (conn_take_line(c, ret))
                        return 0;
                n = conn_fill(c);
                if (n == 0)
                        return -ECONNRESET;
                if (n > 0)
                        continue;
                if (n != -EAGAIN)
                        return (int)n;
                if (ms_left(deadline_ns) == 0)
                        return -ETIMEDOUT;
                poll(p, 2, ms_left(deadline_ns));
                if (d)
                        daemon_pump(d);
        }
}

int conn_send_initialize(struct conn *c) {
        return conn_write(c, INITIALIZE, sizeof INITIALIZE - 1);
}

int conn_initialize(struct conn *c, struct daemon_run *d, int64_t deadline_ns) {
        struct line l;
        int r = conn_set_nonblocking(c);

        if (r >= 0)
                r = conn_send_initialize(c);
        if (r >= 0)
                r = conn_read_line(c, d, deadline_ns, &l);
        if (r >= 0 && !line_is_result(l, 0))
                r = -EPROTO;
        return r;
}

int conn_send_call(struct conn *c, const char *tool, const char *arguments) {
        char text[512];
        int n = snprintf(text, sizeof text,
                         "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                         "\"arguments\":%s}}\n",
                         c->next_id++, tool, arguments);

        if (n < 0 || (size_t)n >= sizeof text)
                return -E2BIG;
        return conn_write(c, text, (size_t)n);
}

/* Both the daemon (json-c) and the bench server write "jsonrpc", then "id", then "result"
 * or "error": the id and the kind of answer are found in the first bytes of the line. */
bool line_is_result(struct line l, uint64_t id) {
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
        const size_t hl = sizeof head - 1;
        char *end;

        if (l.len < hl + 12 || memcmp(l.p, head, hl) != 0)
                return false;
        if (strtoull(l.p + hl, &end, 10) != id || end == l.p + hl)
                return false;
        return (size_t)(end - l.p) + 10 <= l.len && memcmp(end, ",\"result\":", 10) == 0;
}

void conn_count_answer(struct conn *c, struct line l) {
        static const char result[] = ",\"result\":";
        /* The id is ours, counting up; only its kind matters here. */
        const char *comma = memchr(l.p, ',', l.len > 64 ? 64 : l.len);
        const char *after = comma ? memchr(comma + 1, ',', (size_t)(l.p + l.len - comma - 1)) : NULL;

        if (after && (size_t)(l.p + l.len - after) >= sizeof result - 1 && memcmp(after, result, sizeof result - 1) == 0)
                c->answers++;
        else
                c->errors++;
}

int conn_ping(struct conn *c, struct daemon_run *d, int64_t timeout_ns, int64_t *elapsed_ns) {
        uint64_t id = c->next_id++;
        int64_t t0 = now_ns();
        char text[96];
        struct line l;
        int r, n = snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"ping\"}\n", id);

        if ((r = conn_write(c, text, (size_t)n)) < 0 || (r = conn_read_line(c, d, t0 + timeout_ns, &l)) < 0)
                return r;
        *elapsed_ns = now_ns() - t0;
        return line_is_result(l, id) ? 0 : -EPROTO;
}

int conn_two(struct daemon_run *d, struct conn *a, struct conn *b) {
        int r = conn_unix(a, d->sock), rb = conn_unix(b, d->sock);

        if (r >= 0)
                r = rb;
        if (r >= 0)
                r = conn_initialize(a, d, now_ns() + 10 * (int64_t)1000000000);
        if (r >= 0)
                r = conn_initialize(b, d, now_ns() + 10 * (int64_t)1000000000);
        return r;
}
