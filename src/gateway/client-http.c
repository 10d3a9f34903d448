/* A client over Streamable HTTP; see client-http.h. */
#include "client-http.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "client.h"
#include "daemon.h"
#include "http-front.h"
#include "http-config.h"
#include "http-mirror.h"
#include "jsonrpc.h"
#include "sse-event.h"
#include "time-util.h"
#include "user-counts.h"
#include "write-now.h"

/* Events kept for a resumed stream: the last 64, fewer when they pass 1 MiB. */
#define REPLAY_EVENTS 64
#define REPLAY_BYTES (1024 * 1024)
/* A comment on an idle stream this often, so proxies and clients keep it, and a client
 * gone without a word is found out by the write; a streamable POST held about this long
 * starts its stream. */
#define KEEPALIVE_USEC (15 * USEC_PER_SEC)
/* A request's connection is watched for the peer's close only once the request has waited
 * this long: most calls are answered sooner, and the watch costs two epoll_ctl() calls
 * (EPOLLRDHUP added, then removed) where the timer costs none. A client that closes
 * sooner is found out this much later. */
#define CLOSE_WATCH_DELAY_USEC (20 * 1000)

/* Where a wait is: owed its answer, or answered and still being written by evhttp. */
enum wait_state {
        WAIT_MADE,     /* in no list yet */
        WAIT_OWED,     /* in posts, or the session's stream */
        WAIT_WRITING,  /* in writing, until evhttp has written its answer (on_written) or
                        * its connection closes: what evhttp holds for the session counts
                        * against clientOutputLimit as a socket client's queue does */
};

/* One HTTP request the session owes an answer: a POSTed request's (as JSON, or as an
 * event stream of its own), or the GET stream; then, answered, until it is written. A POST
 * is held with nothing sent (no status, no headers) until its response comes, which then
 * goes as one JSON body, or until a message must go before it: then its event stream
 * starts there, so that a call with nothing to say first costs the client no stream. */
struct http_wait {
        TAILQ_ENTRY(http_wait) entry;
        enum wait_state state;
        struct session_http *s;
        struct evhttp_request *req;
        struct evhttp_connection *evcon;
        /* Both inside the wait (as tmux keeps a client's events), so that a request costs no
         * allocation of its own for them. */
        struct event arm;            /* a timer: the close watch starts when it fires */
        struct event closed;         /* the peer closed the connection (EV_CLOSED); assigned
                                      * when the watch starts */
        char *id_text;               /* the POSTed request's id as JSON text; NULL for the stream */
        bool streamable;             /* a POST whose client takes an event stream, and whose
                                      * request may have messages before its response */
        uint64_t since;              /* a streamable POST: when it came (now_usec()) */
        uint64_t stream;             /* a POST answered as an event stream: its number (1, 2, ...);
                                      * 0: none started (JSON so far), or the GET stream */
};

/* Events are numbered across the session's streams; each one's id names its stream too:
 * "N" on the GET stream (stream 0), "N-K" on POST stream K, so that a Last-Event-ID says
 * which stream to resume however old it is. */
struct replay_event {
        uint64_t seq;
        uint64_t stream;
        char *text;                  /* "id: N\ndata: ...\n\n" */
        size_t len;
};

struct session_http {
        struct http_front *front;
        struct client *client;
        enum http_kind kind;
        char id[CLIENT_HTTP_ID_LEN + 1];
        int64_t key;
        char *remote;
        const struct http_token *token; /* the configuration's token that opened it, kept
                                         * current by client_http_config_changed(); NULL
                                         * on the Unix socket */
        TAILQ_HEAD(, http_wait) posts;
        TAILQ_HEAD(, http_wait) writing; /* answered, not all written yet */
        struct http_wait *stream;    /* the GET stream, or NULL */
        struct http_wait *current;   /* the POST being handled now: answers a null id */
        struct event *keepalive;
        struct event *idle;
        struct user_idle idleness;   /* listed while it waits for nothing (note_use()) */
        struct replay_event ring[REPLAY_EVENTS];
        size_t ring_start, ring_count, ring_bytes;
        uint64_t next_seq;           /* the last event's number */
        uint64_t streamed_seq;       /* the last event written to the GET stream */
        uint64_t next_stream;        /* the last POST stream's number */
        unsigned n_post_streams;     /* POSTs in posts answered as event streams */
        unsigned n_streamable;       /* POSTs in posts that are streamable (started or not) */
};

static struct session_http *session_of(const struct client *c) {
        return c->transport;
}

static void arm_idle(struct session_http *s);

/* A session with no request pending and no stream open waits for nothing: its client may
 * have left without a word (most never DELETE), so it is listed as idle (user-counts.h),
 * from the time it became so or was last used, and ended after httpSessionIdle, or sooner
 * when its user is at maxClientsPerUser and it is that user's idle the longest. Called at
 * each change of its requests and streams; used: a request came (an idle session is listed
 * anew, last). */
