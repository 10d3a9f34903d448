/* Client connections; see client.h. */
#include "client.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "log.h"
#include "time-util.h"
#include "write-now.h"

/* Bytes written per callback, so a multi-MiB message takes few system calls (the default
 * is 16 KiB). */
#define CLIENT_WRITE_CHUNK (256 * 1024)
/* Bytes read per callback, onto the stack first (on_readable()). */
#define CLIENT_READ_CHUNK (16 * 1024)

static const char *const state_names[] = {
        [CLIENT_ACTIVE] = "active",
        [CLIENT_DRAINING] = "draining",
        [CLIENT_JUSTFREE] = "justfree",
};

const char *client_state_name(enum client_state state) {
        return state_names[state];
}

void client_set_state(struct client *c, enum client_state state) {
        struct daemon *d = c->daemon;

        if (c->state == state)
                return;
        TAILQ_REMOVE(&d->clients[c->state], c, entry);
        d->client_count[c->state]--;
        c->state = state;
        TAILQ_INSERT_TAIL(&d->clients[state], c, entry);
        d->client_count[state]++;
        if (state == CLIENT_JUSTFREE) {
                event_del(c->readable);
                bufferevent_disable(c->bev, EV_READ | EV_WRITE);
        }
        daemon_clients_changed(d);
}

void client_log(struct client *c, int priority, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int r;

        if (priority > c->daemon->log.max_priority)
                return;
        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r >= 0)
                log_emit(&c->daemon->log, priority, &(struct log_subject){ .client = c->id }, "%s", text);
}

