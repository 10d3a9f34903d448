/* The bytes between the daemon and one server, behind a small table of operations (as
 * pgbouncer's SBufIO puts its sockets behind one): the connection to the server (server-conn.c)
 * hands it whole messages and gets whole lines back, and never knows what carries them.
 * The pipe transport (transport-pipe.c) is a server's stdin and stdout; the HTTP one
 * (transport-http.c) a remote server's Streamable HTTP or HTTP+SSE endpoint.
 *
 * A transport calls its connection back through events: the lines it received, in order;
 * a line over the size limit; and, once, that the server broke the connection. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct event_base;
struct loan_offer;
struct logger;
struct server_transport;

struct server_transport_events {
        /* One message from the server, without its newline; valid during the call, and
         * longer for whoever takes a loan of it from offer (loan.h; NULL: none offered). */
        void (*line)(const char *line, size_t len, const struct loan_offer *offer, void *userdata);
        /* A message over the size limit: head holds what was taken of it, at least its first
         * max_line bytes unless memory ran out; the rest is dropped. */
        void (*oversize)(const char *head, size_t len, void *userdata);
        /* The server closed its side, stopped taking what is sent, or could not be read:
         * nothing more will be received. Once; why is valid during the call. */
        void (*broken)(const char *why, void *userdata);
        /* The answer to request id (the connection's own numbering) ended, and its response
         * may not have been in it: if the request still waits, it has failed. what is what
         * came instead, in words anyone may read ("HTTP 202 and no body"). Transports that
         * cannot tell (a pipe) never call it; may be NULL. */
        void (*unanswered)(int64_t id, const char *what, void *userdata);
};

struct server_transport_ops {
        /* Sends one message, its parts in order. 0 (written or queued), -EPIPE once the
         * input is closed, -ENOBUFS past the input limit (one message goes out whole when
         * nothing is queued), or -ENOMEM: then part of it may have gone out, and the input
         * is closed so that nothing lands after that part. */
        int (*send)(struct server_transport *t, const struct iovec *parts, size_t n_parts);
        /* No more messages: the server sees the end of its input once what is queued went. */
        void (*close_input)(struct server_transport *t);
        /* Bytes accepted by send and not yet taken by the server. */
        size_t (*queued)(const struct server_transport *t);
        /* Past limit queued bytes a send is refused; a queue the server takes nothing of for
         * stall_usec breaks the connection. Either 0: no bound. */
        void (*limit_input)(struct server_transport *t, size_t limit, uint64_t stall_usec);
        /* Nothing more from the server is wanted; discard: what it still sends fails at its
         * end at once (a server blocked writing the rest of a huge line is not left waiting). */
        void (*stop_receiving)(struct server_transport *t, bool discard);
        void (*free)(struct server_transport *t);
};

/* What every transport starts with; the connection reads ops and sets events once. */
struct server_transport {
        const struct server_transport_ops *ops;
        const struct server_transport_events *events;
        void *userdata;
        /* During events->line: the request (the connection's own id) on whose answer the
         * message came, a server's request made for that call; 0 when it cannot be told (a
         * pipe, an HTTP GET stream). */
        int64_t related;
};

/* The connection taking t: from now on t reports to events. Called once, before the loop
 * runs again, so nothing received is reported to no one. */
static inline void server_transport_attach(struct server_transport *t, const struct server_transport_events *events,
                                           void *userdata) {
        t->events = events;
        t->userdata = userdata;
}

/* A server's stdin (to_fd, written) and stdout (from_fd, read, cut into lines of at most
 * max_line bytes); both non-blocking, both taken (closed on failure). name is the server's,
 * for logs. NULL when out of memory. */
struct server_transport *transport_pipe_new(struct event_base *base, int to_fd, int from_fd, size_t max_line,
                                            const char *name, const struct logger *log);
