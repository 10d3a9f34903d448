/* The Streamable HTTP transport, and the legacy HTTP+SSE one (protocol 2024-11-05: an
 * event stream whose "endpoint" event says where to POST, the answers on that stream);
 * see transport-http.h.
 *
 * curl calls our write and header callbacks from inside curl_multi_socket_action(); they
 * only parse into this transport's queue of received messages and wake its delivery
 * event, which hands them up later, outside curl (the connection may send from there,
 * which adds transfers). A transfer's end comes from curl-loop.c after curl returned. */
#include "transport-http.h"

#include <curl/curl.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "curl-loop.h"
#include "http-answer.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "remote-config.h"
#include "server-transport.h"
#include "oauth-metadata.h"
#include "sse.h"
#include "time-util.h"

/* Easy handles kept for the next transfers once theirs ended: a new handle's state and
 * buffers (its download buffer alone is 16 KiB) would be allocated again, and a kept one
 * keeps its TLS sessions for resumption. */
#define HTTP_SPARE_HANDLES 8
/* A GET stream that dropped is opened again after this long (never in a tight loop). */
#define HTTP_REOPEN_USEC (1 * USEC_PER_SEC)
/* Bytes of an origin ("https://host:port") kept; a longer one matches nothing. */
#define HTTP_ORIGIN_MAX 300

enum transfer_kind { TRANSFER_POST, TRANSFER_GET, TRANSFER_DELETE };

/* Where the transport is in its life; set_state() is the only place it changes. An open
 * one owns its transfers, the POSTs waiting for a connection and the reopen timer; a
 * closing one only the session's DELETE, if one went; a broken or finished one nothing
 * of curl's, so no transfer's end can reach it. */
enum http_state {
        HTTP_OPEN,      /* messages go and come */
        HTTP_BROKEN,    /* reported broken: nothing is sent or handed up any more; waits for
                         * the connection to close the input */
        HTTP_CLOSING,   /* the input closed: the DELETE of the session under way */
        HTTP_FINISHED,  /* every transfer gone: the run is told so, on a later loop turn */
        HTTP_STATE_COUNT,
};

/* Which transport the server speaks: a fact learned once, not a stage of life. */
enum http_wire {
        WIRE_PROBING,    /* no "type": Streamable HTTP, unless a 4xx to initialize says an old server */
        WIRE_STREAMABLE,
        WIRE_LEGACY,     /* HTTP+SSE: POSTs go to the endpoint the stream names */
};

/* The GET stream of what a Streamable HTTP server sends by itself (for the legacy
 * transport: the session's stream, OPEN or not). */
enum get_stream {
        GET_UNWANTED,    /* not initialized yet */
        GET_CLOSED,      /* wanted, not open: opened at the next transfer's end */
        GET_WAITING,     /* it dropped or ended: opened again when the reopen timer fires */
        GET_OPEN,        /* its transfer is active */
        GET_UNSUPPORTED, /* the server offers none: never opened */
};

/* What the queue of received messages holds, each record a kind byte, a size_t length
 * and the bytes; an unanswered request's bytes are its id (int64_t) and the words of
 * what came instead. */
/* RECORD_RELATED: a message on the answer stream of one of our requests, its id first. */
enum record_kind { RECORD_LINE, RECORD_OVERSIZE, RECORD_UNANSWERED, RECORD_RELATED };

struct transfer {
        TAILQ_ENTRY(transfer) entry;
        struct http_transport *h;
        enum transfer_kind kind;
        CURL *easy;                 /* NULL while waiting for a connection */
        struct curl_slist *headers;
        char *body;                 /* POST: the message, without a newline */
        size_t body_len;
        int64_t request_id;         /* POST of a request: the daemon's id; else -1 */
        bool started;               /* the answer began: its status and type are known */
        bool elsewhere;             /* a legacy POST: its answer comes on the stream */
        struct curl_slist *mirror;  /* a modern request's headers that mirror its body; NULL: legacy */
        struct http_answer answer;  /* once started */
        struct http_answer_sink sink;
        char curl_error[CURL_ERROR_SIZE];   /* curl's words for a failed transfer */
};

TAILQ_HEAD(transfer_list, transfer);

struct http_transport {
        struct server_transport t;  /* first: what the connection holds */
        struct event_base *base;
        struct curl_loop *loop;
        const struct logger *log;
        const char *name;
        const struct remote_config *rc;
        struct curl_slist *config_headers;
        http_bearer_fn bearer;         /* the sign-in token, asked at each request */
        void *bearer_userdata;
        bool token_sent;               /* a request carried one */
        bool challenge_scope;          /* the last Bearer challenge said insufficient_scope, with a scope */
        char origin[HTTP_ORIGIN_MAX + 1]; /* of rc->url: where config_headers may go; "" none */
        size_t max_message;
        http_finished_fn finished;
        void *userdata;
        struct transfer_list active;   /* in the curl loop */
        struct transfer_list waiting;  /* POSTs waiting for one of maxConnections */
        CURL *spare[HTTP_SPARE_HANDLES]; /* reset, for the next transfers */
        unsigned n_spare;
        unsigned n_active;
        size_t waiting_bytes;
        size_t input_limit;
        bool input_full;               /* over serverInputLimit, said once */
        bool deaf;                     /* the connection stopped receiving: nothing is handed up */
        enum http_state state;
        enum http_wire wire;
        enum get_stream get;
        struct evbuffer *received;     /* records not handed up yet */
        struct event *deliver;         /* hands them up */
        struct event *reopen;          /* opens the GET stream (again) */
        struct event *finish;          /* tells the run it is over */
        char *endpoint;                /* legacy: where to POST, once the stream said; NULL before */
        bool endpoint_refused;         /* legacy: the stream named one on another origin */
        char *session_id;              /* Mcp-Session-Id, once the server gave one */
        char protocol_version[32];     /* negotiated by initialize; "" before */
        char last_event_id[SSE_ID_MAX + 1]; /* of the GET stream, for Last-Event-ID */
        struct http_end end;
};

static struct http_transport *http_of(struct server_transport *t) {
        return (struct http_transport *)t;
}

static bool legacy(const struct http_transport *h) {
        return h->wire == WIRE_LEGACY;
}

