/* mcpvisorctl connect: stdin and stdout joined to the MCP socket, so that a client that can
 * only launch MCP servers as commands reaches every server of the daemon:
 * {"command": "mcpvisorctl", "args": ["connect"]}.
 *
 * Bytes go through unchanged both ways (the daemon does the MCP framing and parsing), and
 * nothing but the daemon's bytes is ever written to stdout. On EOF on stdin the daemon gets
 * our EOF too (shutdown(SHUT_WR)) and we keep copying its answers until it closes, so that
 * answers to requests still in flight arrive. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl-connection.h"
#include "ctl.h"
#include "time-util.h"

#define DEFAULT_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define BUF_SIZE 65536

struct buf {
        char data[BUF_SIZE];
        size_t off, len; /* bytes data[off, off + len) are still to be written */
};

struct bridge {
        int sock;
        struct buf up;         /* stdin -> daemon */
        struct buf down;       /* daemon -> stdout */
        bool stdin_open;       /* no EOF on stdin yet */
        bool sock_readable;    /* no EOF from the daemon yet */
        bool sock_writable;    /* the daemon may still get bytes: no shutdown, no EPIPE */
        bool lost;             /* bytes from stdin never reached the daemon */
        size_t stdout_chunk;   /* largest write to stdout (see stdout_chunk()) */
};

/* A blocking write to a pipe returns only once all of it fits; after POLLOUT, PIPE_BUF bytes
 * always do, so the loop never stalls on a client that is slow to read. We leave stdout's
 * blocking mode alone: it belongs to the open file our parent shares. */
static size_t stdout_chunk(void) {
        struct stat st;

        if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode))
                return BUF_SIZE;
        return PIPE_BUF;
}

static bool buf_has_room(const struct buf *b) {
        return b->off + b->len < sizeof b->data;
}

/* Reads what fd has into the buffer: > 0 bytes read, 0 on EOF, -EAGAIN when nothing was
 * there (spurious wakeup, EINTR), else a negative errno. */
static ssize_t buf_fill(struct buf *b, int fd, bool is_socket) {
        ssize_t n;

        if (b->len == 0)
                b->off = 0;
        n = is_socket ? recv(fd, b->data + b->off + b->len, sizeof b->data - b->off - b->len, 0)
                      : read(fd, b->data + b->off + b->len, sizeof b->data - b->off - b->len);
        if (n < 0)
                return errno == EINTR || errno == EWOULDBLOCK ? -EAGAIN : -errno;
        b->len += (size_t)n;
        return n;
}

/* Writes at most max bytes of the buffer to fd: 0 or -EAGAIN when it could not take them
 * now, else a negative errno. */
static int buf_flush(struct buf *b, int fd, bool is_socket, size_t max) {
        size_t want = b->len < max ? b->len : max;
        ssize_t n = is_socket ? send(fd, b->data + b->off, want, MSG_NOSIGNAL) : write(fd, b->data + b->off, want);

        if (n < 0)
                return errno == EINTR || errno == EWOULDBLOCK ? -EAGAIN : -errno;
        b->off += (size_t)n;
        b->len -= (size_t)n;
        return 0;
}

static void on_stdin(struct bridge *br) {
        ssize_t n = buf_fill(&br->up, STDIN_FILENO, false);

        if (n == -EAGAIN)
                return;
        if (n < 0)
                fprintf(stderr, CTL_NAME ": cannot read stdin: %s; closing the connection\n", strerror((int)-n));
        if (n <= 0)
                br->stdin_open = false;
}

/* The daemon hung up on our side or we closed it: whatever we still had for it is lost. */
static void sock_write_ended(struct bridge *br) {
        br->sock_writable = false;
        br->lost = br->lost || br->up.len > 0;
        br->up.len = 0;
}

static void on_sock_readable(struct bridge *br) {
        ssize_t n = buf_fill(&br->down, br->sock, true);

        if (n == -EAGAIN)
                return;
        if (n < 0 && n != -ECONNRESET)
                fprintf(stderr, CTL_NAME ": cannot read from the daemon: %s\n", strerror((int)-n));
        if (n <= 0)
                br->sock_readable = false;
}

