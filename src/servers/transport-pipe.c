/* The pipe transport: a server's stdin, written through a bufferevent (the messages of one
 * pass of the event loop gathered and written at once at its end when nothing is queued
 * before them), bounded and watched for a server that stops reading; and its stdout, read
 * straight into a framer and handed up line by line. See server-transport.h. */
#include "server-transport.h"

#include <errno.h>
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "framing.h"
#include "log.h"
#include "time-util.h"

/* A large request goes out in few writes (bufferevent's default is 16 KiB a write). */
#define PIPE_WRITE_CHUNK (256 * 1024)
/* While a server writes a large line its stdout holds this much (the kernel's default is
 * 64 KiB): the line crosses in a sixteenth of the reads, and of the wake-ups of both ends.
 * Only then: the pages count towards the user's pipe-user-pages-soft, past which an
 * unprivileged user's new pipes get 8 KiB; the size goes back once the server is quiet. */
#define PIPE_STDOUT_BYTES (1024 * 1024)
#define PIPE_DEFAULT_BYTES (64 * 1024)
/* A server quiet this long gives back the buffer a large line left (framer_keep()): one
 * answering large results one after another reads each into pages already there. */
#define PIPE_TRIM_USEC 1000000

struct pipe_transport {
        struct server_transport t;     /* first: what the connection holds */
        const struct logger *log;
        const char *name;              /* the server's name, for logs */
        struct bufferevent *to;        /* the server's stdin */
        struct evbuffer *batch;        /* messages sent in this pass of the loop, not yet written */
        struct event *flush;           /* active while the batch holds some: writes it */
        struct event *from;            /* the server's stdout, read into the framer */
        int from_fd;                   /* -1 once closed (stop_receiving with discard) */
        int from_size;                 /* bytes last asked for its pipe to hold (0: none, the kernel's default) */
        struct framer framer;
        size_t input_limit;            /* queued bytes for stdin past which sends are refused; 0 none */
        uint64_t stall_usec;           /* queued input unread this long breaks the connection; 0 never */
        uint64_t input_progress;       /* when the server last took bytes of its stdin, or the queue began */
        struct event *stall_timer;
        struct event *trim_timer;      /* gives back the framer's spare buffer */
        struct evbuffer_cb_entry *input_taken; /* notes input_progress */
        bool input_full;               /* a send was refused since the queue was last empty */
        bool input_closed;             /* stdin closed (or closing once flushed) */
        bool stopped;                  /* nothing more is received or reported: broken, or stopped */
};

static struct pipe_transport *pipe_of(struct server_transport *t) {
        return (struct pipe_transport *)t;
}

static size_t pipe_queued(const struct server_transport *t) {
        const struct pipe_transport *p = (const struct pipe_transport *)t;

        return evbuffer_get_length(bufferevent_get_output(p->to)) + evbuffer_get_length(p->batch);
}

static void pipe_stop_receiving(struct server_transport *t, bool discard) {
        struct pipe_transport *p = pipe_of(t);

        p->stopped = true;
        event_del(p->from);
        if (discard && p->from_fd >= 0) {
                close(p->from_fd);
                p->from_fd = -1;
        }
}

/* Reported once; nothing is read after it. */
static void report_broken(struct pipe_transport *p, const char *why) {
        if (p->stopped)
                return;
        pipe_stop_receiving(&p->t, false);
        p->t.events->broken(why, p->t.userdata);
}

/* Hands up every whole line read; at_eof, an unterminated tail too. The connection may
 * stop receiving from inside a callback, which ends the loop. */
static void deliver(struct pipe_transport *p, bool at_eof) {
        struct frame fr;
        enum frame_kind kind;

        while (!p->stopped && (kind = framer_next(&p->framer, NULL, at_eof, &fr)) != FRAME_NONE) {
                struct framer_offer offer;

                if (kind == FRAME_OVERSIZE) {
                        p->t.events->oversize(fr.data, fr.len, p->t.userdata);
                } else {
                        /* A large result can go to its client's output where it was read. */
                        framer_offer(&p->framer, &fr, &offer);
                        p->t.events->line(fr.data, fr.len, &offer.offer, p->t.userdata);
                }
                framer_consume(&p->framer, &fr);
        }
}