static void subject_log(const struct http_transport *h, int priority, const char *fmt, ...) _printf_(3, 4);
static void subject_log(const struct http_transport *h, int priority, const char *fmt, ...) {
        char text[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        log_emit(h->log, priority, &(struct log_subject){ .server = h->name }, "%s", text);
}

/* ---- its state ---- */

static const char *const state_names[HTTP_STATE_COUNT] = {
        [HTTP_OPEN] = "open", [HTTP_BROKEN] = "broken", [HTTP_CLOSING] = "closing", [HTTP_FINISHED] = "finished",
};

/* What may follow what: only forward; an abort finishes from anywhere. */
static const bool moves[HTTP_STATE_COUNT][HTTP_STATE_COUNT] = {
        [HTTP_OPEN] = { [HTTP_BROKEN] = true, [HTTP_CLOSING] = true, [HTTP_FINISHED] = true },
        [HTTP_BROKEN] = { [HTTP_CLOSING] = true, [HTTP_FINISHED] = true },
        [HTTP_CLOSING] = { [HTTP_FINISHED] = true },
};

/* Something that cannot happen in the transport's state (the end of a transfer it does
 * not have, a timer it released, a move backwards): a bug of the daemon's, stopped hard
 * rather than run on with a transport whose state no longer says what it owns. Not
 * assert(): release builds keep it. */
_Noreturn static void impossible(const struct http_transport *h, const char *what) {
        subject_log(h, LOG_CRIT, "bug: its HTTP transport: %s in state %s", what, state_names[h->state]);
        abort();
}

static void stop_all(struct http_transport *h);

/* What a state no longer owns, dropped as the transport enters it: every transfer, the
 * POSTs that wait and the reopen timer once it is not open (a closing one starts its
 * DELETE after); the records received and not handed up once broken (they never will be). */
static void release(struct http_transport *h, enum http_state state) {
        if (state == HTTP_OPEN)
                return;
        stop_all(h);
        if (state == HTTP_BROKEN)
                evbuffer_drain(h->received, evbuffer_get_length(h->received));
}

/* The only place the transport changes state: the move checked, what the new state does
 * not own released, and the run's end made due once, as it enters finished. */
static void set_state(struct http_transport *h, enum http_state state) {
        enum http_state old = h->state;

        if (!moves[old][state]) {
                char what[64];

                snprintf(what, sizeof what, "a move to %s", state_names[state]);
                impossible(h, what);
        }
        h->state = state;
        subject_log(h, LOG_DEBUG, "its HTTP transport: %s -> %s", state_names[old], state_names[state]);
        release(h, state);
        if (state == HTTP_FINISHED)
                event_active(h->finish, EV_TIMEOUT, 0);
}

const char *transport_http_state(const struct server_transport *t) {
        return state_names[((const struct http_transport *)t)->state];
}

/* ---- what is received ---- */

/* A record's kind and length; its bytes follow. */
static int queue_head(struct http_transport *h, enum record_kind kind, size_t len) {
        unsigned char k = (unsigned char)kind;

        if (evbuffer_add(h->received, &k, 1) < 0 || evbuffer_add(h->received, &len, sizeof len) < 0)
                return -ENOMEM;
        event_active(h->deliver, EV_TIMEOUT, 0);
        return 0;
}

static int queue_record(struct http_transport *h, enum record_kind kind, const char *data, size_t len) {
        return queue_head(h, kind, len) < 0 || evbuffer_add(h->received, data, len) < 0 ? -ENOMEM : 0;
}

static void queue_message(struct http_transport *h, const char *data, size_t len, bool oversize) {
        if (queue_record(h, oversize ? RECORD_OVERSIZE : RECORD_LINE, data, len) < 0)
                subject_log(h, LOG_ERR, "out of memory: a message from the server was dropped");
}

/* A message that came on the answer stream of request id: a server's request made for that
 * call, or its progress (Streamable HTTP: such messages "SHOULD relate to the originating
 * client request"). */
static void queue_related(struct http_transport *h, int64_t id, const char *data, size_t len) {
        if (queue_head(h, RECORD_RELATED, sizeof id + len) < 0 || evbuffer_add(h->received, &id, sizeof id) < 0 ||
            evbuffer_add(h->received, data, len) < 0)
                subject_log(h, LOG_ERR, "out of memory: a message from the server was dropped");
}

static void free_taken(const void *data, size_t len, void *extra) {
        free((void *)data);
}

/* A message in a malloc'd body, taken rather than copied: its bytes become their own
 * piece of the queue, which the delivery reads in place (a large answer is not copied
 * twice more), freed once handed up. */
static void queue_taken_message(struct http_transport *h, char *data, size_t len) {
        if (queue_head(h, RECORD_LINE, len) < 0 || evbuffer_add_reference(h->received, data, len, free_taken, NULL) < 0) {
                free(data);
                subject_log(h, LOG_ERR, "out of memory: a message from the server was dropped");
        }
}

/* The answer to request id ended without its response: the connection fails the call
 * with what came instead (words from http_answer_words(): never the body). */
static void queue_unanswered(struct http_transport *h, int64_t id, const char *words) {
        char record[sizeof id + 128];
        size_t len = strnlen(words, sizeof record - sizeof id);

        memcpy(record, &id, sizeof id);
        memcpy(record + sizeof id, words, len);
        if (queue_record(h, RECORD_UNANSWERED, record, sizeof id + len) < 0)
                subject_log(h, LOG_ERR, "out of memory: request %" PRId64 " waits for requestTimeout", id);
}

static bool origin_of(const char *url, char *buf, size_t size);

/* The legacy stream's "endpoint": a URL relative to the server's, resolved by curl; it
 * must be on the configured URL's origin (scheme, host and port), or the session ends:
 * the server cannot send the daemon's messages anywhere else. */
static void take_endpoint(struct http_transport *h, const char *data, bool oversize) {
        CURLU *u = curl_url();
        char *url = NULL, origin[HTTP_ORIGIN_MAX + 1];

        if (u && !oversize && !h->endpoint && curl_url_set(u, CURLUPART_URL, h->rc->url, 0) == CURLUE_OK &&
            curl_url_set(u, CURLUPART_URL, data, 0) == CURLUE_OK && curl_url_get(u, CURLUPART_URL, &url, 0) == CURLUE_OK) {
                if (!origin_of(url, origin, sizeof origin) || strcmp(origin, h->origin) != 0) {
                        /* the stream stops (on_body()); its end breaks the session, outside curl */
                        subject_log(h, LOG_WARNING,
                                    "its event stream at %s named the endpoint %s, at another origin: refused, so that "
                                    "neither the messages nor the configured headers go there",
                                    h->rc->shown_url, url);
                        h->endpoint_refused = true;
                } else {
                        h->endpoint = strdup(url);
                        event_active(h->deliver, EV_TIMEOUT, 0); /* where the waiting POSTs start */
                }
        }
        curl_free(url);
        curl_url_cleanup(u);
}

static void on_answer_message(char *data, size_t len, bool oversize, void *userdata) {
        struct transfer *x = userdata;

        if (x->kind == TRANSFER_POST && x->request_id > 0 && !oversize)
                queue_related(x->h, x->request_id, data, len);
        else
                queue_message(x->h, data, len, oversize);
}

static void on_answer_event(const char *type, const char *data, size_t len, bool oversize, void *userdata) {
        struct transfer *x = userdata;

        if (strcmp(type, "endpoint") == 0 && legacy(x->h) && x->kind == TRANSFER_GET)
                take_endpoint(x->h, data, oversize);
}

/* Learns the answer's status and type, at its first bytes or at its end (a body-less one). */
static void begin_answer(struct transfer *x) {
        long status = 0;
        char *type = NULL;

        if (x->started)
                return;
        x->started = true;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &type);
        /* a legacy server answers its POSTs on the stream ("Accepted" here) */
        x->elsewhere = legacy(x->h) && x->kind == TRANSFER_POST;
        x->sink = (struct http_answer_sink){ .message = on_answer_message, .event = on_answer_event, .userdata = x };
        if (http_answer_begin(&x->answer, status, type, !x->elsewhere, x->h->max_message, &x->sink) < 0)
                subject_log(x->h, LOG_ERR, "out of memory: an event stream from the server was dropped");
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        struct transfer *x = userdata;
        size_t n = size * nmemb, taken;

        begin_answer(x);
        if (x->h->deaf && x->answer.kind != HTTP_ANSWER_REFUSED)
                return n;
        taken = http_answer_feed(&x->answer, data, n);
        if (x->kind == TRANSFER_GET && x->answer.kind == HTTP_ANSWER_EVENTS)
                memcpy(x->h->last_event_id, x->answer.sse.last_id, sizeof x->h->last_event_id);
        if (x->h->endpoint_refused)
                return 0;
        return taken; /* less than n: curl stops the transfer */
}

