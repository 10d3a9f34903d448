/* The HTTP front door's admission gate; see http-gate.h. */
#include "http-gate.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "daemon-handle.h"
#include "http-config.h"
#include "http-front.h"
#include "http-request.h"
#include "macro.h"
#include "refusal-log.h"

/* Unproven connections at their peak, at least, for their end to give memory back. */
#define GATE_TRIM_PEAK 32
/* The most unproven connections one peer may hold. */
#define GATE_MAX_PER_PEER 32
/* A connection's time to show its head before it may be closed to make room for others:
 * a client sends it as it connects, in the same round trip. */
#define GATE_GRACE_MS 500

enum gate_timer {
        GATE_TIMER_LOOK,      /* the first look at a new connection: its evhttp connection, its peer */
        GATE_TIMER_GRACE,     /* from now on it may be closed to make room */
        GATE_TIMER_DEADLINE,  /* its head is due */
        GATE_TIMER_CLOSE,     /* closed from inside a callback of its input: done on the loop */
};

/* A connection while it is unproven; freed when it is proven or ends. */
struct http_gate {
        TAILQ_ENTRY(http_gate) link;      /* in gates->unproven */
        struct http_gates *gates;
        struct bufferevent *bev;          /* the socket's, evhttp's */
        struct evhttp_connection *evcon;  /* known from the first look */
        struct evbuffer_cb_entry *watching;
        struct event *timer;
        enum gate_timer timer_does;
        enum http_gate_state state;
        bool held;                        /* a reference on bev, until the first look */
        bool in_grace;                    /* not to be closed to make room yet */
        size_t line_start, scan_from;     /* the head read so far, in the input */
        bool peer_known;
        struct refusal_peer peer;
        const char *close_why;            /* set: to be closed as soon as it may */
};

static void connection_closed(struct evhttp_connection *evcon, void *userdata);

/* ---- reading a head ---- */

static char *trim(char *s) {
        size_t n;

        s += strspn(s, " ");
        n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                s[--n] = '\0';
        return s;
}

/* The methods evhttp reads a body for (evhttp_method_may_have_body()); any other has none. */
static bool may_have_body(const char *method) {
        static const char *const with_body[] = { "GET", "POST", "PUT", "DELETE", "OPTIONS", "CONNECT", "PATCH" };

        for (size_t i = 0; i < ARRAY_SIZE(with_body); i++)
                if (strcmp(method, with_body[i]) == 0)
                        return true;
        return false;
}

static void header_seen(struct http_head *h, const char *name, const char *value, const char **content_length,
                        const char **transfer_encoding) {
        const char **slot = strcasecmp(name, "Authorization") == 0       ? &h->authorization
                            : strcasecmp(name, "Origin") == 0            ? &h->origin
                            : strcasecmp(name, "Content-Length") == 0    ? content_length
                            : strcasecmp(name, "Transfer-Encoding") == 0 ? transfer_encoding
                                                                         : NULL;

        if (slot && !*slot) /* evhttp_find_header() finds the first */
                *slot = value;
}

/* As evhttp_get_body() decides it. */
static void read_framing(struct http_head *h, const char *content_length, const char *transfer_encoding) {
        char *end;
        long long n;

        h->body = HTTP_HEAD_NO_BODY;
        if (!h->method || !may_have_body(h->method))
                return;
        if (transfer_encoding && strcasecmp(transfer_encoding, "chunked") == 0) {
                h->body = HTTP_HEAD_CHUNKED;
                return;
        }
        if (!content_length)
                return;
        errno = 0;
        n = strtoll(content_length, &end, 10);
        if (!*content_length || *end || n < 0 || errno) {
                h->malformed = true; /* evhttp answers 400 and reads nothing */
                return;
        }
        if (n > 0) {
                h->body = HTTP_HEAD_LENGTH;
                h->length = (uint64_t)n;
        }
}