/* Asked once a line: refused past fs.pipe-max-size or the user's pipe-user-pages-soft, or
 * (smaller) while the pipe holds more, the size stays. */
static void size_stdout(struct pipe_transport *p, int bytes) {
        if (p->from_fd >= 0)
                (void)fcntl(p->from_fd, F_SETPIPE_SZ, bytes);
        p->from_size = bytes;
}

/* Each read moves the trim a second on: only a quiet server's buffer goes. */
static void watch_spare(struct pipe_transport *p) {
        struct timeval tv = timeval_from_usec(PIPE_TRIM_USEC);

        if (framer_spare(&p->framer))
                evtimer_add(p->trim_timer, &tv);
}

static void on_trim_timer(evutil_socket_t fd, short what, void *userdata) {
        struct pipe_transport *p = userdata;

        framer_trim(&p->framer);
        if (p->from_size > PIPE_DEFAULT_BYTES)
                size_stdout(p, PIPE_DEFAULT_BYTES);
        watch_spare(p); /* a buffer still lent to a client comes back later: a second after */
}

static void on_from_readable(evutil_socket_t fd, short what, void *userdata) {
        struct pipe_transport *p = userdata;
        ssize_t n = framer_read(&p->framer, fd);

        if (n > 0) {
                if (framer_buffered(&p->framer) > PIPE_DEFAULT_BYTES && p->from_size < PIPE_STDOUT_BYTES)
                        size_stdout(p, PIPE_STDOUT_BYTES); /* a large line is coming */
                deliver(p, false);
                watch_spare(p);
        } else if (n == 0) {
                deliver(p, true);
                report_broken(p, "closed its stdout");
        } else if (n != -EAGAIN && n != -EINTR) {
                report_broken(p, n == -ENOMEM ? "out of memory reading its stdout" : "stdout read error");
        }
}

static void shut_input(struct pipe_transport *p) {
        evutil_socket_t fd = bufferevent_getfd(p->to);

        /* Closing our end is the EOF the server sees on its stdin. setfd does not close. */
        evbuffer_drain(p->batch, evbuffer_get_length(p->batch));
        bufferevent_disable(p->to, EV_WRITE);
        bufferevent_setfd(p->to, -1);
        if (fd >= 0)
                close(fd);
}

static void on_to_write(struct bufferevent *bev, void *userdata) {
        struct pipe_transport *p = userdata;

        if (p->input_closed)
                shut_input(p);
}

/* The bufferevent keeps its output's front frozen, so thaw it for the drain. */
static void drop_input(struct pipe_transport *p) {
        struct evbuffer *out = bufferevent_get_output(p->to);

        evbuffer_unfreeze(out, 1);
        evbuffer_drain(out, evbuffer_get_length(out));
        evbuffer_freeze(out, 1);
        evbuffer_drain(p->batch, evbuffer_get_length(p->batch));
}

static void on_to_event(struct bufferevent *bev, short what, void *userdata) {
        struct pipe_transport *p = userdata;

        if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
                /* EPIPE: nobody reads the server's stdin any more; drop what cannot be sent. */
                drop_input(p);
                if (!p->input_closed)
                        report_broken(p, "stopped reading its stdin");
        }
}

static void on_input_taken(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *userdata) {
        struct pipe_transport *p = userdata;

        if (info->n_deleted == 0)
                return;
        p->input_progress = now_usec();
        if (evbuffer_get_length(buf) == 0)
                p->input_full = false;
}

static void arm_stall(struct pipe_transport *p, uint64_t usec) {
        struct timeval tv = timeval_from_usec(usec);

        evtimer_add(p->stall_timer, &tv);
}

/* A server that takes nothing of its stdin would hold what is queued for it, and every
 * call behind it, for good: its queue is dropped and its connection ends as a broken one. */
static void on_stall_timer(evutil_socket_t fd, short what, void *userdata) {
        struct pipe_transport *p = userdata;
        size_t queued = pipe_queued(&p->t);
        uint64_t now = now_usec(), due = p->input_progress + p->stall_usec;
        char why[192];

        if (queued == 0 || p->stopped)
                return;
        if (now < due) {
                arm_stall(p, due - now);
                return;
        }
        snprintf(why, sizeof why, "read none of its stdin for %g s (healthTimeout) while %zu bytes were queued for it",
                 (double)p->stall_usec / 1e6, queued);
        drop_input(p);
        p->input_closed = true;
        shut_input(p);
        report_broken(p, why);
}