/* Mcp-Session-Id from the response that gave one (initialize's). */
/* A 401's challenge: whether it asks for a Bearer token, and where its metadata is
 * (oauth-metadata.h), for the run's end and a later sign-in. */
static void read_challenge(struct http_transport *h, const char *data, size_t n) {
        size_t name = sizeof "WWW-Authenticate:" - 1;
        char value[1024];

        if (n <= name || n - name >= sizeof value || strncasecmp(data, "WWW-Authenticate:", name) != 0)
                return;
        memcpy(value, data + name, n - name);
        value[n - name] = '\0';
        value[strcspn(value, "\r\n")] = '\0';
        if (oauth_bearer_challenge(value, h->end.resource_metadata, sizeof h->end.resource_metadata)) {
                char error[64];

                h->end.bearer_challenge = true;
                oauth_challenge_scope(value, h->end.scope, sizeof h->end.scope);
                oauth_challenge_error(value, error, sizeof error);
                h->challenge_scope = strcmp(error, "insufficient_scope") == 0 && h->end.scope[0];
        }
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata) {
        struct transfer *x = userdata;
        size_t n = size * nmemb, name = sizeof "Mcp-Session-Id:" - 1;
        char *value;

        read_challenge(x->h, data, n);
        if (n <= name || strncasecmp(data, "Mcp-Session-Id:", name) != 0 || x->h->session_id)
                return n;
        value = strndup(data + name, n - name);
        if (value) {
                size_t start = strspn(value, " \t"), len = strcspn(value + start, "\r\n");

                memmove(value, value + start, len);
                value[len] = '\0';
                if (*value && !strpbrk(value, " \t"))
                        x->h->session_id = value;
                else
                        free(value);
        }
        return n;
}

/* ---- transfers ---- */

/* A handle whose transfer ended (or never started): kept, with its options back to
 * curl's defaults (none points into a transfer any more), or cleaned up. */
static void release_easy(struct http_transport *h, CURL *e) {
        if (!e)
                return;
        if (h->n_spare == HTTP_SPARE_HANDLES || h->state != HTTP_OPEN) {
                curl_easy_cleanup(e);
                return;
        }
        curl_easy_reset(e);
        h->spare[h->n_spare++] = e;
}

static CURL *acquire_easy(struct http_transport *h) {
        return h->n_spare > 0 ? h->spare[--h->n_spare] : curl_easy_init();
}

static void transfer_free(struct transfer *x) {
        if (!x)
                return;
        release_easy(x->h, x->easy);
        curl_slist_free_all(x->headers);
        curl_slist_free_all(x->mirror);
        if (x->started)
                http_answer_done(&x->answer);
        free(x->body);
        free(x);
}

/* name: value, or the whole line when value is NULL. */
static struct curl_slist *add_header(struct curl_slist *list, bool *ok, const char *name, const char *value) {
        char line[1024];
        struct curl_slist *next;

        if (value)
                snprintf(line, sizeof line, "%s: %s", name, value);
        else
                snprintf(line, sizeof line, "%s", name);
        next = curl_slist_append(list, line);
        if (!next)
                *ok = false;
        return next ? next : list;
}

/* scheme://host:port of url as curl reads it, in lower case, the port said even when it
 * is the scheme's default; false when curl cannot read it. */
static bool origin_of(const char *url, char *buf, size_t size) {
        CURLU *u = curl_url();
        char *scheme = NULL, *host = NULL, *port = NULL;
        bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
                  curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
                  curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
                  curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK;
        int n = ok ? snprintf(buf, size, "%s://%s:%s", scheme, host, port) : -1;

        ok = n > 0 && (size_t)n < size;
        for (char *c = buf; ok && *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                        *c = (char)(*c - 'A' + 'a');
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
        curl_url_cleanup(u);
        return ok;
}

/* The sign-in token, as it is now (a refresh may have replaced it since the last request). */
static void add_bearer(struct transfer *x, bool *ok) {
        const char *token = x->h->bearer(x->h->bearer_userdata);
        struct curl_slist *next;
        char *line = NULL;

        if (!token)
                return;
        if (asprintf(&line, "Authorization: Bearer %s", token) < 0) {
                *ok = false;
                return;
        }
        next = curl_slist_append(x->headers, line);
        explicit_bzero(line, strlen(line));
        free(line);
        if (!next)
                *ok = false;
        else
                x->headers = next;
        x->h->token_sent = true;
}

/* The configured headers (a credential among them) and the sign-in token go with a request
 * to the configured URL's origin, and nowhere else: every request this transport makes,
 * whatever its kind, has them added here and only here, for the URL it is made to (curl
 * follows no redirect: make_easy()). */
static void add_config_headers(struct transfer *x, const char *url, bool *ok) {
        struct http_transport *h = x->h;
        char origin[HTTP_ORIGIN_MAX + 1];

        if (!h->config_headers && !h->bearer)
                return;
        if (!origin_of(url, origin, sizeof origin) || !h->origin[0] || strcmp(origin, h->origin) != 0) {
                subject_log(h, LOG_WARNING, "a request to %s, not the origin of \"url\": the configured headers were not sent",
                            origin_of(url, origin, sizeof origin) ? origin : "a URL curl cannot read");
                return;
        }
        for (struct curl_slist *c = h->config_headers; c; c = c->next)
                x->headers = add_header(x->headers, ok, c->data, NULL);
        if (h->bearer)
                add_bearer(x, ok);
}

/* The configured headers, then the transport's own. */
static int build_headers(struct transfer *x, const char *url) {
        struct http_transport *h = x->h;
        bool ok = true;

        add_config_headers(x, url, &ok);
        x->headers = add_header(x->headers, &ok, "Accept",
                                x->kind == TRANSFER_POST ? "application/json, text/event-stream" : "text/event-stream");
        if (x->kind == TRANSFER_POST) {
                x->headers = add_header(x->headers, &ok, "Content-Type", "application/json");
                x->headers = add_header(x->headers, &ok, "Expect:", NULL); /* no 100-continue round trip */
        }
        if (h->session_id)
                x->headers = add_header(x->headers, &ok, "Mcp-Session-Id", h->session_id);
        for (struct curl_slist *c = x->mirror; c; c = c->next) /* its own version among them */
                x->headers = add_header(x->headers, &ok, c->data, NULL);
        if (h->protocol_version[0] && !x->mirror)
                x->headers = add_header(x->headers, &ok, "MCP-Protocol-Version", h->protocol_version);
        if (x->kind == TRANSFER_GET && h->last_event_id[0])
                x->headers = add_header(x->headers, &ok, "Last-Event-ID", h->last_event_id);
        return ok ? 0 : -ENOMEM;
}

static int make_easy(struct transfer *x) {
        const struct remote_config *rc = x->h->rc;
        const char *url = x->kind == TRANSFER_POST && x->h->endpoint ? x->h->endpoint : rc->url;
        CURL *e = acquire_easy(x->h);

        if (!e || build_headers(x, url) < 0) {
                release_easy(x->h, e);
                return -ENOMEM;
        }
        x->easy = e;
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
        /* A 3xx is an answer, never followed (curl's default, said here because the headers
         * above would otherwise go where the server points); they go to no proxy either. */
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_HEADEROPT, CURLHEADER_SEPARATE);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(rc->connect_timeout * 1000));
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, curl_loop_open_socket);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->curl_error);
        if (rc->proxy)
                curl_easy_setopt(e, CURLOPT_PROXY, rc->proxy);
        if (rc->ca_file)
                curl_easy_setopt(e, CURLOPT_CAINFO, rc->ca_file);
        if (rc->insecure) {
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (x->kind == TRANSFER_POST) {
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
        } else if (x->kind == TRANSFER_DELETE) {
                curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
                curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        }
        return 0;
}

