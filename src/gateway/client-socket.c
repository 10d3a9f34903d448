/* A client over a Unix socket; see client-socket.h. */
#include "client-socket.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "daemon-handle.h"
#include "framing.h"
#include "jsonrpc.h"
#include "write-now.h"

/* Bytes written per callback, so a multi-MiB message takes few system calls (the default
 * is 16 KiB). */
#define CLIENT_WRITE_CHUNK (256 * 1024)
/* Bytes read per callback, onto the stack first (on_readable()). */
#define CLIENT_READ_CHUNK (16 * 1024)
struct socket_transport {
        struct bufferevent *bev;     /* writes */
        struct event *readable;      /* the socket, read here rather than by the bufferevent */
        struct framer framer;        /* what was read and not yet taken as messages; holds a
                                      * buffer only while some is unread (framer_keep(0)) */
};

static struct socket_transport *transport_of(const struct client *c) {
        return c->transport;
}

static size_t socket_unsent(const struct client *c) {
        return evbuffer_get_length(bufferevent_get_output(transport_of(c)->bev));
}

static int socket_send(struct client *c, const struct iovec *parts, size_t n_parts, bool response, json_object *id,
                       const struct loan_offer *offer) {
        return write_now(transport_of(c)->bev, parts, n_parts, offer);
}

static void socket_stop_reading(struct client *c) {
        event_del(transport_of(c)->readable);
}

static void socket_stop(struct client *c) {
        struct socket_transport *t = transport_of(c);

        event_del(t->readable);
        bufferevent_disable(t->bev, EV_READ | EV_WRITE);
}

static void socket_describe(const struct client *c, json_object *row) {
        json_object_object_add(row, "transport", json_object_new_string("unix"));
}

static void transport_free(struct socket_transport *t) {
        if (!t)
                return;
        if (t->readable)
                event_free(t->readable);
        framer_done(&t->framer);
        if (t->bev)
                bufferevent_free(t->bev); /* closes the socket */
        free(t);
}

static void socket_free(struct client *c) {
        transport_free(c->transport);
        c->transport = NULL;
}

static void socket_read_end(struct client *c);

static const struct client_transport_ops socket_ops = {
        .name = "unix socket",
        .send = socket_send,
        .unsent = socket_unsent,
        .stop_reading = socket_stop_reading,
        .read_end = socket_read_end,
        .stop = socket_stop,
        .describe = socket_describe,
        .free = socket_free,
};

/* Frames every complete line in the input buffer and hands each to the client. */
static void process_input(struct client *c, bool at_eof) {
        struct socket_transport *t = transport_of(c);
        struct jsonrpc_msg m;
        struct frame fr;

        while (c->state != CLIENT_JUSTFREE) {
                enum frame_kind kind = framer_next(&t->framer, NULL, at_eof, &fr);

                if (kind == FRAME_NONE)
                        break;
                if (kind == FRAME_OVERSIZE) {
                        framer_consume(&t->framer, &fr); /* its bytes go at once */
                        client_receive_oversize(c, t->framer.max_line);
                        continue;
                }
                /* Parsed, then its bytes dropped before it is handled, as client.c did before
                 * the transport was its own: a long line is not held while its call waits. */
                jsonrpc_parse(daemon_parser(c->daemon), fr.data, fr.len, &m);
                framer_consume(&t->framer, &fr);
                client_handle(c, &m);
                jsonrpc_msg_done(&m);
        }
}

/* A Unix socket polls POLLHUP once the peer has closed both directions; after a mere
 * shutdown(SHUT_WR) it still reads answers. */