/* Called after a message was queued or written: a queue that begins now is watched. */
static void watch_input(struct pipe_transport *p, size_t queued_before) {
        if (p->stall_usec == 0 || pipe_queued(&p->t) == 0)
                return;
        if (queued_before == 0)
                p->input_progress = now_usec();
        if (!evtimer_pending(p->stall_timer, NULL))
                arm_stall(p, p->stall_usec);
}

/* Logged once a queue: until the server has taken all of it, every send past the limit
 * is refused the same way, and each caller is told. */
static bool over_input_limit(struct pipe_transport *p, const struct iovec *parts, size_t n_parts) {
        size_t queued = evbuffer_get_length(bufferevent_get_output(p->to)), len = 0;

        size_t batch = evbuffer_get_length(p->batch);

        /* Of the batch, what the pipe would not take: written at the end of the pass, the
         * rest goes straight into a pipe that had room, as each message did once. */
        queued += queued > 0 ? batch : batch > PIPE_DEFAULT_BYTES ? batch - PIPE_DEFAULT_BYTES : 0;
        if (p->input_limit == 0 || queued == 0)
                return false;
        for (size_t i = 0; i < n_parts; i++)
                len += parts[i].iov_len;
        if (queued < p->input_limit && len <= p->input_limit - queued)
                return false;
        if (!p->input_full)
                log_emit(p->log, LOG_WARNING, &(struct log_subject){ .server = p->name },
                         "not reading its stdin: %zu bytes queued for it; refusing what would pass serverInputLimit (%zu bytes)",
                         queued, p->input_limit);
        p->input_full = true;
        return true;
}

/* The batch, written at once as far as the server takes it when nothing is queued before
 * it; the rest is queued on the bufferevent, which writes it when the pipe has room. */
static int flush_batch(struct pipe_transport *p) {
        struct evbuffer *out = bufferevent_get_output(p->to);
        evutil_socket_t fd = bufferevent_getfd(p->to);
        size_t queued = evbuffer_get_length(out);

        if (evbuffer_get_length(p->batch) == 0)
                return 0;
        if (queued == 0 && fd >= 0)
                (void)evbuffer_write(p->batch, fd); /* EAGAIN or EPIPE: the bufferevent meets it too */
        if (evbuffer_get_length(p->batch) > 0 && evbuffer_add_buffer(out, p->batch) < 0)
                return -ENOMEM;
        watch_input(p, queued);
        return 0;
}

/* Each message written by a system call of its own woke the server for each, and on a
 * virtual machine a wake-up costs the waker more than the write: with many clients, most
 * of the daemon's system time. */
static void on_flush(evutil_socket_t fd, short what, void *userdata) {
        struct pipe_transport *p = userdata;

        if (flush_batch(p) < 0) {
                /* Part of a line may have gone out, and what follows would corrupt it. Its
                 * stdin is closed instead: the server ends, and is seen to, as any that exits. */
                log_emit(p->log, LOG_ERR, &(struct log_subject){ .server = p->name },
                         "out of memory writing to the server's stdin; closing it");
                p->input_closed = true;
                shut_input(p);
        }
}

/* Gathered for the end of this pass of the loop (on_flush(), at the clients' priority, runs
 * after the events already reported): one write for the calls of many clients. */
static int add_to_batch(struct pipe_transport *p, const struct iovec *parts, size_t n_parts) {
        size_t len = 0;

        for (size_t i = 0; i < n_parts; i++)
                len += parts[i].iov_len;
        if (evbuffer_expand(p->batch, len) < 0)
                return -ENOMEM;
        if (evbuffer_get_length(p->batch) == 0)
                event_active(p->flush, EV_WRITE, 0);
        for (size_t i = 0; i < n_parts; i++)
                if (evbuffer_add(p->batch, parts[i].iov_base, parts[i].iov_len) < 0)
                        return -ENOMEM;
        return 0;
}