static void on_transfer_done(CURL *easy, CURLcode result, void *userdata);

/* Into the curl loop; the transfer is active until its end is reported. */
static int start_transfer(struct transfer *x) {
        struct http_transport *h = x->h;
        int r = make_easy(x);

        if (r == 0)
                r = curl_loop_add(h->loop, x->easy, on_transfer_done, h);
        if (r < 0)
                return r;
        TAILQ_INSERT_TAIL(&h->active, x, entry);
        h->n_active++;
        return 0;
}

static void remove_active(struct transfer *x) {
        TAILQ_REMOVE(&x->h->active, x, entry);
        x->h->n_active--;
        if (x->kind == TRANSFER_GET)
                x->h->get = GET_CLOSED;
}

/* The active transfer of easy, or NULL. */
static struct transfer *find_active(struct http_transport *h, CURL *easy) {
        struct transfer *x;

        TAILQ_FOREACH(x, &h->active, entry)
                if (x->easy == easy)
                        return x;
        return NULL;
}

static void stop_all(struct http_transport *h) {
        struct transfer *x;

        while ((x = TAILQ_FIRST(&h->active))) {
                curl_loop_remove(h->loop, x->easy);
                remove_active(x);
                transfer_free(x);
        }
        while ((x = TAILQ_FIRST(&h->waiting))) {
                TAILQ_REMOVE(&h->waiting, x, entry);
                transfer_free(x);
        }
        h->waiting_bytes = 0;
        event_del(h->reopen);
}

/* Once every transfer is gone after the input was closed: the run hears it on a later
 * loop turn, outside whatever called here. */
static void maybe_finish(struct http_transport *h) {
        if (h->state == HTTP_CLOSING && h->n_active == 0)
                set_state(h, HTTP_FINISHED);
}

static void open_legacy_stream(struct http_transport *h);

/* x leaves the POSTs that wait: its bytes no longer count toward serverInputLimit. */
static void unwait(struct http_transport *h, struct transfer *x) {
        TAILQ_REMOVE(&h->waiting, x, entry);
        h->waiting_bytes -= x->body_len;
        if (h->waiting_bytes == 0)
                h->input_full = false;
}

/* Starts what waits, up to maxConnections transfers at once; a legacy server's POSTs
 * once its stream said where they go. */
static void pump(struct http_transport *h) {
        struct transfer *x;

        if (h->state != HTTP_OPEN)
                return;
        if (legacy(h) && !h->endpoint) {
                open_legacy_stream(h);
                return;
        }
        /* the event stream is one connection more */
        while (h->state == HTTP_OPEN && h->n_active - (h->get == GET_OPEN) < h->rc->max_connections &&
               (x = TAILQ_FIRST(&h->waiting))) {
                unwait(h, x);
                if (start_transfer(x) < 0) {
                        subject_log(h, LOG_ERR, "out of memory: a message to the server was dropped");
                        transfer_free(x);
                }
        }
}

/* Why a session broke, as facts. Their words (failure_words()) are all that clients and
 * the status ever read of it; the details, with the URL and the server's body, go to the
 * journal only. */
enum http_failure {
        HTTP_FAILURE_CREDENTIAL,   /* 401, 403: a restart cannot help */
        HTTP_FAILURE_SESSION_LOST, /* 404 to a request of a session */
        HTTP_FAILURE_STATUS,       /* 5xx, 404 */
        HTTP_FAILURE_TRANSFER,     /* curl's error */
        HTTP_FAILURE_STREAM_ENDED, /* the legacy stream, which is the session, ended */
        HTTP_FAILURE_ENDPOINT,     /* the legacy stream named an endpoint at another origin */
        HTTP_FAILURE_MEMORY,
};

static const char *method_name(enum transfer_kind kind) {
        return kind == TRANSFER_POST ? "POST" : kind == TRANSFER_GET ? "GET" : "DELETE";
}

/* What to do about a certificate that was not trusted. */
static const char *tls_hint(const struct http_transport *h, CURLcode result) {
        if (result != CURLE_PEER_FAILED_VERIFICATION && result != CURLE_SSL_CACERT_BADFILE)
                return "";
        return h->rc->ca_file ? " (is the server's certificate signed by the CA in \"caFile\"?)"
                              : " (the system's CAs do not trust the server's certificate: give its CA in \"caFile\")";
}

/* The words of a broken session, for anyone to read: made of the failure's kind, the
 * method, the status and curl's fixed text for its code, and of nothing else, so that they
 * cannot carry the URL (its query may hold a key), a header or what the server wrote. */