static void note_use(struct session_http *s, bool used) {
        struct client *c = s->client;
        struct user_counts *u = &c->daemon->user_counts;

        if (c->state != CLIENT_ACTIVE || s->stream || !TAILQ_EMPTY(&s->posts)) {
                user_counts_busy(u, &s->idleness);
                return;
        }
        if (s->idleness.listed && !used)
                return;
        user_counts_idle(u, &s->idleness, client_principal(c)->uid, now_usec());
        arm_idle(s);
}

/* A session's answers name it; one request's has no session to name. */
static void add_session_header(struct session_http *s, struct evhttp_request *req) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);

        if (s->kind == HTTP_ONE_REQUEST)
                return;
        evhttp_remove_header(h, "Mcp-Session-Id");
        evhttp_add_header(h, "Mcp-Session-Id", s->id);
}

/* ---- waits: requests owed an answer ---- */

static void wait_free(struct http_wait *w) {
        if (!w)
                return;
        if (w->evcon)
                evhttp_connection_set_closecb(w->evcon, NULL, NULL);
        event_del(&w->arm);
        if (event_initialized(&w->closed))
                event_del(&w->closed);
        free(w->id_text);
        free(w);
}

/* Takes w out of where it is. */
static void wait_unlink(struct http_wait *w) {
        struct session_http *s = w->s;

        if (w->state == WAIT_MADE)
                return;
        if (w->state == WAIT_WRITING) {
                TAILQ_REMOVE(&s->writing, w, entry);
                return;
        }
        if (w == s->stream) {
                s->stream = NULL;
        } else {
                TAILQ_REMOVE(&s->posts, w, entry);
                if (w->stream)
                        s->n_post_streams--;
                if (w->streamable)
                        s->n_streamable--;
        }
        if (s->current == w)
                s->current = NULL;
        note_use(s, false);
}

static void wait_forget(struct http_wait *w) {
        wait_unlink(w);
        wait_free(w);
}

/* evhttp has written the whole answer: the session holds nothing of it any more. */
static void on_written(struct evhttp_request *req, void *userdata) {
        struct http_wait *w = userdata;
        struct client *c = w->s->client;

        wait_forget(w);
        client_output_flushed(c);
}

/* Its answer is handed to evhttp next (w->req stays valid until written or closed). */
static void wait_answered(struct http_wait *w) {
        wait_unlink(w);
        event_del(&w->arm);
        if (event_initialized(&w->closed))
                event_del(&w->closed);
        w->state = WAIT_WRITING;
        TAILQ_INSERT_TAIL(&w->s->writing, w, entry);
        evhttp_request_set_on_complete_cb(w->req, on_written, w);
}

/* The session ends: evhttp writes what it holds on its own, or, for a session dropped for
 * not reading (close), its connections are shut down, so that what evhttp holds for it is
 * given back now rather than at their timeout (evhttp frees them on the failed write; not
 * here, where one of them may be the connection whose request is being handled). */
static void writing_detach(struct session_http *s, bool close) {
        struct http_wait *w;

        while ((w = TAILQ_FIRST(&s->writing))) {
                if (close)
                        (void)shutdown(bufferevent_getfd(evhttp_connection_get_bufferevent(w->evcon)), SHUT_RDWR);
                evhttp_request_set_on_complete_cb(w->req, NULL, NULL);
                wait_forget(w);
        }
}

/* A POSTed request whose client went away is cancelled at the server, as a socket client's
 * notifications/cancelled would. */
static void cancel_post(struct session_http *s, const char *id_text) {
        _cleanup_free_ char *text = NULL;

        if (asprintf(&text, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%s,"
                     "\"reason\":\"the HTTP client closed the request's connection\"}}", id_text) < 0)
                return;
        client_log(s->client, LOG_DEBUG, "HTTP request %s abandoned by the client; cancelling it", id_text);
        client_receive(s->client, text, strlen(text));
}

/* A request the connection let go of: evhttp frees the requests still on a connection it
 * frees, except one it failed itself (the peer's EOF or a write error seen by evhttp, a
 * timeout) while we had not answered it. That one it detaches (no connection any more)
 * and leaves to us, who would otherwise answer it: nobody will, so it is freed here. */
static void free_if_detached(struct evhttp_request *req) {
        if (!evhttp_request_get_connection(req))
                evhttp_request_free(req);
}

/* evhttp frees the connection (and its requests): forget them, cancel what was asked. */
static void on_connection_close(struct evhttp_connection *evcon, void *userdata) {
        struct http_wait *w = userdata;
        struct session_http *s = w->s;
        _cleanup_free_ char *id_text = NULL;
        bool post = w != s->stream;

        w->evcon = NULL; /* its close callback is being called: nothing to reset */
        if (w->state == WAIT_WRITING) { /* answered: what was not written is lost with it */
                wait_forget(w);
                client_output_flushed(s->client);
                return;
        }
        id_text = w->id_text ? strdup(w->id_text) : NULL;
        free_if_detached(w->req);
        wait_forget(w);
        if (post && id_text && s->client->state != CLIENT_JUSTFREE)
                cancel_post(s, id_text);
        if (s->kind == HTTP_ONE_REQUEST) /* its one request is gone, and its peer */
                client_end_of_input(s->client, true);
}