static size_t unsent(struct client *c) {
        return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/* A draining client closes once nothing is owed to it any more. */
static void maybe_finish(struct client *c) {
        if (c->state == CLIENT_DRAINING && c->pending == 0 && unsent(c) == 0)
                client_set_state(c, CLIENT_JUSTFREE);
}

bool client_hold_request(struct client *c, json_object *id) {
        unsigned limit = c->daemon->config.max_in_flight;
        json_object *data;
        char message[128];

        if (c->pending < limit) {
                c->pending++;
                c->held++;
                return true;
        }
        if (!c->told_in_flight) /* once: a client past it may send thousands */
                client_log(c, LOG_WARNING, "client reached maxInFlight (%u requests held); refusing more until some are answered",
                           limit);
        c->told_in_flight = true;
        snprintf(message, sizeof message, "too many requests in flight (maxInFlight %u); wait for answers before sending more",
                 limit);
        data = json_object_new_object();
        json_object_object_add(data, "maxInFlight", json_object_new_int64(limit));
        client_reply_error(c, id, JSONRPC_INTERNAL_ERROR, message, data);
        return false;
}

void client_request_done(struct client *c) {
        if (c->pending > 0)
                c->pending--;
        maybe_finish(c);
}

/* After a message: a client that does not read is dropped; a draining one whose last
 * answer went out at once is done. */
static void after_send(struct client *c, int r) {
        size_t limit = c->daemon->config.client_output_limit;

        if (r < 0) {
                /* Part of the line may have gone out: what follows would corrupt it. */
                client_log(c, LOG_ERR, "out of memory queueing a message; disconnecting");
                client_set_state(c, CLIENT_JUSTFREE);
                return;
        }
        if (unsent(c) > limit) {
                client_log(c, LOG_WARNING, "client is not reading its replies (%zu bytes unsent, limit %zu); disconnecting",
                           unsent(c), limit);
                client_set_state(c, CLIENT_JUSTFREE);
        }
        maybe_finish(c);
}

void client_send(struct client *c, json_object *msg) {
        struct iovec parts[2];
        int r;

        if (c->state == CLIENT_JUSTFREE) {
                json_object_put(msg);
                return;
        }
        r = jsonrpc_line(msg, parts);
        if (r >= 0)
                r = write_now(c->bev, parts, 2);
        json_object_put(msg);
        after_send(c, r);
}

void client_send_result_text(struct client *c, json_object *id, const char *result, size_t len) {
        struct iovec parts[5];
        int r;

        if (c->state == CLIENT_JUSTFREE)
                return;
        r = jsonrpc_result_text_line(id, result, len, parts);
        if (r >= 0)
                r = write_now(c->bev, parts, 5);
        after_send(c, r);
}

void client_reply_result(struct client *c, json_object *id, json_object *result) {
        client_send(c, jsonrpc_result(id, result));
}

void client_reply_error(struct client *c, json_object *id, int code, const char *message, json_object *data) {
        client_send(c, jsonrpc_error(id, code, message, data));
}

static void answer_oversize(struct client *c) {
        char msg[160];

        snprintf(msg, sizeof msg, "Invalid Request: message exceeds the %zu-byte line limit and was discarded",
                 c->framer.max_line);
        client_log(c, LOG_NOTICE, "discarded a message over the %zu-byte line limit", c->framer.max_line);
        client_reply_error(c, NULL, JSONRPC_INVALID_REQUEST, msg, NULL);
}

/* Frames, classifies and dispatches every complete line in the input buffer. */
static void process_input(struct client *c, bool at_eof) {
        struct evbuffer *in = c->input;
        struct frame fr;

        while (c->state != CLIENT_JUSTFREE) {
                enum frame_kind kind = framer_next(&c->framer, in, at_eof, &fr);
                struct jsonrpc_msg m;

                if (kind == FRAME_NONE)
                        break;
                if (kind == FRAME_OVERSIZE) {
                        framer_consume(&c->framer, &fr); /* its bytes go at once */
                        answer_oversize(c);
                        continue;
                }
                jsonrpc_parse(&c->daemon->parser, fr.data, fr.len, &m);
                framer_consume(&c->framer, &fr);
                session_handle(c, &m);
                jsonrpc_msg_done(&m);
        }
}

static void on_write(struct bufferevent *bev, void *userdata) {
        maybe_finish(userdata);
}

void client_drain(struct client *c) {
        if (c->state != CLIENT_ACTIVE)
                return;
        event_del(c->readable);
        client_set_state(c, CLIENT_DRAINING);
        /* It can no longer answer what servers asked of it: the daemon tells them. */
        daemon_client_draining(c->daemon, c);
        maybe_finish(c);
}

/* A Unix socket polls POLLHUP once the peer has closed both directions; after a mere
 * shutdown(SHUT_WR) it still reads answers. */
static bool peer_closed(struct client *c) {
        struct pollfd p = { .fd = bufferevent_getfd(c->bev), .events = POLLOUT };

        return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void on_end_of_input(struct client *c) {
        process_input(c, true);
        /* Nothing owed to it: whether it still reads makes no difference, and a burst of
         * closes is spared a poll() each. */
        if ((c->pending == 0 && unsent(c) == 0) || peer_closed(c)) {
                /* Nobody to answer: its calls are cancelled downstream now, not when an
                 * answer finally fails to be written. */
                client_log(c, LOG_DEBUG, "connection closed by the client");
                client_set_state(c, CLIENT_JUSTFREE);
                return;
        }
        /* Half-close: the peer sent all it will; answer it, then close. */
        client_log(c, LOG_DEBUG, "end of input");
        client_drain(c);
}

/* Its input, read here rather than by the bufferevent: libevent's read asks the kernel how
 * much there is (ioctl FIONREAD) and takes a 4 KiB buffer before each read, even the one
 * that finds the end of input, which 15,000 clients closing at once paid for each (a
 * system call, a malloc and fresh pages). Read onto the stack, what came is copied into the
 * input buffer in a chain its own size. */
/* One read; true when something came and it may read on. */
static bool read_some(struct client *c, int fd) {
        char buf[CLIENT_READ_CHUNK];
        ssize_t n = read(fd, buf, sizeof buf);

        if (n > 0) {
                if (evbuffer_add(c->input, buf, (size_t)n) < 0) {
                        client_log(c, LOG_WARNING, "out of memory reading from the client; connection closed");
                        client_set_state(c, CLIENT_JUSTFREE);
                        return false;
                }
                process_input(c, false);
                return c->state == CLIENT_ACTIVE;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return false;
        event_del(c->readable);
        if (n == 0) {
                on_end_of_input(c);
                return false;
        }
        client_log(c, LOG_DEBUG, "connection error: %s", strerror(errno));
        client_set_state(c, CLIENT_JUSTFREE);
        return false;
}

static void dequeue_end(struct client *c) {
        if (!c->end_queued)
                return;
        TAILQ_REMOVE(&c->daemon->clients_ended, c, end_entry);
        c->end_queued = false;
}

/* EV_CLOSED: the peer shut its writing down (EPOLLRDHUP). No longer watched: a socket
 * watched level-triggered would be reported at every poll until read to its end, keep an
 * event active for good and starve the spawns' lower priority. */
static void on_readable(evutil_socket_t fd, short what, void *userdata) {
        struct client *c = userdata;

        if (what & EV_CLOSED) {
                event_del(c->readable);
                c->end_queued = true;
                TAILQ_INSERT_TAIL(&c->daemon->clients_ended, c, end_entry);
                return;
        }
        (void)read_some(c, fd);
}

void client_read_end(struct client *c) {
        int fd = event_get_fd(c->readable);

        dequeue_end(c);
        while (c->state == CLIENT_ACTIVE && read_some(c, fd))
                ;
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

static void log_connected(struct client *c) {
        const struct principal *p = &c->principal;

        client_log(c, LOG_INFO, "%s client connected (pid %d, command %s, uid %u%s%s%s, gid %u)",
                   c->role == LISTEN_CONTROL ? "control" : "MCP", (int)p->pid, p->comm[0] ? p->comm : "unknown",
                   (unsigned)p->uid, p->user ? " (" : "", p->user ?: "", p->user ? ")" : "", (unsigned)p->gid);
}

struct client *client_new(struct daemon *d, int fd, const struct ucred *peer, enum listen_role role) {
        struct client *c = calloc(1, sizeof *c);

        if (!c || principal_resolve(fd, peer, &c->principal) < 0) {
                free(c);
                close(fd);
                return NULL;
        }
        c->bev = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
        c->readable = c->bev ? event_new(d->base, fd, EV_READ | EV_CLOSED | EV_PERSIST, on_readable, c) : NULL;
        c->input = c->readable ? evbuffer_new() : NULL;
        if (!c->input) {
                if (c->readable)
                        event_free(c->readable);
                if (c->bev)
                        bufferevent_free(c->bev); /* closes fd */
                else
                        close(fd);
                principal_done(&c->principal);
                free(c);
                return NULL;
        }
        c->daemon = d;
        c->id = ++d->next_client_id;
        c->role = role;
        c->connected_at = now_usec();
        c->state = CLIENT_ACTIVE;
        framer_init(&c->framer, d->config.max_message_size);
        session_init(&c->session);
        TAILQ_INIT(&c->routes);
        TAILQ_INSERT_TAIL(&d->clients[CLIENT_ACTIVE], c, entry);
        d->client_count[CLIENT_ACTIVE]++;

        bufferevent_set_max_single_write(c->bev, CLIENT_WRITE_CHUNK);
        bufferevent_setcb(c->bev, NULL, on_write, on_event, c);
        bufferevent_enable(c->bev, EV_WRITE);
        event_add(c->readable, NULL);
        log_connected(c);
        daemon_clients_changed(d);
        return c;
}

unsigned client_in_flight(const struct client *c) {
        return c->pending;
}

uint64_t client_requests_held(const struct client *c) {
        return c->held;
}

const struct principal *client_principal(const struct client *c) {
        return &c->principal;
}

void client_access_who(const struct client *c, struct access_who *ret) {
        *ret = (struct access_who){
                .uid = c->principal.uid,
                .gid = c->principal.gid,
                .groups = c->principal.groups,
                .n_groups = c->principal.n_groups,
                .profile = NULL, /* the principal only: the profile it chose is client-access.c's, which
                                  * sets it where a decision needs it (compute_class()) */
        };
}

void client_free(struct client *c) {
        struct daemon *d;

        if (!c)
                return;
        d = c->daemon;
        TAILQ_REMOVE(&d->clients[c->state], c, entry);
        d->client_count[c->state]--;
        dequeue_end(c);
        session_done(&c->session);
        client_access_done(&c->access);
        framer_done(&c->framer);
        principal_done(&c->principal);
        event_free(c->readable);
        evbuffer_free(c->input);
        bufferevent_free(c->bev);
        free(c);
}