void http_head_parse(char *text, size_t len, struct http_head *ret) {
        const char *content_length = NULL, *transfer_encoding = NULL;
        char *line = text, *next;
        bool first = true;

        *ret = (struct http_head){ 0 };
        text[len] = '\0';
        if (memchr(text, '\0', len))
                ret->malformed = true; /* evhttp reads a line only to its NUL */
        for (; line && *line; line = next) {
                char *colon, *end;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                end = line + strlen(line);
                if (end > line && end[-1] == '\r')
                        end[-1] = '\0';
                if (first) {
                        /* "METHOD TARGET VERSION", as evhttp_parse_request_line() splits it */
                        ret->method = strsep(&line, " ");
                        ret->target = line ? strsep(&line, " ") : NULL;
                        if (!ret->method[0] || !ret->target || !ret->target[0] || !line)
                                ret->malformed = true;
                        first = false;
                        continue;
                }
                colon = strchr(line, ':');
                if (line[0] == ' ' || line[0] == '\t' || !colon) {
                        ret->malformed = true; /* a folded line, or no name */
                        continue;
                }
                *colon = '\0';
                header_seen(ret, line, trim(colon + 1), &content_length, &transfer_encoding);
        }
        if (first)
                ret->malformed = true;
        if (ret->malformed)
                return;
        read_framing(ret, content_length, transfer_encoding);
}

/* Decided as the front door decides who calls (http_request_admission()), on the path evhttp
 * will read from the target. */
bool http_head_admits(const struct http_config *h, struct http_oauth *oauth, const struct http_head *head,
                      bool unix_peer) {
        const struct http_token *token;
        const char *why;
        struct evhttp_uri *uri;
        enum http_admission admission;

        if (head->malformed)
                return false;
        uri = evhttp_uri_parse_with_flags(head->target, EVHTTP_URI_NONCONFORMANT);
        admission = http_request_admission(h, oauth, uri ? evhttp_uri_get_path(uri) : NULL, head->origin,
                                           head->authorization, unix_peer, &token, &why);
        if (uri)
                evhttp_uri_free(uri);
        return admission == HTTP_ADMITTED;
}

/* ---- the caps ---- */

size_t http_gates_max_unproven(int fd_limit, int reserve) {
        long room = ((long)fd_limit - 2L * reserve) / 2;

        return room < 8 ? 8 : room > 256 ? 256 : (size_t)room;
}

size_t http_gates_max_unproven_per_peer(size_t max_unproven) {
        size_t half = max_unproven / 2 ? max_unproven / 2 : 1;

        return half < GATE_MAX_PER_PEER ? half : GATE_MAX_PER_PEER;
}

/* ---- one connection ---- */

static bool same_peer(const struct refusal_peer *a, const struct refusal_peer *b) {
        return a->unix_peer == b->unix_peer && (a->unix_peer ? a->uid == b->uid : memcmp(a->addr, b->addr, sizeof a->addr) == 0);
}

static const struct refusal_peer *peer_of(struct http_gate *g) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = bufferevent_getfd(g->bev);

        if (g->peer_known)
                return &g->peer;
        if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
                return NULL;
        if (ss.ss_family == AF_UNIX) {
                struct ucred cred;
                socklen_t cred_len = sizeof cred;

                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0)
                        return NULL;
                g->peer = refusal_peer_of_uid(cred.uid);
        } else if (refusal_peer_of_address((struct sockaddr *)&ss, &g->peer) < 0)
                return NULL;
        g->peer_known = true;
        return &g->peer;
}

static void arm(struct http_gate *g, enum gate_timer does, int ms) {
        struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

        g->timer_does = does;
        evtimer_add(g->timer, &tv);
}

/* glibc keeps what a burst of connections freed amid its heap: given back once they fall
 * to a quarter of their peak (a walk of the heap: not at every connection's end). */
static void give_memory_back(struct http_gates *gs) {
        if (gs->unproven_peak >= GATE_TRIM_PEAK && gs->n_unproven <= gs->unproven_peak / 4) {
                malloc_trim(0);
                gs->unproven_peak = gs->n_unproven;
        }
}

/* The gate leaves its connection: at its proof (evhttp reads it as it would without us
 * from then on) or at its end. */
static void gate_free(struct http_gate *g) {
        struct http_gates *gs = g->gates;

        if (g->watching)
                evbuffer_remove_cb_entry(bufferevent_get_input(g->bev), g->watching);
        if (g->evcon)
                evhttp_connection_set_closecb(g->evcon, NULL, NULL);
        if (g->held)
                bufferevent_decref(g->bev);
        if (gs) {
                TAILQ_REMOVE(&gs->unproven, g, link);
                gs->n_unproven--;
                give_memory_back(gs);
        }
        event_free(g->timer);
        free(g);
}