static const char *failure_words(const struct http_transport *h, enum http_failure f, enum transfer_kind kind,
                                 long status, CURLcode result, char *buf, size_t size) {
        switch (f) {
        case HTTP_FAILURE_CREDENTIAL:
                if (h->end.insufficient_scope)
                        snprintf(buf, size, "HTTP %ld to a %s: the server needs scope %.160s (insufficient_scope)", status,
                                 method_name(kind), h->end.scope);
                else if (h->token_sent)
                        snprintf(buf, size, "HTTP %ld to a %s: the server refused its sign-in token", status,
                                 method_name(kind));
                else if (h->bearer && h->end.bearer_challenge)
                        snprintf(buf, size, "HTTP %ld to a %s: the server asks for a sign-in (OAuth)", status,
                                 method_name(kind));
                else
                        snprintf(buf, size, "HTTP %ld to a %s: the server refused its credential (check \"headers\"); not retried",
                                 status, method_name(kind));
                break;
        case HTTP_FAILURE_SESSION_LOST:
                snprintf(buf, size, "HTTP 404 to a %s: the server lost the session; a new run initializes again",
                         method_name(kind));
                break;
        case HTTP_FAILURE_STATUS:
                snprintf(buf, size, "HTTP %ld to a %s", status, method_name(kind));
                break;
        case HTTP_FAILURE_TRANSFER:
                snprintf(buf, size, "%s failed: %s%s", method_name(kind), curl_easy_strerror(result), tls_hint(h, result));
                break;
        case HTTP_FAILURE_STREAM_ENDED:
                snprintf(buf, size, "the server ended its event stream");
                break;
        case HTTP_FAILURE_ENDPOINT:
                snprintf(buf, size, "its event stream named an endpoint at another origin than \"url\"'s; refused");
                break;
        case HTTP_FAILURE_MEMORY:
                snprintf(buf, size, "out of memory");
                break;
        }
        return buf;
}

/* The session broke: detail (printf) goes to the journal, the words to the connection. */
static void report_broken(struct http_transport *h, enum http_failure f, enum transfer_kind kind, long status,
                          CURLcode result, const char *detail, ...) _printf_(6, 7);
static void report_broken(struct http_transport *h, enum http_failure f, enum transfer_kind kind, long status,
                          CURLcode result, const char *detail, ...) {
        char words[300], text[600];
        va_list ap;

        if (h->state != HTTP_OPEN)
                return;
        h->end.failure = true;
        h->end.no_retry = f == HTTP_FAILURE_CREDENTIAL;
        set_state(h, HTTP_BROKEN);
        if (detail) {
                va_start(ap, detail);
                vsnprintf(text, sizeof text, detail, ap);
                va_end(ap);
                subject_log(h, LOG_WARNING, "%s", text);
        }
        h->t.events->broken(failure_words(h, f, kind, status, result, words, sizeof words), h->t.userdata);
}

/* ---- the GET stream ---- */

/* The GET transfer both streams are; -ENOMEM when it could not start. */
static int start_get_transfer(struct http_transport *h) {
        struct transfer *x = calloc(1, sizeof *x);
        int r;

        if (!x)
                return -ENOMEM;
        *x = (struct transfer){ .h = h, .kind = TRANSFER_GET, .request_id = -1 };
        r = start_transfer(x);
        if (r < 0) {
                transfer_free(x);
                return r;
        }
        h->get = GET_OPEN;
        return 0;
}

/* The stream of what the server sends by itself: a failure to open it is tried again at
 * the next transfer's end. */
static void open_get(struct http_transport *h) {
        if (legacy(h) || h->get != GET_CLOSED || h->state != HTTP_OPEN)
                return;
        (void)start_get_transfer(h);
}

/* The legacy stream: the session itself, which carries the endpoint and every answer. */
static void open_legacy_stream(struct http_transport *h) {
        if (h->get == GET_OPEN || h->state != HTTP_OPEN)
                return;
        if (start_get_transfer(h) < 0)
                report_broken(h, HTTP_FAILURE_MEMORY, TRANSFER_GET, 0, CURLE_OK, "out of memory opening its event stream");
}

static void on_reopen(evutil_socket_t fd, short what, void *userdata) {
        struct http_transport *h = userdata;

        if (h->state != HTTP_OPEN || h->get != GET_WAITING)
                impossible(h, "the reopen timer");
        h->get = GET_CLOSED;
        open_get(h);
}

/* Not at once, even when the next transfer's end comes first: a server that ends every
 * GET at once is not asked in a tight loop. */
static void schedule_reopen(struct http_transport *h) {
        struct timeval tv = timeval_from_usec(HTTP_REOPEN_USEC);

        if (h->state != HTTP_OPEN || h->get == GET_UNSUPPORTED)
                return;
        h->get = GET_WAITING;
        evtimer_add(h->reopen, &tv);
}

/* ---- a transfer's end ---- */

/* No "type", and the first POST refused as an old server does (spec: "Backwards
 * Compatibility"): the legacy transport is tried, and the message goes again on it. */
static void fall_back(struct http_transport *h, struct transfer *x, long status) {
        struct transfer *again = calloc(1, sizeof *again);

        h->wire = WIRE_LEGACY;
        subject_log(h, LOG_NOTICE, "HTTP %ld to a POST of initialize: no Streamable HTTP at %s; trying the legacy HTTP+SSE transport",
                    status, h->rc->shown_url);
        if (!again) {
                report_broken(h, HTTP_FAILURE_MEMORY, TRANSFER_POST, 0, CURLE_OK, NULL);
                return;
        }
        *again = (struct transfer){ .h = h, .kind = TRANSFER_POST, .body = TAKE_PTR(x->body), .body_len = x->body_len,
                                    .request_id = x->request_id };
        TAILQ_INSERT_HEAD(&h->waiting, again, entry);
        h->waiting_bytes += again->body_len;
}

/* What an HTTP status meant. */
enum outcome {
        OUTCOME_ANSWERED,  /* 2xx, or nothing to do about it */
        OUTCOME_REFUSED,   /* this message was refused; the session stands */
        OUTCOME_AGAIN,     /* sent again, on the legacy transport */
        OUTCOME_BROKEN,    /* the session is over */
};

/* A modern request refused with a 4xx (spec, Streamable HTTP: "Backward Compatibility"):
 * a body that is a recognized modern error (-32020, -32021, -32022) is a modern server's
 * answer to it, handed up; anything else is a legacy server's refusal of what it does
 * not know: the request fails, and neither the session nor the transport is given up
 * (the connection's legacy initialize follows, which may still find the HTTP+SSE one). */
static enum outcome judge_modern_refusal(struct http_transport *h, struct transfer *x, long status) {
        const struct http_answer *a = &x->answer;
        json_object *msg = NULL, *error, *code;
        json_tokener *tok = a->quote_len > 0 ? json_tokener_new() : NULL;
        int c = 0;

        if (tok) {
                msg = json_tokener_parse_ex(tok, a->quote, (int)a->quote_len);
                json_tokener_free(tok);
        }
        if (json_object_object_get_ex(msg, "error", &error) && json_object_object_get_ex(error, "code", &code) &&
            json_object_is_type(code, json_type_int))
                c = json_object_get_int(code);
        json_object_put(msg);
        if (c <= -32020 && c >= -32022) {
                queue_message(h, a->quote, a->quote_len, false);
                return OUTCOME_REFUSED;
        }
        subject_log(h, LOG_INFO, "HTTP %ld to a modern request, with no modern error: a legacy server", status);
        return OUTCOME_REFUSED;
}