/* evhttp stops reading a connection once a request is read, so a peer that closes while
 * its answer is awaited is seen only here. */
static void on_peer_closed(evutil_socket_t fd, short what, void *userdata) {
        struct http_wait *w = userdata;

        evhttp_connection_free(w->evcon); /* calls on_connection_close() */
}

/* The request has waited CLOSE_WATCH_DELAY_USEC: watch its connection for the peer's close. */
static void on_watch_due(evutil_socket_t fd, short what, void *userdata) {
        struct http_wait *w = userdata;
        struct bufferevent *bev;

        if (!w->evcon || event_initialized(&w->closed))
                return;
        bev = evhttp_connection_get_bufferevent(w->evcon);
        event_assign(&w->closed, w->s->client->daemon->base, bufferevent_getfd(bev), EV_CLOSED, on_peer_closed, w);
        event_add(&w->closed, NULL);
}

static struct http_wait *wait_new(struct session_http *s, struct evhttp_request *req) {
        struct timeval delay = { .tv_usec = CLOSE_WATCH_DELAY_USEC };
        struct http_wait *w = calloc(1, sizeof *w);

        if (!w)
                return NULL;
        w->s = s;
        w->req = req;
        w->evcon = evhttp_request_get_connection(req);
        evtimer_assign(&w->arm, s->client->daemon->base, on_watch_due, w);
        evtimer_add(&w->arm, &delay);
        evhttp_connection_set_closecb(w->evcon, on_connection_close, w);
        return w;
}

static void reply(struct session_http *s, struct http_wait *w, int code, const char *reason, struct evbuffer *body) {
        struct evhttp_request *req = w->req;

        wait_answered(w);
        add_session_header(s, req);
        evhttp_send_reply(req, code, reason, body);
}

/* ---- sending ---- */

/* The parts in one buffer, a large one that offer holds by reference (buffer_add_lent()):
 * evhttp moves the buffer's chains into its output, so what is lent is never copied. */
static struct evbuffer *joined(const struct iovec *parts, size_t n_parts, const struct loan_offer *offer) {
        struct evbuffer *b = evbuffer_new();

        for (size_t i = 0; b && i < n_parts; i++)
                if (buffer_add_lent(b, parts[i].iov_base, parts[i].iov_len, offer) < 0) {
                        evbuffer_free(b);
                        return NULL;
                }
        return b;
}

/* The POST whose request has this id (NULL: none). */
static struct http_wait *post_of(struct session_http *s, json_object *id) {
        const char *text = json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
        struct http_wait *w;

        TAILQ_FOREACH(w, &s->posts, entry)
                if (strcmp(w->id_text, text) == 0)
                        return w;
        return NULL;
}

/* The POST a response answers; a null id answers the POST being handled now. */
static struct http_wait *post_answered_by(struct session_http *s, json_object *id) {
        return id ? post_of(s, id) : s->current;
}

static void write_text(struct http_wait *w, const char *text, size_t len) {
        struct evbuffer *b = evbuffer_new();

        if (!b || evbuffer_add(b, text, len) < 0) {
                if (b)
                        evbuffer_free(b);
                return;
        }
        evhttp_send_reply_chunk(w->req, b);
        evbuffer_free(b);
}

static struct replay_event *ring_at(struct session_http *s, size_t i) {
        return &s->ring[(s->ring_start + i) % REPLAY_EVENTS];
}

static void ring_drop_oldest(struct session_http *s) {
        struct replay_event *e = ring_at(s, 0);

        s->ring_bytes -= e->len;
        free(e->text);
        *e = (struct replay_event){ 0 };
        s->ring_start = (s->ring_start + 1) % REPLAY_EVENTS;
        s->ring_count--;
}

/* Keeps an event (text taken) for replay. One over the byte bound is not kept: it would
 * push out every other and still hold up to maxMessageSize per session. */
static void ring_keep(struct session_http *s, uint64_t seq, uint64_t stream, char *text, size_t len) {
        if (len > REPLAY_BYTES) {
                free(text);
                return;
        }
        while (s->ring_count == REPLAY_EVENTS || (s->ring_count > 0 && s->ring_bytes + len > REPLAY_BYTES))
                ring_drop_oldest(s);
        *ring_at(s, s->ring_count) = (struct replay_event){ .seq = seq, .stream = stream, .text = text, .len = len };
        s->ring_count++;
        s->ring_bytes += len;
}

static size_t message_len(const struct iovec *parts, size_t n_parts) {
        size_t len = 0;

        for (size_t i = 0; i < n_parts; i++)
                len += parts[i].iov_len;
        return len;
}