/* The only mover of g->state. */
static void set_state(struct http_gate *g, enum http_gate_state to) {
        g->state = to;
        switch (to) {
        case HTTP_GATE_HEAD:
                break;
        case HTTP_GATE_ANSWERING:
        case HTTP_GATE_CLOSING:
                /* evhttp reads the head we left it; the rest is dropped as it comes. The first
                 * look stays due: it finds out when evhttp is done with the connection. */
                if (g->timer_does == GATE_TIMER_GRACE || g->timer_does == GATE_TIMER_DEADLINE)
                        evtimer_del(g->timer);
                bufferevent_setwatermark(g->bev, EV_READ, 0, HTTP_GATE_MAX_HEAD);
                break;
        case HTTP_GATE_PROVEN:
                bufferevent_setwatermark(g->bev, EV_READ, 0, 0);
                gate_free(g);
                break;
        }
}

/* Ends the connection, logged once as the peer's refusal: evhttp is told its peer is gone
 * and frees it (and this gate with it). */
static void close_now(struct http_gate *g, const char *why) {
        const struct refusal_peer *peer = peer_of(g);

        if (g->gates && peer)
                http_front_refused(g->gates->front, peer, why);
        set_state(g, HTTP_GATE_CLOSING);
        bufferevent_trigger_event(g->bev, BEV_EVENT_EOF | BEV_EVENT_READING, 0);
}

/* Closes g from inside a callback of its input, where evhttp's connection must not be
 * freed: at once, but from the loop. */
static void close_soon(struct http_gate *g, const char *why) {
        g->close_why = why;
        if (g->timer_does == GATE_TIMER_LOOK)
                return; /* the first look closes it */
        g->timer_does = GATE_TIMER_CLOSE;
        evtimer_del(g->timer);
        event_active(g->timer, EV_TIMEOUT, 1);
}

/* Whether o may be closed to make room: still without its head after its grace (a burst
 * of clients connecting at once is not closed for one another). */
static bool waiting(const struct http_gate *o) {
        return o->state == HTTP_GATE_HEAD && !o->in_grace;
}

/* The oldest connection waiting for its first head, of peer (NULL: of anyone). */
static struct http_gate *oldest_waiting(struct http_gates *gs, const struct refusal_peer *peer) {
        struct http_gate *o;

        TAILQ_FOREACH(o, &gs->unproven, link)
                if (waiting(o) && (!peer || (o->peer_known && same_peer(&o->peer, peer))))
                        return o;
        return NULL;
}

static size_t count_of_peer(struct http_gates *gs, const struct refusal_peer *peer) {
        struct http_gate *o;
        size_t n = 0;

        TAILQ_FOREACH(o, &gs->unproven, link)
                n += o->state == HTTP_GATE_HEAD && o->peer_known && same_peer(&o->peer, peer);
        return n;
}

/* At a cap, the oldest connection still waiting for its head (of peer, else of anyone) is
 * closed to make room for the newer. */
static void make_room(struct http_gates *gs, const struct refusal_peer *peer) {
        struct http_gate *oldest;

        if (peer && count_of_peer(gs, peer) > gs->max_unproven_per_peer && (oldest = oldest_waiting(gs, peer)))
                close_now(oldest, "too many connections of this peer without a request admitted yet");
        if (gs->n_unproven > gs->max_unproven && (oldest = oldest_waiting(gs, NULL)))
                close_now(oldest, "too many connections without a request admitted yet");
}

/* A new connection's first look, once evhttp's accept is done: evhttp has made its
 * connection around the socket since our hook (http_gates_wrap()) ran, or has freed it
 * already. */
static void first_look(struct http_gate *g) {
        bufferevent_event_cb gone = NULL;
        void *evcon = NULL;

        bufferevent_getcb(g->bev, NULL, NULL, &gone, &evcon);
        if (!gone || !evcon) { /* freed by evhttp: ours was the last reference */
                gate_free(g);
                return;
        }
        g->evcon = evcon;
        evhttp_connection_set_closecb(g->evcon, connection_closed, g);
        bufferevent_decref(g->bev);
        g->held = false;
        if (g->close_why && g->state == HTTP_GATE_HEAD) {
                close_now(g, g->close_why);
                return;
        }
        if (g->state != HTTP_GATE_HEAD)
                return;
        arm(g, GATE_TIMER_GRACE, GATE_GRACE_MS);
}