static enum outcome judge_status(struct http_transport *h, struct transfer *x, long status) {
        const struct http_answer *a = &x->answer;

        if (status >= 200 && status <= 299)
                return OUTCOME_ANSWERED;
        if (x->kind == TRANSFER_GET && status == 405) {
                h->get = GET_UNSUPPORTED; /* the server sends nothing by itself */
                return OUTCOME_ANSWERED;
        }
        if (x->kind == TRANSFER_DELETE)
                return OUTCOME_ANSWERED; /* 405: the server keeps sessions until they expire; nothing to do */
        if (x->mirror && status >= 400 && status <= 499 && status != 401 && status != 403)
                return judge_modern_refusal(h, x, status);
        if (x->kind == TRANSFER_POST && h->wire == WIRE_PROBING && (status == 400 || status == 404 || status == 405)) {
                fall_back(h, x, status);
                return OUTCOME_AGAIN;
        }
        if (status == 401 || status == 403) {
                h->end.unauthorized = status == 401;
                /* a step-up (RFC 6750 section 3.1): the token is good, its scope is not enough */
                h->end.insufficient_scope = status == 403 && h->challenge_scope;
                report_broken(h, HTTP_FAILURE_CREDENTIAL, x->kind, status, CURLE_OK,
                              "HTTP %ld from %s: the server refused its credential", status, h->rc->url);
                return OUTCOME_BROKEN;
        }
        if (status == 404 && h->session_id) {
                report_broken(h, HTTP_FAILURE_SESSION_LOST, x->kind, status, CURLE_OK,
                              "HTTP 404 from %s: the server lost the session", h->rc->url);
                return OUTCOME_BROKEN;
        }
        if (x->kind == TRANSFER_GET && !legacy(h)) {
                subject_log(h, LOG_INFO, "HTTP %ld to its GET stream: the server sends nothing by itself, then", status);
                h->get = GET_UNSUPPORTED;
                return OUTCOME_ANSWERED;
        }
        if (status >= 500 || status == 404) {
                report_broken(h, HTTP_FAILURE_STATUS, x->kind, status, CURLE_OK, "HTTP %ld to %s %s%s%.*s", status,
                              method_name(x->kind), h->rc->url, a->quote_len ? ": " : "", (int)a->quote_len, a->quote);
                return OUTCOME_BROKEN;
        }
        /* another 3xx or 4xx: this message was refused, the session stands */
        subject_log(h, LOG_WARNING, "HTTP %ld to a POST: %.*s", status, (int)a->quote_len, a->quote);
        return OUTCOME_REFUSED;
}

/* The answer is whole: a JSON body's message is handed up. */
static void finish_answer(struct transfer *x) {
        size_t len = 0;
        char *json = http_answer_end(&x->answer, &len);

        if (json)
                queue_taken_message(x->h, json, len);
}

/* A POST of a request whose answer is over: if its response was not among what came, the
 * connection fails the call at once, told what came instead (it would wait for
 * requestTimeout otherwise, or for ever). A legacy server's responses come on its stream. */
static void end_request(struct transfer *x) {
        char words[128];

        if (x->kind != TRANSFER_POST || x->request_id < 0 || (x->elsewhere && x->answer.kind != HTTP_ANSWER_REFUSED))
                return;
        queue_unanswered(x->h, x->request_id, http_answer_words(&x->answer, words, sizeof words));
}

/* initialize's answer says the protocol version, sent from then on (spec: "Protocol
 * Version Header"); read from the first answers only, until one has it. */
static void learn_protocol_version(struct http_transport *h, const char *line, size_t len) {
        json_object *msg, *result, *v;
        json_tokener *tok;

        if (h->protocol_version[0] || !memmem(line, len, "\"protocolVersion\"", 17))
                return;
        tok = json_tokener_new();
        msg = tok ? json_tokener_parse_ex(tok, line, (int)(len < INT32_MAX ? len : INT32_MAX)) : NULL;
        json_tokener_free(tok);
        if (msg && json_object_object_get_ex(msg, "result", &result) &&
            json_object_object_get_ex(result, "protocolVersion", &v) && json_object_is_type(v, json_type_string) &&
            json_object_get_string_len(v) < (int)sizeof h->protocol_version && !strpbrk(json_object_get_string(v), "\r\n"))
                snprintf(h->protocol_version, sizeof h->protocol_version, "%s", json_object_get_string(v));
        json_object_put(msg);
}

/* The notification that ends initialization: after it, the GET stream may open. */
static bool says_initialized(const struct transfer *x) {
        return x->kind == TRANSFER_POST && x->body && memmem(x->body, x->body_len, "\"notifications/initialized\"", 27);
}

static void transport_error(struct http_transport *h, struct transfer *x, CURLcode result) {
        if (x->kind == TRANSFER_GET && !legacy(h)) {
                subject_log(h, LOG_INFO, "its GET stream dropped (%s); opening it again", curl_easy_strerror(result));
                schedule_reopen(h);
                return;
        }
        if (x->kind == TRANSFER_DELETE)
                return;
        report_broken(h, HTTP_FAILURE_TRANSFER, x->kind, 0, result, "%s %s failed: %s", method_name(x->kind), h->rc->url,
                      x->curl_error[0] ? x->curl_error : curl_easy_strerror(result));
}

static void on_transfer_done(CURL *easy, CURLcode result, void *userdata) {
        struct http_transport *h = userdata;
        struct transfer *x = find_active(h, easy);
        long status = 0;

        if (!x)
                impossible(h, "the end of a transfer it does not have");
        remove_active(x);
        begin_answer(x);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (x->kind == TRANSFER_GET && h->endpoint_refused) {
                report_broken(h, HTTP_FAILURE_ENDPOINT, x->kind, 0, CURLE_OK, NULL); /* told when it came */
        } else if (x->answer.oversize) {
                /* reported as an oversize message; the session stands */
                end_request(x);
        } else if (result != CURLE_OK) {
                transport_error(h, x, result);
        } else {
                switch (judge_status(h, x, status)) {
                case OUTCOME_ANSWERED:
                        finish_answer(x);
                        /* fall through */
                case OUTCOME_REFUSED:
                        end_request(x);
                        if (says_initialized(x) && h->get == GET_UNWANTED)
                                h->get = GET_CLOSED;
                        if (x->kind == TRANSFER_GET && legacy(h)) /* the session is its stream */
                                report_broken(h, HTTP_FAILURE_STREAM_ENDED, x->kind, status, CURLE_OK,
                                              "its event stream at %s ended (HTTP %ld)", h->rc->url, status);
                        else if (x->kind == TRANSFER_GET) /* the server ended it: it may send more later */
                                schedule_reopen(h);
                        break;
                case OUTCOME_AGAIN:
                case OUTCOME_BROKEN:
                        break;
                }
        }
        transfer_free(x);
        if (h->state == HTTP_CLOSING) {
                maybe_finish(h);
                return;
        }
        pump(h);
        open_get(h);
}