/* An event too large for the replay ring, written in pieces from where its bytes are (a
 * result lent by offer: never copied), without its text made first. false when it cannot
 * be (a line break inside, memory): then as any event. */
static bool write_event_where_it_is(struct http_wait *w, uint64_t seq, uint64_t stream, const struct iovec *parts,
                                    size_t n_parts, const struct loan_offer *offer) {
        char head[SSE_EVENT_HEAD_MAX];
        size_t n = sse_event_head(seq, stream, parts, n_parts, head);
        struct evbuffer *b = n ? evbuffer_new() : NULL;
        bool ok = b && evbuffer_add(b, head, n) == 0;

        for (size_t i = 0; ok && i < n_parts; i++) {
                size_t len = parts[i].iov_len - (i + 1 == n_parts && parts[i].iov_len > 0); /* its newline */

                ok = buffer_add_lent(b, parts[i].iov_base, len, offer) == 0;
        }
        if (ok && evbuffer_add(b, "\n\n", 2) == 0)
                evhttp_send_reply_chunk(w->req, b);
        else
                ok = false;
        if (b)
                evbuffer_free(b);
        return ok;
}

/* A message as the next event of a stream (0: the GET stream), written on w when the stream
 * is open there (w NULL: kept only), and kept for replay; one the ring would not keep is
 * written from where it is. offer: its bytes may be lent (NULL: none). */
static int emit_event(struct session_http *s, uint64_t stream, struct http_wait *w, const struct iovec *parts,
                      size_t n_parts, const struct loan_offer *offer) {
        uint64_t seq = s->next_seq + 1;
        size_t len;
        char *text;

        if (w && message_len(parts, n_parts) > REPLAY_BYTES &&
            write_event_where_it_is(w, seq, stream, parts, n_parts, offer)) {
                s->next_seq = seq;
                if (stream == 0)
                        s->streamed_seq = seq;
                return 0;
        }
        text = sse_event_text(seq, stream, parts, n_parts, &len);

        if (!text)
                return -ENOMEM;
        s->next_seq = seq;
        if (w)
                write_text(w, text, len);
        if (w && stream == 0)
                s->streamed_seq = seq;
        ring_keep(s, seq, stream, text, len);
        return 0;
}

/* The POST's event stream is over: its response was its last event. */
static void end_post_stream(struct session_http *s, struct http_wait *w) {
        struct evhttp_request *req = w->req;

        wait_answered(w);
        evhttp_send_reply_end(req); /* may call on_written() at once */
}

static int start_post_stream(struct session_http *s, struct http_wait *w);

/* A client of one request has said all it will once that request is answered: it ends
 * when the answer is written (client_end_of_input()). A subscriptions/listen is answered
 * only when it ends: its client lasts as long. */
static void one_request_answered(struct session_http *s) {
        if (s->kind == HTTP_ONE_REQUEST)
                client_end_of_input(s->client, false);
}

static int send_response(struct session_http *s, const struct iovec *parts, size_t n_parts, json_object *id,
                         const struct loan_offer *offer) {
        struct http_wait *w = post_answered_by(s, id);
        struct evbuffer *body;
        int r;

        if (!w)
                return 0; /* its request's client went away: nobody to tell */
        if (w->stream) {
                r = emit_event(s, w->stream, w, parts, n_parts, offer);
                end_post_stream(s, w);
                one_request_answered(s);
                return r;
        }
        body = joined(parts, n_parts, offer);
        if (!body)
                return -ENOMEM;
        evhttp_add_header(evhttp_request_get_output_headers(w->req), "Content-Type", "application/json");
        if (s->kind == HTTP_ONE_REQUEST && n_parts == 2) {
                /* the modern era's statuses for its errors; a message in two parts (its JSON,
                 * then the newline) is one the daemon built, an error among them (a server's
                 * result passed on as text never is) */
                const char *reason;
                int status = http_mirror_answer_status(parts[0].iov_base, parts[0].iov_len, &reason);

                reply(s, w, status, reason, body);
        } else {
                reply(s, w, 200, "OK", body);
        }
        evbuffer_free(body);
        one_request_answered(s);
        return 0;
}

/* A notification or request to the client: on the event stream of the POST it belongs to
 * when that POST is streamable (its stream started by the first such message), else an
 * event of the GET stream (kept for replay either way). */
static int http_send(struct client *c, const struct iovec *parts, size_t n_parts, bool response, json_object *id,
                     const struct loan_offer *offer) {
        struct session_http *s = session_of(c);
        struct http_wait *w;
        int r;

        if (response)
                return send_response(s, parts, n_parts, id, offer);
        w = id && s->n_streamable ? post_of(s, id) : NULL;
        if (!w || !w->streamable)
                return emit_event(s, 0, s->stream, parts, n_parts, NULL);
        if (!w->stream && (r = start_post_stream(s, w)) < 0)
                return r;
        return emit_event(s, w->stream, w, parts, n_parts, NULL);
}

