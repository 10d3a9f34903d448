/* mcpvisorctl connect's byte pump; see ctl-bridge.h.
 *
 * One poll() loop over stdin, the socket and stdout. Each direction has a buffer that is
 * compacted as it drains, so any amount passes through it; a side is polled only while it
 * has something to do, except stdout, which is always polled: with nothing to write,
 * POLLERR or POLLHUP on it is how we learn that the client is gone. When stdout is a pipe,
 * the daemon's bytes go from the socket into it by splice(), never through our buffer: the
 * kernel hands the socket's pages to the pipe, and the bridge copies nothing. */
#include "ctl-bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

/* Large enough that a 10 MiB result crosses in few rounds; one pair per process. */
#define BUF_SIZE ((size_t)1024 * 1024)
/* A pipe to the client found full is made to hold this much (the kernel's default is 64 KiB),
 * so a large result takes a sixteenth of the writes here and of the reads and wake-ups
 * there. Only then: the pages count towards the user's pipe-user-pages-soft, past which an
 * unprivileged user's new pipes get 8 KiB. */
#define PIPE_BYTES (1024 * 1024)

struct buf {
        char *data;        /* BUF_SIZE bytes */
        size_t start, end; /* bytes data[start, end) are still to be written */
};

static size_t buf_pending(const struct buf *b) {
        return b->end - b->start;
}

/* Room at the end for reading, moving what is pending to the front when that makes room. */
static size_t buf_room(struct buf *b) {
        if (b->start == b->end)
                b->start = b->end = 0;
        else if (b->end == BUF_SIZE && b->start > 0) {
                memmove(b->data, b->data + b->start, buf_pending(b));
                b->end -= b->start;
                b->start = 0;
        }
        return BUF_SIZE - b->end;
}

/* How one of the client's fds is read or written without ever blocking the loop. */
enum io_kind {
        IO_SOCKET,   /* recv()/send() with MSG_DONTWAIT */
        IO_NONBLOCK, /* our own non-blocking open file */
        IO_PLAIN,    /* read()/write() as it is: a file, a terminal, or a pipe we could not reopen */
};

struct endpoint {
        int fd;
        int own_fd;       /* a reopening of the parent's fd that we close; -1: none */
        enum io_kind kind;
        size_t max_write; /* a blocking pipe takes PIPE_BUF bytes after POLLOUT without waiting */
};

static void endpoint_init(struct endpoint *e, int fd, bool for_writing) {
        struct stat st;
        char path[64];

        *e = (struct endpoint){ .fd = fd, .own_fd = -1, .kind = IO_PLAIN, .max_write = SIZE_MAX };
        if (fstat(fd, &st) < 0)
                return; /* the first read or write says what is wrong */
        if (S_ISSOCK(st.st_mode)) {
                e->kind = IO_SOCKET;
                return;
        }
        if (!S_ISFIFO(st.st_mode) || !for_writing)
                return; /* a read after POLLIN returns what is there without waiting */
        /* The pipe's open file is our parent's too: its O_NONBLOCK is not ours to set. A new
         * open of the same pipe is ours alone. */
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        e->own_fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (e->own_fd >= 0) {
                e->fd = e->own_fd;
                e->kind = IO_NONBLOCK;
        } else
                e->max_write = PIPE_BUF;
}

static void endpoint_done(struct endpoint *e) {
        if (e->own_fd >= 0)
                close(e->own_fd);
        e->own_fd = -1;
}

/* Reads what fd has into the buffer: > 0 bytes read, 0 on EOF, -EAGAIN when nothing was
 * there (a spurious wakeup, EINTR), else a negative errno. */
static ssize_t buf_fill(struct buf *b, const struct endpoint *e) {
        size_t room = buf_room(b);
        ssize_t n = e->kind == IO_SOCKET ? recv(e->fd, b->data + b->end, room, MSG_DONTWAIT)
                                         : read(e->fd, b->data + b->end, room);

        if (n < 0)
                return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
        b->end += (size_t)n;
        return n;
}

/* Writes what the fd takes now: 0 (maybe nothing was taken), else a negative errno. */
static int buf_flush(struct buf *b, const struct endpoint *e) {
        size_t want = buf_pending(b) < e->max_write ? buf_pending(b) : e->max_write;
        ssize_t n = e->kind == IO_SOCKET ? send(e->fd, b->data + b->start, want, MSG_DONTWAIT | MSG_NOSIGNAL)
                                         : write(e->fd, b->data + b->start, want);

        if (n < 0)
                return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
        b->start += (size_t)n;
        return 0;
}