static bool peer_closed(struct client *c) {
        struct pollfd p = { .fd = bufferevent_getfd(transport_of(c)->bev), .events = POLLOUT };

        return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void on_end_of_input(struct client *c) {
        process_input(c, true);
        /* Nothing owed to it: whether it still reads makes no difference, and a burst of
         * closes is spared a poll() each. */
        if (c->state == CLIENT_JUSTFREE)
                return;
        client_end_of_input(c, (client_in_flight(c) > 0 || socket_unsent(c) > 0) && peer_closed(c));
}

/* Its input, read here rather than by the bufferevent: libevent's read asks the kernel how
 * much there is (ioctl FIONREAD) and takes a 4 KiB buffer before each read, even the one
 * that finds the end of input, which 15,000 clients closing at once paid for each (a
 * system call, a malloc and fresh pages). Read onto the stack, what came is copied into the
 * framer's buffer, which is given back once every line in it was taken: an idle client
 * holds no input buffer. One read; true when something came and it may
 * read on. */
static bool read_some(struct client *c, int fd) {
        struct socket_transport *t = transport_of(c);
        char buf[CLIENT_READ_CHUNK];
        ssize_t n = read(fd, buf, sizeof buf);

        if (n > 0) {
                if (framer_add(&t->framer, buf, (size_t)n) < 0) {
                        client_log(c, LOG_WARNING, "out of memory reading from the client; connection closed");
                        client_set_state(c, CLIENT_JUSTFREE);
                        return false;
                }
                process_input(c, false);
                return c->state == CLIENT_ACTIVE;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return false;
        event_del(t->readable);
        if (n == 0) {
                on_end_of_input(c);
                return false;
        }
        client_log(c, LOG_DEBUG, "connection error: %s", strerror(errno));
        client_set_state(c, CLIENT_JUSTFREE);
        return false;
}

/* EV_CLOSED: the peer shut its writing down (EPOLLRDHUP). No longer watched but queued
 * (client_queue_end()): a socket watched level-triggered would be reported at every poll
 * until read to its end, keep an event active for good and starve the spawns' lower
 * priority. */
static void on_readable(evutil_socket_t fd, short what, void *userdata) {
        struct client *c = userdata;

        if (what & EV_CLOSED) {
                event_del(transport_of(c)->readable);
                client_queue_end(c);
                return;
        }
        (void)read_some(c, fd);
}

static void socket_read_end(struct client *c) {
        int fd = event_get_fd(transport_of(c)->readable);

        while (c->state == CLIENT_ACTIVE && read_some(c, fd))
                ;
}

static void on_write(struct bufferevent *bev, void *userdata) {
        client_output_flushed(userdata);
}

/* The bufferevent's events: only its writing is enabled. */
static void on_event(struct bufferevent *bev, short what, void *userdata) {
        struct client *c = userdata;

        if (what & BEV_EVENT_EOF) {
                on_end_of_input(c);
                return;
        }
        if (what & BEV_EVENT_ERROR) {
                client_log(c, LOG_DEBUG, "connection error: %s", strerror(EVUTIL_SOCKET_ERROR()));
                client_set_state(c, CLIENT_JUSTFREE);
        }
}

static struct socket_transport *transport_new(struct daemon *d, int fd) {
        struct socket_transport *t = calloc(1, sizeof *t);

        if (!t) {
                close(fd);
                return NULL;
        }
        t->bev = bufferevent_socket_new(daemon_event_base(d), fd, BEV_OPT_CLOSE_ON_FREE);
        if (!t->bev) {
                close(fd);
                free(t);
                return NULL;
        }
        framer_init(&t->framer, daemon_config(d)->max_message_size);
        framer_keep(&t->framer, 0);
        return t;
}

struct client *client_socket_new(struct daemon *d, int fd, const struct ucred *peer, enum listen_role role) {
        struct principal principal;
        struct socket_transport *t;
        struct client *c;

        if (principal_resolve(fd, peer, &principal) < 0) {
                principal_done(&principal);
                close(fd);
                return NULL;
        }
        t = transport_new(d, fd);
        c = t ? client_new(d, role, &socket_ops, t, &principal) : NULL;
        principal_done(&principal); /* empty when the client took it */
        if (!c) {
                transport_free(t);
                return NULL;
        }
        t->readable = event_new(daemon_event_base(d), fd, EV_READ | EV_CLOSED | EV_PERSIST, on_readable, c);
        if (!t->readable) {
                client_set_state(c, CLIENT_JUSTFREE); /* freed after this loop iteration, as any */
                return NULL;
        }
        bufferevent_set_max_single_write(t->bev, CLIENT_WRITE_CHUNK);
        bufferevent_setcb(t->bev, NULL, on_write, on_event, c);
        bufferevent_enable(t->bev, EV_WRITE);
        event_add(t->readable, NULL);
        return c;
}