static size_t wait_unsent(const struct http_wait *w) {
        return evbuffer_get_length(bufferevent_get_output(evhttp_connection_get_bufferevent(w->evcon)));
}

/* What the session's connections have not written yet: its open streams' (the GET
 * stream's and the POSTs') and the answers evhttp still holds. */
static size_t http_unsent(const struct client *c) {
        struct session_http *s = session_of(c);
        size_t n = s->stream ? wait_unsent(s->stream) : 0;
        struct http_wait *w;

        if (s->n_post_streams)
                TAILQ_FOREACH(w, &s->posts, entry)
                        if (w->stream)
                                n += wait_unsent(w);
        TAILQ_FOREACH(w, &s->writing, entry)
                n += wait_unsent(w);
        return n;
}

/* ---- the session's lifetime ---- */

/* Draining (the daemon stops): no longer a session to end for another. */
static void http_stop_reading(struct client *c) {
        struct session_http *s = session_of(c);

        user_counts_busy(&c->daemon->user_counts, &s->idleness);
}

/* Nothing more will be said: the requests still owed an answer get one saying so. */
static void http_stop(struct client *c) {
        struct session_http *s = session_of(c);
        bool unread = http_unsent(c) > c->daemon->config.client_output_limit;
        struct http_wait *w;

        while ((w = TAILQ_FIRST(&s->posts))) {
                if (w->stream)
                        end_post_stream(s, w); /* its status was sent: the stream just ends */
                else
                        reply(s, w, 404, "Session Ended", NULL);
        }
        if (s->stream) {
                struct evhttp_request *req = s->stream->req;

                wait_answered(s->stream);
                evhttp_send_reply_end(req);
        }
        writing_detach(s, unread);
        user_counts_busy(&c->daemon->user_counts, &s->idleness);
        event_del(s->idle);
        event_del(s->keepalive);
}

static void http_describe(const struct client *c, json_object *row) {
        struct session_http *s = session_of(c);

        json_object_object_add(row, "transport", json_object_new_string("http"));
        json_object_object_add(row, "remote", json_object_new_string(s->remote));
        json_object_object_add(row, "token", s->token ? json_object_new_string(s->token->user) : NULL);
        /* Waiting for nothing: the first of its user's to be ended at maxClientsPerUser. */
        json_object_object_add(row, "idle", json_object_new_boolean(s->idleness.listed));
}

/* Over TCP its address and token; on the Unix socket its principal (pid, command) says it. */
static void http_peer(const struct client *c, struct client_peer *ret) {
        const struct session_http *s = session_of(c);

        if (!s->token)
                return;
        ret->remote = s->remote;
        ret->token = s->token->user;
}

static void http_free(struct client *c) {
        struct session_http *s = session_of(c);

        http_stop(c);
        if (idmap_remove(&s->front->sessions, s->key))
                http_front_session_ended(s->front);
        while (s->ring_count)
                ring_drop_oldest(s);
        event_free(s->idle);
        event_free(s->keepalive);
        free(s->remote);
        free(s);
        c->transport = NULL;
}

static int http_life_priority(const struct client *c) {
        return session_of(c)->kind == HTTP_ONE_REQUEST ? LOG_DEBUG : LOG_INFO;
}

static const struct client_transport_ops http_ops = {
        .name = "HTTP",
        .send = http_send,
        .unsent = http_unsent,
        .stop_reading = http_stop_reading,
        .stop = http_stop,
        .describe = http_describe,
        .peer = http_peer,
        .free = http_free,
        .life_priority = http_life_priority,
};

static void arm_idle(struct session_http *s) {
        double idle = s->client->daemon->config.http_session_idle;
        struct timeval tv = { .tv_sec = (time_t)idle, .tv_usec = (suseconds_t)((idle - (double)(time_t)idle) * 1e6) };

        event_add(s->idle, &tv);
}

/* Idle for httpSessionIdle: ended. Armed each time it is listed idle (note_use()); one
 * in use since is left to be armed again when it is idle again. */
static void on_idle(evutil_socket_t fd, short what, void *userdata) {
        struct session_http *s = userdata;

        if (!s->idleness.listed)
                return;
        client_log(s->client, LOG_INFO, "HTTP session unused for %g s (httpSessionIdle); ended",
                   s->client->daemon->config.http_session_idle);
        client_set_state(s->client, CLIENT_JUSTFREE);
}

/* Every open stream, the POSTs' too (a long call with no progress), gets a comment. A
 * streamable POST held silent for half an interval or more starts its stream (its priming
 * event is the keep-alive): a long call is never left without a byte for more than 1.5
 * intervals, shorter than proxies wait. */
