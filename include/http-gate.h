/* The HTTP front door's admission gate: what a connection may make the daemon hold before
 * its peer has proved who it is. libevent 2.1's evhttp reads a request's whole body before
 * any callback of ours runs (its header callback cannot be set on a server's requests), so
 * the gate sits in front of evhttp on each accepted connection: read watermarks keep
 * evhttp's read callback from running, and the socket from reading more than a head
 * (HTTP_GATE_MAX_HEAD; the rest stays in the kernel), while a callback on the connection's
 * input looks for the end of the first request's head. When it is whole the gate decides,
 * before evhttp has read a byte of it:
 *   - admitted (the endpoint's path, an allowed Origin or none, and a principal: a bearer
 *     token that matches on TCP, any peer on a Unix socket): the connection is proven and
 *     the gate leaves it; evhttp reads it, body and later requests, as it would without us
 *     (http-front.c checks each request again);
 *   - anything else, whatever its path or method: evhttp is given the head without its
 *     body's framing and with "Connection: close", so that http-front.c answers it (404, 403, 401,
 *     405, /healthz...) with nothing buffered; what follows is dropped as it comes.
 *
 * An unproven connection must send its head within HTTP_GATE_HEAD_SECONDS of its accept,
 * however slowly its bytes trickle, and unproven connections are capped per peer (an
 * address, or a uid on a Unix socket) and in total, below the descriptors reserved for the
 * Unix and control sockets; at a cap the oldest unproven connection (of that peer, else of
 * all) is closed, so that connections that never finish their heads cannot lock anyone out.
 * Each closing is logged through the front's refusal log (refusal-log.h). Together the
 * unproven connections hold at most max_unproven heads of HTTP_GATE_MAX_HEAD bytes.
 *
 * The head reader is pure (http_head_parse(), http_head_admits()) and reads as evhttp does
 * where it matters: the first of a repeated header, Content-Length as strtoll() reads it,
 * Transfer-Encoding: chunked, the methods that may have a body. Where the two could read a
 * head differently (folded lines, a broken request line) the head is not admitted, so a
 * body only ever follows a head this reader admitted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

struct bufferevent;
struct http_config;
struct http_front;
struct http_oauth;

/* A request head's bytes at most, its blank line included (evhttp's own limit is 64 KiB). */
#define HTTP_GATE_MAX_HEAD (64 * 1024 + 4)
/* An unproven connection's time for its first request head, from its accept. */
#define HTTP_GATE_HEAD_SECONDS 10

enum http_head_body {
        HTTP_HEAD_NO_BODY,
        HTTP_HEAD_LENGTH,   /* Content-Length bytes follow */
        HTTP_HEAD_CHUNKED,
};

/* What the gate reads of a request head (pointers into the text given to the parser). */
struct http_head {
        const char *method;
        const char *target;
        const char *authorization;   /* NULL: absent */
        const char *origin;          /* NULL: absent */
        enum http_head_body body;
        uint64_t length;             /* HTTP_HEAD_LENGTH */
        bool malformed;              /* a request line or header line evhttp might read otherwise */
};

/* Parses text (a whole head, its lines ended by "\n" or "\r\n", without the blank line;
 * modified in place, NUL-terminated at len). */
void http_head_parse(char *text, size_t len, struct http_head *ret);
/* Whether a body may follow head: well formed, the endpoint's path, an allowed Origin (or
 * none), and on TCP (unix_peer false) a bearer token of h or a JWT oauth accepts (NULL: none). */
bool http_head_admits(const struct http_config *h, struct http_oauth *oauth, const struct http_head *head,
                      bool unix_peer);

enum http_gate_state {
        HTTP_GATE_HEAD,       /* its first head on the way: evhttp reads nothing yet */
        HTTP_GATE_ANSWERING,  /* a head not admitted, left to evhttp without its body */
        HTTP_GATE_CLOSING,    /* closed by the gate (deadline, caps, a head too long) */
        HTTP_GATE_PROVEN,     /* a head admitted: the gate leaves the connection */
};

struct http_gate;
TAILQ_HEAD(http_gate_list, http_gate);

/* The unproven connections, one list per front. */
struct http_gates {
        struct http_front *front;
        struct http_gate_list unproven;   /* in the order they were accepted: oldest first */
        size_t n_unproven;
        size_t unproven_peak;             /* the most since memory was last given back */
        size_t max_unproven;              /* in total */
        size_t max_unproven_per_peer;
};

/* The caps for a process with fd_limit descriptors of which reserve are kept for others
 * (listen_fd_reserve()): half of what neither the reserve nor a second reserve for
 * authorized connections takes, from 8 to 256 in total, and at most 32, and half the total,
 * per peer. Pure, for tests. */
size_t http_gates_max_unproven(int fd_limit, int reserve);
size_t http_gates_max_unproven_per_peer(size_t max_unproven);

void http_gates_init(struct http_gates *g, struct http_front *front, int fd_limit, int reserve);
/* Puts a gate on a connection just accepted (evhttp's bufferevent hook: bev is the socket's
 * bufferevent it is to use); returns bev (out of memory: never read). Closes the oldest
 * unproven connection past its grace when the total cap is reached. */
struct bufferevent *http_gates_wrap(struct http_gates *g, struct bufferevent *bev);
/* Whether the unproven connections are at their cap with none past its grace to close for
 * a newer one: the listeners wait meanwhile (http-listen.c). */
bool http_gates_full(struct http_gates *g);
/* After evhttp_free(): what is left of the gates (connections evhttp freed before their first look). */
void http_gates_done(struct http_gates *g);