static int pipe_send(struct server_transport *t, const struct iovec *parts, size_t n_parts) {
        struct pipe_transport *p = pipe_of(t);

        if (p->input_closed)
                return -EPIPE;
        if (over_input_limit(p, parts, n_parts))
                return -ENOBUFS;
        if (add_to_batch(p, parts, n_parts) < 0) {
                /* Part of the line may have gone out, and what follows would corrupt it. Its
                 * stdin is closed instead: the server ends, and is seen to, as any that exits. */
                log_emit(p->log, LOG_ERR, &(struct log_subject){ .server = p->name },
                         "out of memory writing to the server's stdin; closing it");
                p->input_closed = true;
                shut_input(p);
                return -ENOMEM;
        }
        return 0;
}

static void pipe_close_input(struct server_transport *t) {
        struct pipe_transport *p = pipe_of(t);

        if (p->input_closed)
                return;
        p->input_closed = true;
        on_flush(-1, 0, p); /* what was sent before goes before the end of its input */
        if (pipe_queued(t) == 0)
                shut_input(p);
}

static void pipe_limit_input(struct server_transport *t, size_t limit, uint64_t stall_usec) {
        struct pipe_transport *p = pipe_of(t);

        p->input_limit = limit;
        p->stall_usec = stall_usec;
}

static void pipe_free(struct server_transport *t) {
        struct pipe_transport *p = pipe_of(t);

        if (!p)
                return;
        if (p->to && p->batch && evbuffer_get_length(bufferevent_get_output(p->to)) == 0 && bufferevent_getfd(p->to) >= 0)
                (void)evbuffer_write(p->batch, bufferevent_getfd(p->to)); /* as far as it takes it, as if sent at once */
        if (p->flush)
                event_free(p->flush);
        if (p->batch)
                evbuffer_free(p->batch);
        if (p->input_taken)
                evbuffer_remove_cb_entry(bufferevent_get_output(p->to), p->input_taken);
        if (p->to)
                bufferevent_free(p->to);
        if (p->stall_timer)
                event_free(p->stall_timer);
        if (p->trim_timer)
                event_free(p->trim_timer);
        if (p->from)
                event_free(p->from);
        if (p->from_fd >= 0)
                close(p->from_fd);
        framer_done(&p->framer);
        free(p);
}

static const struct server_transport_ops pipe_ops = {
        .send = pipe_send,
        .close_input = pipe_close_input,
        .queued = pipe_queued,
        .limit_input = pipe_limit_input,
        .stop_receiving = pipe_stop_receiving,
        .free = pipe_free,
};

struct server_transport *transport_pipe_new(struct event_base *base, int to_fd, int from_fd, size_t max_line,
                                            const char *name, const struct logger *log) {
        struct pipe_transport *p = calloc(1, sizeof *p);

        if (!p) {
                close(to_fd);
                close(from_fd);
                return NULL;
        }
        *p = (struct pipe_transport){ .t.ops = &pipe_ops, .log = log, .name = name, .from_fd = from_fd };
        framer_init(&p->framer, max_line);
        framer_keep(&p->framer, SIZE_MAX);
        p->to = bufferevent_socket_new(base, to_fd, BEV_OPT_CLOSE_ON_FREE);
        if (!p->to)
                close(to_fd);
        p->from = event_new(base, from_fd, EV_READ | EV_PERSIST, on_from_readable, p);
        p->stall_timer = evtimer_new(base, on_stall_timer, p);
        p->trim_timer = evtimer_new(base, on_trim_timer, p);
        p->batch = evbuffer_new();
        p->flush = event_new(base, -1, 0, on_flush, p);
        if (p->to)
                p->input_taken = evbuffer_add_cb(bufferevent_get_output(p->to), on_input_taken, p);
        if (!p->to || !p->from || !p->stall_timer || !p->trim_timer || !p->batch || !p->flush || !p->input_taken) {
                pipe_free(&p->t);
                return NULL;
        }
        bufferevent_set_max_single_write(p->to, PIPE_WRITE_CHUNK);
        bufferevent_setcb(p->to, NULL, on_to_write, on_to_event, p);
        event_add(p->from, NULL);
        bufferevent_enable(p->to, EV_WRITE);
        return &p->t;
}