/* How the daemon's bytes reach stdout. */
enum down_mode {
        DOWN_COPY,       /* through our buffer: recv(), then write() */
        DOWN_SPLICE,     /* spliced into the pipe; waiting for the socket to have bytes */
        DOWN_PIPE_FULL,  /* spliced; the pipe took nothing at the last try: waiting for room */
};

struct bridge {
        struct endpoint in, out, sock;
        enum down_mode down_mode;
        bool out_grown;     /* stdout, a pipe, was asked to hold PIPE_BYTES */
        struct buf up;      /* stdin -> daemon */
        struct buf down;    /* daemon -> stdout */
        bool in_open;       /* no EOF on stdin yet */
        bool sock_readable; /* no EOF from the daemon yet */
        bool sock_writable; /* the daemon may still get bytes: no shutdown, no EPIPE */
        bool lost;          /* bytes from stdin never reached the daemon */
};

static void on_stdin(struct bridge *br) {
        ssize_t n = buf_fill(&br->up, &br->in);

        if (n == -EAGAIN)
                return;
        if (n < 0)
                fprintf(stderr, CTL_NAME ": cannot read stdin: %s; closing the connection\n", strerror((int)-n));
        if (n <= 0)
                br->in_open = false;
}

/* The daemon hung up on our side or we closed it: whatever we still had for it is lost. */
static void sock_write_ended(struct bridge *br) {
        br->sock_writable = false;
        br->lost = br->lost || buf_pending(&br->up) > 0;
        br->up.start = br->up.end = 0;
}

/* From the socket straight into the stdout pipe: > 0 bytes moved, 0 on EOF, -EAGAIN when
 * the pipe (or, after a spurious wake-up, the socket) had nothing to give, else -errno. */
static ssize_t splice_down(struct bridge *br) {
        ssize_t n = splice(br->sock.fd, NULL, br->out.fd, NULL, BUF_SIZE, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);

        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? -EAGAIN : -errno;
        return n;
}

static void set_down_mode(struct bridge *br, enum down_mode mode) {
        br->down_mode = mode;
}

/* Stdout was full: a pipe is asked, once, to hold more. Refused past fs.pipe-max-size or
 * the user's pipe-user-pages-soft (or when stdout is no pipe), the size stays. */
static void grow_out(struct bridge *br) {
        if (br->out_grown)
                return;
        br->out_grown = true;
        (void)fcntl(br->out.fd, F_SETPIPE_SZ, PIPE_BYTES);
}

/* A read from the daemon ended in n: bytes, 0 at EOF, -EAGAIN for nothing now, or -errno. */
static void sock_read_ended(struct bridge *br, ssize_t n) {
        if (n == -EAGAIN)
                return;
        if (n < 0 && n != -ECONNRESET)
                fprintf(stderr, CTL_NAME ": cannot read from the daemon: %s\n", strerror((int)-n));
        if (n <= 0)
                br->sock_readable = false;
}

static void on_sock_readable(struct bridge *br) {
        ssize_t n;

        if (br->down_mode == DOWN_COPY) {
                sock_read_ended(br, buf_fill(&br->down, &br->sock));
                return;
        }
        n = splice_down(br);
        if (n == -EINVAL)
                set_down_mode(br, DOWN_COPY); /* nothing moved: the next round copies instead */
        else if (n == -EAGAIN || n == -EPIPE) {
                /* The socket had bytes, so the pipe is full; or its reader is gone, which the
                 * next poll() of stdout tells. */
                set_down_mode(br, DOWN_PIPE_FULL);
                grow_out(br);
        } else
                sock_read_ended(br, n);
}

static void on_sock_writable(struct bridge *br) {
        int r = buf_flush(&br->up, &br->sock);

        if (r < 0) {
                if (r != -EPIPE && r != -ECONNRESET)
                        fprintf(stderr, CTL_NAME ": cannot write to the daemon: %s\n", strerror(-r));
                sock_write_ended(br);
        }
}

/* Once stdin has ended and all of it went out, the daemon gets our EOF: it answers what is
 * in flight, then closes. */
static void maybe_half_close(struct bridge *br) {
        if (br->in_open || buf_pending(&br->up) > 0 || !br->sock_writable)
                return;
        if (shutdown(br->sock.fd, SHUT_WR) < 0 && errno != ENOTCONN)
                fprintf(stderr, CTL_NAME ": cannot shut down the connection for writing: %s\n", strerror(errno));
        br->sock_writable = false;
}

enum { P_IN, P_SOCK, P_OUT, P_COUNT };