static void on_sock_writable(struct bridge *br) {
        int r = buf_flush(&br->up, br->sock, true, br->up.len);

        if (r < 0 && r != -EAGAIN) {
                if (r != -EPIPE && r != -ECONNRESET)
                        fprintf(stderr, CTL_NAME ": cannot write to the daemon: %s\n", strerror(-r));
                sock_write_ended(br);
        }
}

/* Once stdin has ended and all of it went out, the daemon gets our EOF: it answers what is
 * in flight, then closes. */
static void maybe_half_close(struct bridge *br) {
        if (br->stdin_open || br->up.len > 0 || !br->sock_writable)
                return;
        if (shutdown(br->sock, SHUT_WR) < 0 && errno != ENOTCONN)
                fprintf(stderr, CTL_NAME ": cannot shut down the connection for writing: %s\n", strerror(errno));
        br->sock_writable = false;
}

enum { P_STDIN, P_SOCK, P_STDOUT, P_COUNT };

static void set_events(const struct bridge *br, struct pollfd *p) {
        p[P_STDIN] = (struct pollfd){ .fd = -1 };
        p[P_SOCK] = (struct pollfd){ .fd = br->sock };
        p[P_STDOUT] = (struct pollfd){ .fd = -1 };
        /* Reading stdin only while the daemon can still take it: after that it would pile up. */
        if (br->stdin_open && br->sock_writable && buf_has_room(&br->up))
                p[P_STDIN] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
        if (br->sock_readable && buf_has_room(&br->down))
                p[P_SOCK].events |= POLLIN;
        if (br->sock_writable && br->up.len > 0)
                p[P_SOCK].events |= POLLOUT;
        if (br->down.len > 0)
                p[P_STDOUT] = (struct pollfd){ .fd = STDOUT_FILENO, .events = POLLOUT };
        /* Not waiting on it: a hung-up socket would wake poll() at once, round after round. */
        if (!p[P_SOCK].events)
                p[P_SOCK].fd = -1;
}

/* One round: wait, then move what can be moved. Returns a negative errno when stdout fails
 * (the client is gone; nothing left to do). */
static int bridge_step(struct bridge *br) {
        struct pollfd p[P_COUNT];
        int r;

        set_events(br, p);
        if (poll(p, P_COUNT, -1) < 0)
                return errno == EINTR ? 0 : -errno;
        if (p[P_STDIN].revents & POLLNVAL)
                br->stdin_open = false; /* started with stdin closed: as good as empty */
        else if (p[P_STDIN].revents)
                on_stdin(br);
        if (p[P_SOCK].revents & (POLLIN | POLLHUP | POLLERR) && p[P_SOCK].events & POLLIN)
                on_sock_readable(br);
        if (p[P_SOCK].revents & (POLLOUT | POLLHUP | POLLERR) && p[P_SOCK].events & POLLOUT)
                on_sock_writable(br);
        if (p[P_STDOUT].revents) {
                r = buf_flush(&br->down, STDOUT_FILENO, false, br->stdout_chunk);
                if (r < 0 && r != -EAGAIN)
                        return r;
        }
        maybe_half_close(br);
        return 0;
}

static int bridge_run(struct bridge *br) {
        int r;

        /* Done once the daemon has closed and all it sent is on stdout. */
        while (br->sock_readable || br->down.len > 0) {
                if (!br->sock_readable && br->sock_writable)
                        sock_write_ended(br); /* the daemon is gone: stop taking stdin for it */
                r = bridge_step(br);
                if (r < 0) {
                        if (r != -EPIPE)
                                fprintf(stderr, CTL_NAME ": cannot write to stdout: %s\n", strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
        }
        if (br->stdin_open || br->lost) {
                fprintf(stderr, CTL_NAME ": the daemon closed the connection\n");
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

static int run_connect(struct ctl *ctl, int argc, char **argv) {
        static struct bridge br; /* 128 KiB of buffers: not on the stack */
        const char *path = ctl_mcp_path(ctl);
        int fd, r;

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
        br = (struct bridge){ .sock = fd, .stdin_open = true, .sock_readable = true, .sock_writable = true,
                              .stdout_chunk = stdout_chunk() };
        r = bridge_run(&br);
        close(fd);
        return r;
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