/* Its grace is over: it counts against its peer's cap and the total like any other. */
static void grace_over(struct http_gate *g) {
        const struct refusal_peer *peer = peer_of(g);

        g->in_grace = false;
        arm(g, GATE_TIMER_DEADLINE, HTTP_GATE_HEAD_SECONDS * 1000 - GATE_GRACE_MS);
        if (g->gates)
                make_room(g->gates, peer);
}

static void connection_closed(struct evhttp_connection *evcon, void *userdata) {
        gate_free(userdata);
}

static void timer_fired(evutil_socket_t fd, short what, void *userdata) {
        struct http_gate *g = userdata;

        switch (g->timer_does) {
        case GATE_TIMER_LOOK:
                first_look(g);
                break;
        case GATE_TIMER_GRACE:
                if (g->state == HTTP_GATE_HEAD)
                        grace_over(g);
                break;
        case GATE_TIMER_DEADLINE:
                if (g->state == HTTP_GATE_HEAD)
                        close_now(g, "its request head did not arrive in time");
                break;
        case GATE_TIMER_CLOSE:
                close_now(g, g->close_why);
                break;
        }
}

/* What evhttp is given of a head that is not admitted: its lines as the client wrote them
 * but Content-Length, Transfer-Encoding, Expect, Connection and Keep-Alive (and folded
 * lines; none from a line holding a NUL on), and "Connection: close": http-front.c answers it, no
 * body is read, the connection ends. */
static void add_without_body(struct evbuffer *dst, const char *head, size_t len) {
        static const char *const dropped[] = { "Content-Length:", "Transfer-Encoding:", "Expect:", "Connection:",
                                               "Keep-Alive:" };
        const char *line = head, *end = head + len;
        bool first = true;

        while (line < end) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                size_t n = nl ? (size_t)(nl - line) + 1 : (size_t)(end - line);
                bool drop = !first && (line[0] == ' ' || line[0] == '\t');

                if (memchr(line, '\0', n))
                        break; /* evhttp would end the head at that line, before our Connection: close */
                for (size_t i = 0; !first && !drop && i < ARRAY_SIZE(dropped); i++)
                        drop = n >= strlen(dropped[i]) && strncasecmp(line, dropped[i], strlen(dropped[i])) == 0;
                if (!drop)
                        evbuffer_add(dst, line, n);
                first = false;
                line += n;
        }
        evbuffer_add_printf(dst, "Connection: close\r\n\r\n");
}

/* The first head is whole in the input (end bytes, blank line of blank bytes included). */
static void head_done(struct http_gate *g, struct evbuffer *in, size_t end, size_t blank) {
        _cleanup_free_ char *text = malloc(end + 1), *copy = malloc(end + 1);
        const struct refusal_peer *peer = peer_of(g);
        struct http_head head;

        if (!text || !copy || evbuffer_copyout(in, text, end) != (ev_ssize_t)end) {
                close_soon(g, "out of memory");
                return;
        }
        memcpy(copy, text, end);
        http_head_parse(copy, end - blank, &head);
        if (g->gates && peer && http_head_admits(&daemon_config(g->gates->front->daemon)->http, g->gates->front->oauth, &head,
                                                  peer->unix_peer)) {
                set_state(g, HTTP_GATE_PROVEN); /* g is gone */
                return;
        }
        evbuffer_cb_clear_flags(in, g->watching, EVBUFFER_CB_ENABLED);
        evbuffer_drain(in, evbuffer_get_length(in));
        add_without_body(in, text, end - blank);
        evbuffer_cb_set_flags(in, g->watching, EVBUFFER_CB_ENABLED);
        set_state(g, HTTP_GATE_ANSWERING);
}

/* Looks for the end of the head from where the last look stopped: each byte is looked at
 * once, however slowly they come. */