/* ---- handing up ---- */

static void deliver_unanswered(struct http_transport *h, const char *data, size_t len) {
        char words[128];
        int64_t id;

        memcpy(&id, data, sizeof id);
        snprintf(words, sizeof words, "%.*s", (int)(len - sizeof id), data + sizeof id);
        if (h->t.events->unanswered)
                h->t.events->unanswered(id, words, h->t.userdata);
}

static void on_deliver(evutil_socket_t fd, short what, void *userdata) {
        struct http_transport *h = userdata;
        unsigned char kind;
        size_t len;

        while (!h->deaf && evbuffer_get_length(h->received) > 0) {
                char *data;

                evbuffer_remove(h->received, &kind, 1);
                evbuffer_remove(h->received, &len, sizeof len);
                data = (char *)evbuffer_pullup(h->received, (ev_ssize_t)len);
                if (!data && len > 0)
                        break;
                if (kind == RECORD_OVERSIZE) {
                        h->t.events->oversize(data, len, h->t.userdata);
                } else if (kind == RECORD_UNANSWERED) {
                        deliver_unanswered(h, data, len);
                } else {
                        const char *line = data;
                        size_t n = len;

                        if (kind == RECORD_RELATED) {
                                memcpy(&h->t.related, data, sizeof h->t.related);
                                line += sizeof h->t.related;
                                n -= sizeof h->t.related;
                        }
                        learn_protocol_version(h, line, n);
                        if (h->wire == WIRE_PROBING) /* it answered: it speaks what we sent */
                                h->wire = WIRE_STREAMABLE;
                        h->t.events->line(line, n, NULL, h->t.userdata);
                        h->t.related = 0;
                }
                evbuffer_drain(h->received, len);
        }
        pump(h); /* a legacy endpoint may have come */
}

static void on_finish(evutil_socket_t fd, short what, void *userdata) {
        struct http_transport *h = userdata;

        if (h->state != HTTP_FINISHED)
                impossible(h, "its end");
        /* the last thing done here: the run may free the connection, and this with it */
        h->finished(&h->end, h->userdata);
}

/* ---- operations ---- */

static size_t http_queued(const struct server_transport *t) {
        return ((const struct http_transport *)t)->waiting_bytes;
}

/* Logged once a queue, as the pipe transport does. */
static bool over_input_limit(struct http_transport *h, size_t len) {
        if (h->input_limit == 0 || h->waiting_bytes == 0 ||
            (h->waiting_bytes < h->input_limit && len <= h->input_limit - h->waiting_bytes))
                return false;
        if (!h->input_full)
                subject_log(h, LOG_WARNING,
                            "all %u connections busy and %zu bytes waiting; refusing what would pass serverInputLimit (%zu bytes)",
                            h->rc->max_connections, h->waiting_bytes, h->input_limit);
        h->input_full = true;
        return true;
}

/* ---- cancellation: the answer of a request given up would come on its POST, which is
 * ended once notifications/cancelled is on its way (spec: "Cancellation"), so that a
 * stalled call holds none of the server's connections ---- */

/* The requestId a notifications/cancelled names, if it is one of the daemon's ids. */
static int64_t cancelled_id(const struct transfer *x) {
        json_object *msg = json_tokener_parse(x->body), *params, *id;
        int64_t r = -1;

        if (json_object_object_get_ex(msg, "params", &params) && json_object_object_get_ex(params, "requestId", &id) &&
            json_object_is_type(id, json_type_int))
                r = json_object_get_int64(id);
        json_object_put(msg);
        return r;
}

/* Sets x->request_id; for a cancellation, returns the id it cancels (else -1). */
static int64_t read_head(struct transfer *x) {
        static const char cancelled[] = "notifications/cancelled";
        struct jsonrpc_request_head head;

        x->request_id = -1;
        if (!jsonrpc_scan_request_head(x->body, x->body_len, &head) || !head.method)
                return -1;
        x->request_id = head.id;
        if (head.method_len == sizeof cancelled - 1 && memcmp(head.method, cancelled, head.method_len) == 0)
                return cancelled_id(x);
        return -1;
}

/* ---- the modern era's headers, which mirror the body (spec, Streamable HTTP: "Standard
 * Request Headers", "Value Encoding") ---- */

static bool header_safe(const char *v) {
        size_t len = strlen(v);

        if (len == 0 || v[0] == ' ' || v[0] == '\t' || v[len - 1] == ' ' || v[len - 1] == '\t' ||
            (strncmp(v, "=?base64?", 9) == 0 && len >= 11 && strcmp(v + len - 2, "?=") == 0))
                return false;
        for (const unsigned char *c = (const unsigned char *)v; *c; c++)
                if ((*c < 0x20 && *c != '\t') || *c > 0x7e)
                        return false;
        return true;
}

/* "=?base64?...?=" of v's bytes; malloc'd, NULL when out of memory. */
static char *base64_sentinel(const char *v) {
        static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t len = strlen(v), n = 0;
        char *out = malloc(9 + (len + 2) / 3 * 4 + 3);

        if (!out)
                return NULL;
        memcpy(out, "=?base64?", 9);
        n = 9;
        for (size_t i = 0; i < len; i += 3) {
                unsigned b = (unsigned char)v[i] << 16 | (i + 1 < len ? (unsigned char)v[i + 1] << 8 : 0) |
                             (i + 2 < len ? (unsigned char)v[i + 2] : 0);

                out[n++] = digits[b >> 18 & 63];
                out[n++] = digits[b >> 12 & 63];
                out[n++] = i + 1 < len ? digits[b >> 6 & 63] : '=';
                out[n++] = i + 2 < len ? digits[b & 63] : '=';
        }
        memcpy(out + n, "?=", 3);
        return out;
}

static const char *string_member(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                                  : NULL;
}

/* A request whose params._meta names its protocol version (a modern one: the connection
 * put our _meta there) goes with MCP-Protocol-Version, Mcp-Method and, for a call, a read
 * or a prompt, Mcp-Name; a legacy message with none of them. 0 or -ENOMEM. */
static int read_mirror(struct transfer *x) {
        static const char version_key[] = "\"io.modelcontextprotocol/protocolVersion\"";
        json_object *msg, *params = NULL, *meta = NULL;
        const char *version, *method, *name = NULL;
        _cleanup_free_ char *encoded = NULL;
        bool ok = true;

        if (x->request_id < 0 || !memmem(x->body, x->body_len, version_key, sizeof version_key - 1))
                return 0;
        msg = json_tokener_parse(x->body);
        json_object_object_get_ex(msg, "params", &params);
        json_object_object_get_ex(params, "_meta", &meta);
        version = string_member(meta, "io.modelcontextprotocol/protocolVersion");
        method = string_member(msg, "method");
        if (version && method && header_safe(version) && header_safe(method)) {
                if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
                        name = string_member(params, "name");
                else if (strcmp(method, "resources/read") == 0)
                        name = string_member(params, "uri");
                if (name && !header_safe(name))
                        name = encoded = base64_sentinel(name);
                x->mirror = add_header(x->mirror, &ok, "MCP-Protocol-Version", version);
                x->mirror = add_header(x->mirror, &ok, "Mcp-Method", method);
                if (name && strlen(name) < 1000) /* add_header()'s line */
                        x->mirror = add_header(x->mirror, &ok, "Mcp-Name", name);
        }
        json_object_put(msg);
        return ok ? 0 : -ENOMEM;
}