static void on_keepalive(evutil_socket_t fd, short what, void *userdata) {
        static const char comment[] = ": keep-alive\n\n";
        struct session_http *s = userdata;
        struct http_wait *w;
        uint64_t now;

        if (!s->stream && !s->n_post_streams && !s->n_streamable) {
                event_del(s->keepalive);
                return;
        }
        if (s->stream)
                write_text(s->stream, comment, sizeof comment - 1);
        if (!s->n_post_streams && !s->n_streamable)
                return;
        now = now_usec();
        TAILQ_FOREACH(w, &s->posts, entry) {
                if (w->stream)
                        write_text(w, comment, sizeof comment - 1);
                else if (w->streamable && now - w->since >= KEEPALIVE_USEC / 2)
                        (void)start_post_stream(s, w);
        }
}

/* Once a stream opens; not pushed back by the next one, so each gets its comment. */
static void arm_keepalive(struct session_http *s) {
        struct timeval tv = { .tv_sec = KEEPALIVE_USEC / USEC_PER_SEC };

        if (!event_pending(s->keepalive, EV_TIMEOUT, NULL))
                event_add(s->keepalive, &tv);
}

static int random_id(char ret[CLIENT_HTTP_ID_LEN + 1]) {
        unsigned char bytes[CLIENT_HTTP_ID_LEN / 2];

        if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
                return -errno;
        for (size_t i = 0; i < sizeof bytes; i++)
                snprintf(ret + 2 * i, 3, "%02x", bytes[i]);
        return 0;
}

int64_t client_http_key_of(const char *id) {
        uint64_t key = 0;

        if (strlen(id) != CLIENT_HTTP_ID_LEN || strspn(id, "0123456789abcdef") != CLIENT_HTTP_ID_LEN)
                return 0;
        for (int i = 0; i < 15; i++) /* 60 bits: positive, and never 0 for a real one below */
                key = key * 16 + (uint64_t)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
        return (int64_t)(key | 1);
}

static struct session_http *session_new(struct http_front *f, struct http_caller *caller, enum http_kind kind) {
        struct session_http *s = calloc(1, sizeof *s);

        if (!s)
                return NULL;
        s->front = f;
        s->kind = kind;
        TAILQ_INIT(&s->posts);
        TAILQ_INIT(&s->writing);
        s->remote = strdup(caller->remote);
        s->token = caller->token;
        do {
                if (random_id(s->id) < 0)
                        goto fail;
                s->key = client_http_key_of(s->id);
        } while (idmap_get(&f->sessions, s->key)); /* 60 random bits: a clash is news, and retried */
        if (!s->remote)
                goto fail;
        return s;
fail:
        free(s->remote);
        free(s);
        return NULL;
}

struct client *client_http_new(struct http_front *f, struct http_caller *caller, enum http_kind kind, int64_t *ret_key) {
        struct daemon *d = f->daemon;
        struct session_http *s = session_new(f, caller, kind);
        struct client *c;

        if (!s)
                return NULL;
        s->idle = evtimer_new(d->base, on_idle, s);
        s->keepalive = event_new(d->base, -1, EV_PERSIST, on_keepalive, s);
        if (!s->idle || !s->keepalive || idmap_put(&f->sessions, s->key, NULL) < 0) {
                if (s->idle)
                        event_free(s->idle);
                if (s->keepalive)
                        event_free(s->keepalive);
                free(s->remote);
                free(s);
                return NULL;
        }
        c = client_new(d, LISTEN_MCP, &http_ops, s, caller->principal);
        if (!c) {
                idmap_remove(&f->sessions, s->key);
                event_free(s->idle);
                event_free(s->keepalive);
                free(s->remote);
                free(s);
                return NULL;
        }
        s->client = c;
        idmap_put(&f->sessions, s->key, c); /* the slot is there: cannot fail */
        http_front_session_opened(f);
        note_use(s, true);
        if (s->token && s->token->profile)
                /* Its token's profile, as mcpvisorctl connect --profile asks for one. */
                (void)client_access_ask(c, s->token->profile);
        *ret_key = s->key;
        return c;
}

bool client_http_id_matches(const struct client *c, const char *id) {
        const struct session_http *s = session_of(c);
        unsigned char diff = 0;

        if (strlen(id) != CLIENT_HTTP_ID_LEN)
                return false;
        for (size_t i = 0; i < CLIENT_HTTP_ID_LEN; i++)
                diff |= (unsigned char)(s->id[i] ^ id[i]);
        return diff == 0;
}

bool client_http_same_caller(const struct client *c, uid_t uid, const struct http_token *token) {
        const struct session_http *s = session_of(c);

        return s->token ? s->token == token : !token && client_principal(c)->uid == uid;
}

/* Its token in the new configuration: the one with the same secret. Its principal and
 * profile are decided anew from it, as if the session opened now; false when it is gone. */