static void read_head(struct http_gate *g, struct evbuffer *in) {
        size_t len = evbuffer_get_length(in);

        while (g->scan_from < len) {
                struct evbuffer_ptr p;
                size_t line_len;
                char cr = 0;

                if (evbuffer_ptr_set(in, &p, g->scan_from, EVBUFFER_PTR_SET) < 0)
                        break;
                p = evbuffer_search(in, "\n", 1, &p);
                if (p.pos < 0) {
                        g->scan_from = len;
                        break;
                }
                line_len = (size_t)p.pos - g->line_start;
                if (line_len == 1) {
                        struct evbuffer_ptr q;

                        evbuffer_ptr_set(in, &q, (size_t)p.pos - 1, EVBUFFER_PTR_SET);
                        evbuffer_copyout_from(in, &q, &cr, 1);
                }
                if (line_len == 0 || (line_len == 1 && cr == '\r')) {
                        head_done(g, in, (size_t)p.pos + 1, line_len + 1);
                        return;
                }
                g->line_start = g->scan_from = (size_t)p.pos + 1;
        }
        if (len >= HTTP_GATE_MAX_HEAD)
                close_soon(g, "its request head is too long");
}

/* Every change of the connection's input, before evhttp's read callback (which the read
 * watermarks hold off until the gate lets it). */
static void input_changed(struct evbuffer *in, const struct evbuffer_cb_info *info, void *userdata) {
        struct http_gate *g = userdata;

        if (info->n_added == 0)
                return;
        switch (g->state) {
        case HTTP_GATE_HEAD:
                read_head(g, in);
                break;
        case HTTP_GATE_ANSWERING:
        case HTTP_GATE_CLOSING:
                /* once evhttp has read the head it was left, what comes is dropped */
                if (evbuffer_get_length(in) == info->n_added) {
                        evbuffer_cb_clear_flags(in, g->watching, EVBUFFER_CB_ENABLED);
                        evbuffer_drain(in, info->n_added);
                        evbuffer_cb_set_flags(in, g->watching, EVBUFFER_CB_ENABLED);
                }
                break;
        case HTTP_GATE_PROVEN:
                break;
        }
}

bool http_gates_full(struct http_gates *gs) {
        return gs->n_unproven >= gs->max_unproven && !oldest_waiting(gs, NULL);
}

struct bufferevent *http_gates_wrap(struct http_gates *gs, struct bufferevent *bev) {
        struct http_gate *g = calloc(1, sizeof *g);

        if (!g || !(g->timer = evtimer_new(bufferevent_get_base(bev), timer_fired, g)) ||
            !(g->watching = evbuffer_add_cb(bufferevent_get_input(bev), input_changed, g))) {
                if (g && g->timer)
                        event_free(g->timer);
                free(g);
                /* Out of memory: evhttp (which would make a bufferevent of its own were it
                 * given none) never reads it, and its timeout ends it. */
                bufferevent_setwatermark(bev, EV_READ, HTTP_GATE_MAX_HEAD + 1, 1);
                return bev;
        }
        g->gates = gs;
        g->bev = bev;
        g->state = HTTP_GATE_HEAD;
        g->in_grace = true;
        /* evhttp's read callback waits for more than the socket may read ahead: never, until
         * the gate lowers the mark */
        bufferevent_setwatermark(bev, EV_READ, HTTP_GATE_MAX_HEAD + 1, HTTP_GATE_MAX_HEAD);
        /* held until the first look, in case evhttp frees the connection before it */
        bufferevent_incref(bev);
        g->held = true;
        TAILQ_INSERT_TAIL(&gs->unproven, g, link);
        if (++gs->n_unproven > gs->unproven_peak)
                gs->unproven_peak = gs->n_unproven;
        make_room(gs, NULL); /* or, none being past its grace, the listeners wait (http_gates_full()) */
        /* right after evhttp's accept is done, before any of the connection's input */
        g->timer_does = GATE_TIMER_LOOK;
        event_active(g->timer, EV_TIMEOUT, 1);
        return bev;
}

void http_gates_init(struct http_gates *gs, struct http_front *front, int fd_limit, int reserve) {
        *gs = (struct http_gates){ .front = front, .max_unproven = http_gates_max_unproven(fd_limit, reserve) };
        gs->max_unproven_per_peer = http_gates_max_unproven_per_peer(gs->max_unproven);
        TAILQ_INIT(&gs->unproven);
}

void http_gates_done(struct http_gates *gs) {
        struct http_gate *g;

        while ((g = TAILQ_FIRST(&gs->unproven)))
                gate_free(g);
}