static struct transfer *find_post(struct transfer_list *list, int64_t id) {
        struct transfer *x;

        TAILQ_FOREACH(x, list, entry)
                if (x->kind == TRANSFER_POST && x->request_id == id)
                        return x;
        return NULL;
}

/* A request still waiting for a connection is forgotten; true if there was one. */
static bool drop_waiting(struct http_transport *h, int64_t id) {
        struct transfer *x = find_post(&h->waiting, id);

        if (!x)
                return false;
        unwait(h, x);
        transfer_free(x);
        return true;
}

/* The POST of a request under way is ended: curl closes its connection (or resets its
 * HTTP/2 stream), and what waits may take its place. */
static void abort_request(struct http_transport *h, int64_t id) {
        struct transfer *x = find_post(&h->active, id);

        if (!x)
                return;
        curl_loop_remove(h->loop, x->easy);
        remove_active(x);
        transfer_free(x);
        subject_log(h, LOG_DEBUG, "request %" PRId64 " cancelled: its POST was ended", id);
        pump(h);
}

static int http_send(struct server_transport *t, const struct iovec *parts, size_t n_parts) {
        struct http_transport *h = http_of(t);
        struct transfer *x;
        size_t len = 0;
        int64_t cancels;

        if (h->state != HTTP_OPEN)
                return -EPIPE;
        for (size_t i = 0; i < n_parts; i++)
                len += parts[i].iov_len;
        if (over_input_limit(h, len))
                return -ENOBUFS;
        x = calloc(1, sizeof *x);
        if (x)
                x->body = malloc(len + 1);
        if (!x || !x->body) {
                free(x);
                return -ENOMEM;
        }
        x->h = h;
        x->kind = TRANSFER_POST;
        for (size_t i = 0; i < n_parts; i++) {
                memcpy(x->body + x->body_len, parts[i].iov_base, parts[i].iov_len);
                x->body_len += parts[i].iov_len;
        }
        x->body[x->body_len] = '\0';
        /* the connection writes lines: the newline is the stdio framing's, not the message's */
        while (x->body_len > 0 && x->body[x->body_len - 1] == '\n')
                x->body[--x->body_len] = '\0';
        cancels = read_head(x);
        if (read_mirror(x) < 0) {
                transfer_free(x);
                return -ENOMEM;
        }
        if (cancels >= 0 && drop_waiting(h, cancels)) {
                transfer_free(x); /* the server never saw the request: nothing to cancel */
                return 0;
        }
        TAILQ_INSERT_TAIL(&h->waiting, x, entry);
        h->waiting_bytes += x->body_len;
        pump(h);
        if (cancels >= 0)
                abort_request(h, cancels);
        return 0;
}

/* The end of the session: what is under way stops, and the server is told with DELETE
 * (spec: "Session Management") unless it already ended it. */
static void http_close_input(struct server_transport *t) {
        struct http_transport *h = http_of(t);
        enum http_state old = h->state;
        struct transfer *x;

        if (old != HTTP_OPEN && old != HTTP_BROKEN)
                return;
        set_state(h, HTTP_CLOSING);
        if (h->session_id && old != HTTP_BROKEN && (x = calloc(1, sizeof *x))) {
                *x = (struct transfer){ .h = h, .kind = TRANSFER_DELETE, .request_id = -1 };
                if (start_transfer(x) < 0)
                        transfer_free(x);
        }
        maybe_finish(h);
}

void transport_http_abort(struct server_transport *t) {
        struct http_transport *h = http_of(t);

        if (h->state != HTTP_FINISHED)
                set_state(h, HTTP_FINISHED);
}

static void http_limit_input(struct server_transport *t, size_t limit, uint64_t stall_usec) {
        /* A server that takes nothing is caught by requestTimeout and health; the bound
         * is what waits for a connection. */
        http_of(t)->input_limit = limit;
}

static void http_stop_receiving(struct server_transport *t, bool discard) {
        struct http_transport *h = http_of(t);

        h->deaf = true;
        evbuffer_drain(h->received, evbuffer_get_length(h->received));
}

static void http_free(struct server_transport *t) {
        struct http_transport *h = http_of(t);

        if (!h)
                return;
        stop_all(h);
        while (h->n_spare > 0)
                curl_easy_cleanup(h->spare[--h->n_spare]);
        if (h->deliver)
                event_free(h->deliver);
        if (h->reopen)
                event_free(h->reopen);
        if (h->finish)
                event_free(h->finish);
        if (h->received)
                evbuffer_free(h->received);
        curl_slist_free_all(h->config_headers);
        free(h->endpoint);
        free(h->session_id);
        free(h);
}

static const struct server_transport_ops http_ops = {
        .send = http_send,
        .close_input = http_close_input,
        .queued = http_queued,
        .limit_input = http_limit_input,
        .stop_receiving = http_stop_receiving,
        .free = http_free,
};

struct server_transport *transport_http_new(const struct http_transport_params *params) {
        struct http_transport *h = calloc(1, sizeof *h);

        if (!h) {
                curl_slist_free_all(params->headers);
                return NULL;
        }
        *h = (struct http_transport){
                .t.ops = &http_ops,
                .base = params->base,
                .loop = params->loop,
                .log = params->log,
                .name = params->name,
                .rc = params->rc,
                .config_headers = params->headers,
                .bearer = params->bearer,
                .bearer_userdata = params->bearer_userdata,
                .max_message = params->max_message,
                .finished = params->finished,
                .userdata = params->userdata,
                .wire = params->rc->type == REMOTE_SSE    ? WIRE_LEGACY
                        : params->rc->type == REMOTE_NONE ? WIRE_PROBING
                                                          : WIRE_STREAMABLE,
        };
        if (!origin_of(params->rc->url, h->origin, sizeof h->origin))
                h->origin[0] = '\0'; /* no request is on it: no configured header is sent */
        TAILQ_INIT(&h->active);
        TAILQ_INIT(&h->waiting);
        h->received = evbuffer_new();
        h->deliver = event_new(params->base, -1, 0, on_deliver, h);
        h->reopen = evtimer_new(params->base, on_reopen, h);
        h->finish = event_new(params->base, -1, 0, on_finish, h);
        if (!h->received || !h->deliver || !h->reopen || !h->finish) {
                http_free(&h->t);
                return NULL;
        }
        return &h->t;
}