static void set_events(struct bridge *br, struct pollfd *p) {
        p[P_IN] = (struct pollfd){ .fd = -1 };
        p[P_SOCK] = (struct pollfd){ .fd = br->sock.fd };
        /* Reading stdin only while the daemon can still take it: after that it would pile up. */
        if (br->in_open && br->sock_writable && buf_room(&br->up) > 0)
                p[P_IN] = (struct pollfd){ .fd = br->in.fd, .events = POLLIN };
        if (br->sock_readable && (br->down_mode == DOWN_COPY ? buf_room(&br->down) > 0 : br->down_mode == DOWN_SPLICE))
                p[P_SOCK].events |= POLLIN;
        if (br->sock_writable && buf_pending(&br->up) > 0)
                p[P_SOCK].events |= POLLOUT;
        /* Not waiting on it: a hung-up socket would wake poll() at once, round after round. */
        if (!p[P_SOCK].events)
                p[P_SOCK].fd = -1;
        p[P_OUT] = (struct pollfd){ .fd = br->out.fd,
                                    .events = buf_pending(&br->down) > 0 || br->down_mode == DOWN_PIPE_FULL ? POLLOUT : 0 };
}

/* One round: wait, then move what can be moved. Returns 1 when the client is gone, 0 to go
 * on, or a negative errno when stdout failed. */
static int bridge_step(struct bridge *br) {
        struct pollfd p[P_COUNT];

        set_events(br, p);
        if (poll(p, P_COUNT, -1) < 0)
                return errno == EINTR ? 0 : -errno;
        if (p[P_OUT].revents & (POLLERR | POLLHUP | POLLNVAL))
                return 1; /* whatever the daemon says now, nobody reads it */
        if (p[P_IN].revents & POLLNVAL)
                br->in_open = false; /* started with stdin closed: as good as empty */
        else if (p[P_IN].revents)
                on_stdin(br);
        if (p[P_SOCK].revents & (POLLIN | POLLHUP | POLLERR) && p[P_SOCK].events & POLLIN)
                on_sock_readable(br);
        if (p[P_SOCK].revents & (POLLOUT | POLLHUP | POLLERR) && p[P_SOCK].events & POLLOUT)
                on_sock_writable(br);
        if (p[P_OUT].revents & POLLOUT && br->down_mode == DOWN_PIPE_FULL) {
                set_down_mode(br, DOWN_SPLICE);
        } else if (p[P_OUT].revents & POLLOUT) {
                int r = buf_flush(&br->down, &br->out);

                if (buf_pending(&br->down) > 0)
                        grow_out(br);
                if (r < 0)
                        return r == -EPIPE ? 1 : r;
        }
        maybe_half_close(br);
        return 0;
}

static enum bridge_end bridge_loop(struct bridge *br) {
        /* Done once the daemon has closed and all it sent is on stdout. */
        while (br->sock_readable || buf_pending(&br->down) > 0) {
                int r;

                if (!br->sock_readable && br->sock_writable)
                        sock_write_ended(br); /* the daemon is gone: stop taking stdin for it */
                r = bridge_step(br);
                if (r == 1)
                        return BRIDGE_CLIENT_GONE;
                if (r < 0) {
                        fprintf(stderr, CTL_NAME ": cannot write to stdout: %s\n", strerror(-r));
                        return BRIDGE_FAILED;
                }
        }
        if (br->in_open || br->lost) {
                fprintf(stderr, CTL_NAME ": the daemon closed the connection\n");
                return BRIDGE_DAEMON_CLOSED;
        }
        return BRIDGE_DONE;
}

enum bridge_end bridge_run(int in, int out, int sock) {
        struct bridge br = { .in_open = true, .sock_readable = true, .sock_writable = true };
        enum bridge_end end;

        br.up.data = malloc(BUF_SIZE);
        br.down.data = malloc(BUF_SIZE);
        if (!br.up.data || !br.down.data) {
                free(br.up.data);
                free(br.down.data);
                fprintf(stderr, CTL_NAME ": out of memory\n");
                return BRIDGE_FAILED;
        }
        endpoint_init(&br.in, in, false);
        endpoint_init(&br.out, out, true);
        endpoint_init(&br.sock, sock, false);
        /* a pipe of our own opening, so non-blocking: the socket's bytes are spliced into it */
        set_down_mode(&br, br.out.kind == IO_NONBLOCK ? DOWN_SPLICE : DOWN_COPY);
        end = bridge_loop(&br);
        endpoint_done(&br.out);
        free(br.up.data);
        free(br.down.data);
        return end;
}