static bool rebind(struct client *c) {
        struct session_http *s = session_of(c);
        struct daemon *d = c->daemon;
        const struct http_token *old = s->token, *now;
        struct principal p;

        /* An identity a JWT mapped to (http-oauth.h), not a configured token: kept while
         * http.oauth is; each request's token is checked and mapped anew under the new
         * configuration, and one that maps to another identity finds no session. */
        if (!old->secret)
                return d->config.http.oauth.issuer != NULL;
        now = http_token_find(&d->config.http, old->secret, old->secret_len);
        if (!now)
                return false;
        s->token = now;
        if (http_token_principal(now, &p) < 0) {
                client_log(c, LOG_WARNING, "out of memory taking its token's new principal; ended");
                return false;
        }
        if (p.uid != client_principal(c)->uid) {
                /* Counted under the uid it now has, as one opened now would be (and released
                 * under it when freed); the limit is for new sessions only. */
                user_counts_release(&d->user_counts, client_principal(c)->uid);
                (void)user_counts_take(&d->user_counts, p.uid, 0, NULL);
                user_counts_idle_moved(&s->idleness, p.uid);
        }
        client_set_principal(c, &p);
        if (client_access_ask(c, now->profile) < 0) {
                client_log(c, LOG_WARNING, "out of memory taking its token's profile; ended");
                return false;
        }
        return true;
}

void client_http_config_changed(struct daemon *d) {
        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++) {
                struct client *c, *next;

                for (c = TAILQ_FIRST(&d->clients[st]); c; c = next) {
                        next = TAILQ_NEXT(c, entry);
                        if (c->ops != &http_ops || !session_of(c)->token || rebind(c))
                                continue;
                        client_log(c, LOG_NOTICE, "HTTP session ended: its bearer token is no longer in http.tokens");
                        client_set_state(c, CLIENT_JUSTFREE);
                }
        }
}

/* ---- requests ---- */

/* The client cancelled one of its requests: no response will come (the specification),
 * so the POST that carries it is answered now, with nothing. */
static void cancelled(struct session_http *s, const struct jsonrpc_msg *m) {
        json_object *id;
        struct http_wait *w;

        if (!json_object_object_get_ex(m->params, "requestId", &id) || !id || !(w = post_answered_by(s, id)))
                return;
        if (w->stream)
                end_post_stream(s, w);
        else
                reply(s, w, 202, "Accepted", NULL);
}

/* A request that may be answered after progress or the server's own requests (a tool
 * call, or any request that asks for progress) may become an event stream when the client
 * takes one: those messages then travel with it, on a stream started by the first of them.
 * Others keep their JSON answer, and such messages go on the GET stream. */
static bool streamable(struct evhttp_request *req, const struct jsonrpc_msg *m) {
        const char *accept = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
        json_object *meta;

        if (m->kind != JSONRPC_REQUEST || !accept || !strcasestr(accept, "text/event-stream"))
                return false;
        return strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "subscriptions/listen") == 0 ||
               (json_object_object_get_ex(m->params, "_meta", &meta) && json_object_object_get_ex(meta, "progressToken", NULL));
}

/* A stream's events are written as they come, each after the one before was sent: with
 * Nagle's algorithm on, each would wait for the client's delayed ACK of the one before
 * (40 ms a call whose response follows its stream's first event). On a Unix socket the
 * option does not exist, and nothing waits there. */
static void write_at_once(struct evhttp_request *req) {
        int one = 1;

        (void)setsockopt(bufferevent_getfd(evhttp_connection_get_bufferevent(evhttp_request_get_connection(req))),
                         IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void start_event_stream(struct session_http *s, struct evhttp_request *req) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);

        write_at_once(req);
        add_session_header(s, req);
        evhttp_add_header(h, "Content-Type", "text/event-stream");
        evhttp_add_header(h, "Cache-Control", "no-cache");
        evhttp_send_reply_start(req, 200, "OK");
}

/* A message must go before the POST's response: its own stream starts, with an event that
 * has an id and no data (the specification's priming event), so that the client holds a
 * Last-Event-ID for it from the start. A response with nothing before it never gets here. */
static int start_post_stream(struct session_http *s, struct http_wait *w) {
        static const struct iovec newline = { .iov_base = "\n", .iov_len = 1 };

        w->stream = ++s->next_stream;
        s->n_post_streams++;
        start_event_stream(s, w->req);
        arm_keepalive(s);
        return emit_event(s, w->stream, w, &newline, 1, NULL);
}

void client_http_post(struct client *c, struct evhttp_request *req, struct jsonrpc_msg *m) {
        struct session_http *s = session_of(c);
        const char *id_text = m->id ? json_object_to_json_string_ext(m->id, JSON_C_TO_STRING_PLAIN) : "null";
        struct http_wait *w;

        if (m->kind == JSONRPC_NOTIFICATION || m->kind == JSONRPC_RESPONSE) {
                note_use(s, true);
                client_handle(c, m);
                if (m->kind == JSONRPC_NOTIFICATION && strcmp(m->method, "notifications/cancelled") == 0)
                        cancelled(s, m);
                add_session_header(s, req);
                evhttp_send_reply(req, 202, "Accepted", NULL);
                return;
        }
        /* A request, or what could not be read: its answer (an error, for the latter, under
         * its id if it had one) goes on this HTTP request. */
        w = wait_new(s, req);
        if (!w || !(w->id_text = strdup(id_text))) {
                if (w)
                        wait_free(w);
                evhttp_send_error(req, 503, "Out of memory");
                return;
        }
        TAILQ_INSERT_TAIL(&s->posts, w, entry);
        w->state = WAIT_OWED;
        w->streamable = streamable(req, m);
        if (w->streamable) {
                s->n_streamable++;
                w->since = now_usec();
                arm_keepalive(s);
        }
        note_use(s, false);
        s->current = w;
        client_handle(c, m);
        if (s->current == w && m->kind == JSONRPC_INVALID) /* the session said nothing */
                reply(s, w, 400, "Bad Request", NULL);
        s->current = NULL;
}

/* Writes on w the events of stream after seq that are still kept; how many. */
static size_t replay(struct session_http *s, struct http_wait *w, uint64_t stream, uint64_t seq) {
        size_t n = 0;

        for (size_t i = 0; i < s->ring_count; i++) {
                struct replay_event *e = ring_at(s, i);

                if (e->stream != stream || e->seq <= seq)
                        continue;
                write_text(w, e->text, e->len);
                if (stream == 0)
                        s->streamed_seq = e->seq;
                n++;
        }
        return n;
}

/* A Last-Event-ID of ours, issued in this session; false for anything else, which resumes
 * nothing. */
static bool parse_event_id(const struct session_http *s, const char *text, uint64_t *ret_seq, uint64_t *ret_stream) {
        return sse_event_id_parse(text, ret_seq, ret_stream) && *ret_seq <= s->next_seq && *ret_stream <= s->next_stream;
}

static bool post_stream_open(struct session_http *s, uint64_t stream) {
        struct http_wait *w;

        TAILQ_FOREACH(w, &s->posts, entry)
                if (w->stream == stream)
                        return true;
        return false;
}

/* GET with the Last-Event-ID of a POST's stream. Its connection closed (which cancelled
 * its call) or its response was sent: what it still had to say is sent again, if kept,
 * and the stream ends. With nothing more to say, 405: the status on which clients (the
 * TypeScript SDK) stop reconnecting, where an empty stream that ends would have them
 * reconnect again and again. */
static void resume_post_stream(struct session_http *s, struct evhttp_request *req, uint64_t stream, uint64_t seq) {
        struct http_wait *w;
        bool kept = false;

        if (post_stream_open(s, stream)) {
                evhttp_send_error(req, 409, "That stream is still open on its own connection");
                return;
        }
        for (size_t i = 0; i < s->ring_count && !kept; i++)
                kept = ring_at(s, i)->stream == stream && ring_at(s, i)->seq > seq;
        if (!kept) {
                add_session_header(s, req);
                evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST, DELETE");
                evhttp_send_error(req, 405, "That stream has ended and has nothing more to send");
                return;
        }
        w = wait_new(s, req);
        if (!w) {
                evhttp_send_error(req, 503, "Out of memory");
                return;
        }
        start_event_stream(s, req);
        replay(s, w, stream, seq);
        /* Written while the session holds it: counted as any answer (a replay is up to 1 MiB). */
        wait_answered(w);
        evhttp_send_reply_end(req);
        client_output_added(s->client);
}

void client_http_get(struct client *c, struct evhttp_request *req, const char *last_event_id) {
        struct session_http *s = session_of(c);
        uint64_t seq = 0, stream = 0;
        bool resuming = parse_event_id(s, last_event_id, &seq, &stream);

        note_use(s, true);
        if (resuming && stream > 0) {
                resume_post_stream(s, req, stream, seq);
                return;
        }
        if (s->stream) {
                /* One stream a session: a second one would split its events. */
                evhttp_send_error(req, 409, "This session's stream is open already");
                return;
        }
        s->stream = wait_new(s, req);
        if (!s->stream) {
                evhttp_send_error(req, 503, "Out of memory");
                return;
        }
        s->stream->state = WAIT_OWED;
        note_use(s, false);
        start_event_stream(s, req);
        arm_keepalive(s);
        replay(s, s->stream, 0, resuming ? seq : s->streamed_seq);
        client_output_added(c);
}

void client_http_delete(struct client *c, struct evhttp_request *req) {
        struct session_http *s = session_of(c);

        client_log(c, LOG_DEBUG, "HTTP session ended by the client (DELETE)");
        add_session_header(s, req);
        evhttp_send_reply(req, 200, "OK", NULL);
        client_set_state(c, CLIENT_JUSTFREE);
}

void client_http_end_idle(struct user_idle *e, unsigned limit) {
        struct session_http *s = (struct session_http *)((char *)e - offsetof(struct session_http, idleness));
        struct client *c = s->client;

        client_log(c, LOG_NOTICE, "HTTP session idle for %.0f s ended to admit a new client of uid %u (maxClientsPerUser %u)",
                   (double)(now_usec() - e->since) / USEC_PER_SEC, (unsigned)e->uid, limit);
        client_set_state(c, CLIENT_JUSTFREE);
}
