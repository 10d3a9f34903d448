/* A small Streamable HTTP MCP server of the tests' own (evhttp), which misbehaves on
 * command, for the integration tests of servers reached by URL (test_http.c).
 *
 *   it-http-server --port-file PATH --log PATH [--sse] [--status N] [--no-get] [--legacy]
 *                  [--tls CERT KEY] [--tools N] [--elsewhere-port-file PATH] [--many-sessions]
 *
 * It listens on 127.0.0.1, an ephemeral port written to the port file once it listens.
 * Every request it gets is logged as one line ("POST initialize sess=- proto=- ... id=0",
 * "GET", "DELETE sess=s1"; a call's tool as "tool=NAME", a cancellation's target as
 * "requestId=N"), and so is each connection it sees open ("OPEN n=2": 2 open now) and
 * close ("CLOSED n=1 id=5": the request 5 was held on it, unanswered), so tests can see
 * what the daemon sent and how. --sse answers every
 * request as an event stream instead of JSON; --status N answers every POST with that
 * status (401, 503, ...); --no-get answers GET with 405. Without --modern or --legacy, a POST
 * whose MCP-Protocol-Version names no version of the initialize era is refused 400
 * (logged "REFUSED proto=V"), as the TypeScript SDK 1.x refuses one. --legacy is the HTTP+SSE
 * transport of protocol 2024-11-05: GET opens the stream, whose "endpoint" event says to
 * POST to /messages, whose answers come on the stream; a POST elsewhere is 405. --tls
 * serves HTTPS with that certificate and key (PEM). --tools N lists N tools more (t0, t1,
 * ...); tools/list is paged, 100 tools a page. --many-sessions keeps every session
 * initialized until its DELETE (else an initialize replaces the live one). --modern plays a
 * 2026-07-28 server: it answers server/discover, keeps no session, and holds each
 * subscriptions/listen open as an event stream (its acknowledgement first; a newer one
 * ends the one before), on which notify sends its list change. --elsewhere-port-file listens on a second
 * port too (another origin, written there), which the legacy stream names as its endpoint
 * and the tool redirect points at; every request's log line ends with " host=HOST" (its
 * Host header), so tests see which port it went to. A refusal's body (--status, refuse)
 * is "refused: body-s3cret".
 *
 * Tools: echo {text}; big {bytes}: a text of that many bytes; double {text}: the text
 * twice; meta: the call's params._meta as JSON text ("none" without); stall: never answered;
 * slow {ms}: answered after that long;
 * freeze: nothing is answered any more (pings neither) until the next initialize;
 * lose_session: from now on the session is unknown (404); notify: a
 * tools/list_changed notification on the GET stream; drop_get: ends the GET stream;
 * progress {steps}: progress notifications on the answer's event stream, then the answer;
 * ask {method, params?}: that request (id "ask-N", logged "ASKED ask-N") on the call's own
 * event stream, which stays open until the client's response is POSTed (logged "RESPONSE
 * ask-N"), then the call's answer on it: the JSON text of that response;
 * answers that are not a response to the call: accepted (202, no body), html (a text/html
 * page), gzip (a gzip body, though JSON was asked), garbage (application/json that is not
 * JSON), other_id (the response of another id), no_answer_events (an event stream that
 * ends without the response); refuse {status}: that status, the session kept; redirect:
 * 307 to the other port. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct conn;

struct fake {
        struct event_base *base;
        FILE *log;
        bool sse;
        int status;
        bool no_get;
        bool legacy;
        bool frozen;               /* answer nothing until the next initialize */
        unsigned extra_tools;      /* --tools N: that many more tools, t0 ... */
        char *blob;                /* big's text, kept */
        size_t blob_len;
        unsigned sessions;
        char session[32];          /* the live session's id; "" none */
        bool many_sessions;        /* --many-sessions: every one not deleted is live */
        uint64_t deleted;          /* with it: bit N-1 for session sN deleted (N <= 64) */
        struct evhttp_request *get; /* the open GET stream, or NULL */
        struct conn *get_conn;      /* its connection */
        unsigned event_id;
        unsigned asks;
        struct conn *conns;         /* the connections open, each seen by its first request */
        unsigned n_conns;
        int elsewhere_port;         /* --elsewhere-port-file: the second port; 0 none */
        bool modern;                /* --modern */
        struct evhttp_request *listen; /* the open subscriptions/listen, or NULL */
        struct conn *listen_conn;
        json_object *listen_id;
};

/* A connection, watched for its peer's close: evhttp reads nothing while a request of
 * it waits for its answer, so a client that gives up is seen only this way. */
struct conn {
        struct conn *next;
        struct fake *f;
        struct evhttp_connection *evcon;
        struct event *closed;       /* EV_CLOSED on its socket */
        struct evhttp_request *held; /* a request left unanswered (stall, slow, ask), or NULL */
        json_object *held_id;
        char asked[32];             /* ask: the id of its request to the client; "" none */
        struct event *due;          /* slow: when it is answered */
};

static void log_line(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(struct fake *f, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vfprintf(f->log, fmt, ap);
        va_end(ap);
        fputc('\n', f->log);
        fflush(f->log);
}

static const char *header(struct evhttp_request *req, const char *name) {
        const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), name);
        return v ? v : "-";
}

static void conn_release(struct conn *c) {
        c->asked[0] = '\0';
        json_object_put(c->held_id);
        c->held_id = NULL;
        c->held = NULL;
        if (c->due)
                event_free(c->due);
        c->due = NULL;
}

/* evhttp frees the connection, and its requests with it. */
static void on_conn_close(struct evhttp_connection *evcon, void *arg) {
        struct conn *c = arg, **p;
        struct fake *f = c->f;

        for (p = &f->conns; *p != c; p = &(*p)->next)
                ;
        *p = c->next;
        f->n_conns--;
        log_line(f, "CLOSED n=%u id=%s", f->n_conns, c->held_id ? json_object_to_json_string(c->held_id) : "-");
        if (f->get_conn == c) {
                f->get = NULL;
                f->get_conn = NULL;
        }
        if (f->listen_conn == c) {
                f->listen = NULL;
                f->listen_conn = NULL;
                json_object_put(f->listen_id);
                f->listen_id = NULL;
        }
        conn_release(c);
        event_free(c->closed);
        free(c);
}

static void on_peer_closed(evutil_socket_t fd, short what, void *arg) {
        struct conn *c = arg;

        evhttp_connection_free(c->evcon); /* calls on_conn_close() */
}

static struct conn *conn_of(struct fake *f, struct evhttp_request *req) {
        struct evhttp_connection *evcon = evhttp_request_get_connection(req);
        struct conn *c;

        for (c = f->conns; c; c = c->next)
                if (c->evcon == evcon)
                        return c;
        c = calloc(1, sizeof *c);
        c->f = f;
        c->evcon = evcon;
        c->closed = event_new(f->base, bufferevent_getfd(evhttp_connection_get_bufferevent(evcon)), EV_CLOSED,
                              on_peer_closed, c);
        event_add(c->closed, NULL);
        evhttp_connection_set_closecb(evcon, on_conn_close, c);
        c->next = f->conns;
        f->conns = c;
        log_line(f, "OPEN n=%u", ++f->n_conns);
        return c;
}

/* req is left unanswered for now, on its connection. */
static struct conn *hold(struct fake *f, struct evhttp_request *req, json_object *id) {
        struct conn *c = conn_of(f, req);

        c->held = req;
        c->held_id = json_object_get(id);
        return c;
}

static void get_send(struct fake *f, const char *text);

static void send_json(struct fake *f, struct evhttp_request *req, json_object *msg) {
        struct evbuffer *out = evbuffer_new();
        const char *text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
        struct conn *c = conn_of(f, req);

        if (c->held == req)
                conn_release(c);

        if (f->legacy) {
                get_send(f, text);
                evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
                evbuffer_add_printf(out, "Accepted");
                evhttp_send_reply(req, 202, "Accepted", out);
                evbuffer_free(out);
                json_object_put(msg);
                return;
        }
        if (f->sse) {
                evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/event-stream");
                evbuffer_add_printf(out, "id: %u\nevent: message\ndata: %s\n\n", ++f->event_id, text);
        } else {
                evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
                /* pretty-printed over lines: the daemon must make it one line */
                evbuffer_add_printf(out, "%s\n", json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PRETTY));
        }
        evhttp_send_reply(req, 200, "OK", out);
        evbuffer_free(out);
        json_object_put(msg);
}

static json_object *result_of(json_object *id, json_object *result) {
        json_object *m = json_object_new_object();

        json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(m, "id", json_object_get(id));
        json_object_object_add(m, "result", result);
        return m;
}

static json_object *text_result(const char *text) {
        json_object *r = json_object_new_object(), *content = json_object_new_array(), *item = json_object_new_object();

        json_object_object_add(item, "type", json_object_new_string("text"));
        json_object_object_add(item, "text", json_object_new_string(text));
        json_object_array_add(content, item);
        json_object_object_add(r, "content", content);
        return r;
}

static json_object *tool(const char *name) {
        json_object *t = json_object_new_object(), *schema = json_object_new_object();

        json_object_object_add(schema, "type", json_object_new_string("object"));
        json_object_object_add(t, "name", json_object_new_string(name));
        json_object_object_add(t, "inputSchema", schema);
        return t;
}

static json_object *initialize_result(json_object *params) {
        json_object *r = json_object_new_object(), *caps = json_object_new_object(), *tools = json_object_new_object(),
                    *info = json_object_new_object();

        json_object_object_add(tools, "listChanged", json_object_new_boolean(true));
        json_object_object_add(caps, "tools", tools);
        json_object_object_add(info, "name", json_object_new_string("it-http-server"));
        json_object_object_add(info, "version", json_object_new_string("1"));
        /* an older version than the daemon asks, so the header it sends is the negotiated one */
        json_object_object_add(r, "protocolVersion", json_object_new_string("2025-06-18"));
        json_object_object_add(r, "capabilities", caps);
        json_object_object_add(r, "serverInfo", info);
        return r;
}

static void get_send(struct fake *f, const char *text) {
        struct evbuffer *out;

        if (!f->get)
                return;
        out = evbuffer_new();
        evbuffer_add_printf(out, "id: %u\ndata: %s\n\n", ++f->event_id, text);
        evhttp_send_reply_chunk(f->get, out);
        evbuffer_free(out);
}

/* --modern: a notification on the open listen, under its id. */
static void listen_send(struct fake *f, const char *method, json_object *params) {
        json_object *m = json_object_new_object(), *meta = json_object_new_object();
        struct evbuffer *out;

        json_object_object_add(meta, "io.modelcontextprotocol/subscriptionId", json_object_get(f->listen_id));
        json_object_object_add(params, "_meta", meta);
        json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(m, "method", json_object_new_string(method));
        json_object_object_add(m, "params", params);
        out = evbuffer_new();
        evbuffer_add_printf(out, "id: %u\ndata: %s\n\n", ++f->event_id, json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
        evhttp_send_reply_chunk(f->listen, out);
        evbuffer_free(out);
        json_object_put(m);
}

static void open_listen(struct fake *f, struct evhttp_request *req, json_object *id) {
        json_object *ack = json_object_new_object(), *honoured = json_object_new_object();

        if (f->listen) {
                evhttp_send_reply_end(f->listen);
                json_object_put(f->listen_id);
        }
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/event-stream");
        evhttp_send_reply_start(req, 200, "OK");
        f->listen = req;
        f->listen_conn = conn_of(f, req);
        f->listen_id = json_object_get(id);
        json_object_object_add(honoured, "toolsListChanged", json_object_new_boolean(true));
        json_object_object_add(ack, "notifications", honoured);
        listen_send(f, "notifications/subscriptions/acknowledged", ack);
}

static json_object *discover_result(void) {
        json_object *r = json_object_new_object(), *versions = json_object_new_array(), *caps = json_object_new_object(),
                    *tools = json_object_new_object(), *meta = json_object_new_object(), *info = json_object_new_object();

        json_object_array_add(versions, json_object_new_string("2026-07-28"));
        json_object_object_add(tools, "listChanged", json_object_new_boolean(true));
        json_object_object_add(caps, "tools", tools);
        json_object_object_add(info, "name", json_object_new_string("it-http-server"));
        json_object_object_add(info, "version", json_object_new_string("1"));
        json_object_object_add(meta, "io.modelcontextprotocol/serverInfo", info);
        json_object_object_add(r, "supportedVersions", versions);
        json_object_object_add(r, "capabilities", caps);
        json_object_object_add(r, "_meta", meta);
        return r;
}

static void on_slow_due(evutil_socket_t fd, short what, void *arg) {
        struct conn *c = arg;

        send_json(c->f, c->held, result_of(c->held_id, text_result("slow done")));
}

/* big's text of len 'x', written around a blob kept for the next call rather than built
 * by json-c: the bench (bench-remote.c) measures the daemon with it, not this server. */
static void send_big(struct fake *f, struct evhttp_request *req, json_object *id, size_t len) {
        struct evbuffer *out;
        struct conn *c = conn_of(f, req);

        if (f->legacy || len > f->blob_len) {
                free(f->blob);
                f->blob = malloc(len);
                f->blob_len = f->blob ? len : 0;
                if (f->blob)
                        memset(f->blob, 'x', len);
        }
        if (f->legacy || !f->blob) { /* the answer on the stream: the slow way */
                char *text = strndup(f->blob ? f->blob : "", len);

                send_json(f, req, result_of(id, text_result(text ? text : "")));
                free(text);
                return;
        }
        if (c->held == req)
                conn_release(c);
        out = evbuffer_new();
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          f->sse ? "text/event-stream" : "application/json");
        evbuffer_add_printf(out, "%s{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"",
                            f->sse ? "event: message\ndata: " : "", json_object_to_json_string(id));
        evbuffer_add_reference(out, f->blob, len, NULL, NULL);
        evbuffer_add_printf(out, "\"}]}}\n%s", f->sse ? "\n" : "");
        evhttp_send_reply(req, 200, "OK", out);
        evbuffer_free(out);
}

/* A refusal, with a body the daemon must keep from its clients. */
static void refuse(struct evhttp_request *req, int status) {
        struct evbuffer *out = evbuffer_new();

        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
        evbuffer_add_printf(out, "refused: body-s3cret");
        evhttp_send_reply(req, status, "Refused", out);
        evbuffer_free(out);
}

static void reply_raw(struct evhttp_request *req, int status, const char *type, const char *encoding, const void *body,
                      size_t len) {
        struct evbuffer *out = evbuffer_new();

        if (type)
                evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
        if (encoding)
                evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Encoding", encoding);
        evbuffer_add(out, body, len);
        evhttp_send_reply(req, status, status == 202 ? "Accepted" : "OK", out);
        evbuffer_free(out);
}

/* A call answered with what is not its response; true if name is one of those. */
static bool misanswer(struct fake *f, struct evhttp_request *req, const char *n, json_object *id, json_object *args) {
        /* gzip of {"jsonrpc":"2.0","id":1,"result":{}} */
        static const unsigned char gz[] = { 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xab, 0x56,
                                            0xca, 0x2a, 0xce, 0xcf, 0x2b, 0x2a, 0x48, 0x56, 0xb2, 0x52, 0x32, 0xd2,
                                            0x33, 0x50, 0xd2, 0x51, 0xca, 0x4c, 0x51, 0xb2, 0x32, 0xd4, 0x51, 0x2a,
                                            0x4a, 0x2d, 0x2e, 0xcd, 0x29, 0x51, 0xb2, 0xaa, 0xae, 0xad, 0x05, 0x00,
                                            0x6c, 0xbd, 0x59, 0xc0, 0x24, 0x00, 0x00, 0x00 };
        static const char html[] = "<html><body>body-s3cret: sign in</body></html>";
        static const char events[] = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
                                     "\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n";
        json_object *v = NULL;
        char text[128];

        if (strcmp(n, "accepted") == 0)
                reply_raw(req, 202, "application/json", NULL, "", 0);
        else if (strcmp(n, "html") == 0)
                reply_raw(req, 200, "text/html; charset=utf-8", NULL, html, sizeof html - 1);
        else if (strcmp(n, "gzip") == 0)
                reply_raw(req, 200, "application/json", "gzip", gz, sizeof gz);
        else if (strcmp(n, "garbage") == 0)
                reply_raw(req, 200, "application/json", NULL, "body-s3cret is not JSON", 23);
        else if (strcmp(n, "other_id") == 0) {
                snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":{}}",
                         json_object_get_int64(id) + 1000);
                reply_raw(req, 200, "application/json", NULL, text, strlen(text));
        } else if (strcmp(n, "no_answer_events") == 0)
                reply_raw(req, 200, "text/event-stream", NULL, events, sizeof events - 1);
        else if (strcmp(n, "refuse") == 0 && json_object_object_get_ex(args, "status", &v))
                refuse(req, json_object_get_int(v));
        else if (strcmp(n, "redirect") == 0) {
                snprintf(text, sizeof text, "http://127.0.0.1:%d/mcp", f->elsewhere_port);
                evhttp_add_header(evhttp_request_get_output_headers(req), "Location", text);
                refuse(req, 307);
        } else
                return false;
        return true;
}

static void send_event(struct fake *f, struct evhttp_request *req, json_object *msg) {
        struct evbuffer *out = evbuffer_new();

        evbuffer_add_printf(out, "id: %u\nevent: message\ndata: %s\n\n", ++f->event_id,
                            json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
        evhttp_send_reply_chunk(req, out);
        evbuffer_free(out);
        json_object_put(msg);
}

/* ask: the request goes on the call's own stream, held open for the call's answer. */
static void start_ask(struct fake *f, struct evhttp_request *req, json_object *id, json_object *args) {
        struct conn *c = hold(f, req, id);
        json_object *rq = json_object_new_object(), *v = NULL;

        snprintf(c->asked, sizeof c->asked, "ask-%u", ++f->asks);
        json_object_object_add(rq, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(rq, "id", json_object_new_string(c->asked));
        json_object_object_add(rq, "method", json_object_new_string(json_object_object_get_ex(args, "method", &v)
                                                                             ? json_object_get_string(v) : "ping"));
        if (json_object_object_get_ex(args, "params", &v))
                json_object_object_add(rq, "params", json_object_get(v));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/event-stream");
        evhttp_send_reply_start(req, 200, "OK");
        send_event(f, req, rq);
        log_line(f, "ASKED %s", c->asked);
}

/* A response the client POSTed: to an ask, whose call it answers on the call's stream. */
static void take_response(struct fake *f, struct evhttp_request *req, json_object *msg) {
        json_object *id = NULL;
        struct conn *c;

        evhttp_send_reply(req, 202, "Accepted", NULL);
        json_object_object_get_ex(msg, "id", &id);
        for (c = f->conns; c; c = c->next)
                if (c->held && c->asked[0] && strcmp(json_object_get_string(id), c->asked) == 0)
                        break;
        log_line(f, "RESPONSE %s%s", json_object_get_string(id), c ? "" : " unexpected");
        if (!c)
                return;
        send_event(f, c->held, result_of(c->held_id, text_result(json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN))));
        evhttp_send_reply_end(c->held);
        conn_release(c);
}

static void call_tool(struct fake *f, struct evhttp_request *req, json_object *id, json_object *params) {
        json_object *name = NULL, *args = NULL, *v = NULL;
        const char *n;

        json_object_object_get_ex(params, "name", &name);
        json_object_object_get_ex(params, "arguments", &args);
        n = json_object_get_string(name);
        if (misanswer(f, req, n, id, args))
                return;
        if (strcmp(n, "stall") == 0) {
                hold(f, req, id); /* never answered: the request stays open */
                return;
        }
        if (strcmp(n, "ask") == 0) {
                start_ask(f, req, id, args);
                return;
        }
        if (strcmp(n, "slow") == 0 && json_object_object_get_ex(args, "ms", &v)) {
                struct conn *c = hold(f, req, id);
                struct timeval tv = { json_object_get_int(v) / 1000, json_object_get_int(v) % 1000 * 1000 };

                c->due = evtimer_new(f->base, on_slow_due, c);
                evtimer_add(c->due, &tv);
                return;
        }
        if (strcmp(n, "freeze") == 0) {
                f->frozen = true;
                return;
        }
        if (strcmp(n, "lose_session") == 0) {
                f->session[0] = '\0';
                send_json(f, req, result_of(id, text_result("lost")));
                return;
        }
        if (strcmp(n, "notify") == 0 && f->modern) {
                if (f->listen)
                        listen_send(f, "notifications/tools/list_changed", json_object_new_object());
                send_json(f, req, result_of(id, text_result(f->listen ? "sent" : "no listen")));
                return;
        }
        if (strcmp(n, "notify") == 0) {
                get_send(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
                send_json(f, req, result_of(id, text_result(f->get ? "sent" : "no stream")));
                return;
        }
        if (strcmp(n, "drop_get") == 0) {
                if (f->get) {
                        evhttp_send_reply_end(f->get);
                        f->get = NULL;
                        f->get_conn = NULL;
                }
                send_json(f, req, result_of(id, text_result("dropped")));
                return;
        }
        if (strcmp(n, "big") == 0 && json_object_object_get_ex(args, "bytes", &v)) {
                send_big(f, req, id, (size_t)json_object_get_int64(v));
                return;
        }
        if (strcmp(n, "double") == 0 && json_object_object_get_ex(args, "text", &v)) {
                size_t len = (size_t)json_object_get_string_len(v);
                char *text = malloc(2 * len + 1);

                memcpy(text, json_object_get_string(v), len);
                memcpy(text + len, json_object_get_string(v), len);
                text[2 * len] = '\0';
                send_json(f, req, result_of(id, text_result(text)));
                free(text);
                return;
        }
        if (strcmp(n, "echo") == 0 && json_object_object_get_ex(args, "text", &v)) {
                send_json(f, req, result_of(id, text_result(json_object_get_string(v))));
                return;
        }
        if (strcmp(n, "meta") == 0) {
                v = NULL;
                json_object_object_get_ex(params, "_meta", &v);
                send_json(f, req, result_of(id, text_result(v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)
                                                              : "none")));
                return;
        }
        send_json(f, req, result_of(id, text_result("unknown tool")));
}

/* The tools, in pages of TOOLS_PAGE: its own, then --tools N more ("t0", "t1", ...); a
 * page's cursor is the index of its first tool. */
#define TOOLS_PAGE 100
static json_object *tools_page(struct fake *f, json_object *params) {
        static const char *const own[] = { "echo",     "big",     "double",  "stall",    "lose_session",
                                           "notify",   "drop_get", "freeze",  "slow",     "accepted",
                                           "html",     "gzip",    "garbage", "other_id", "no_answer_events",
                                           "refuse",   "redirect", "ask",     "meta" };
        const unsigned n_own = sizeof own / sizeof *own, total = n_own + f->extra_tools;
        json_object *r = json_object_new_object(), *tools = json_object_new_array(), *cursor = NULL;
        unsigned first = 0, i;
        char name[32];

        if (json_object_object_get_ex(params, "cursor", &cursor))
                first = (unsigned)atoi(json_object_get_string(cursor));
        for (i = first; i < total && i < first + TOOLS_PAGE; i++) {
                snprintf(name, sizeof name, "t%u", i - n_own);
                json_object_array_add(tools, tool(i < n_own ? own[i] : name));
        }
        json_object_object_add(r, "tools", tools);
        if (i < total) {
                snprintf(name, sizeof name, "%u", i);
                json_object_object_add(r, "nextCursor", json_object_new_string(name));
        }
        return r;
}

static void answer(struct fake *f, struct evhttp_request *req, json_object *msg) {
        json_object *id = NULL, *method = NULL, *params = NULL;
        const char *m;

        json_object_object_get_ex(msg, "method", &method);
        json_object_object_get_ex(msg, "id", &id);
        json_object_object_get_ex(msg, "params", &params);
        m = json_object_get_string(method);
        if (!m && id) {
                take_response(f, req, msg);
                return;
        }
        if (!id) { /* a notification */
                evhttp_send_reply(req, 202, "Accepted", NULL);
                return;
        }
        if (f->frozen && strcmp(m, "initialize") != 0)
                return; /* a hung server: the request stays open */
        if (f->modern && strcmp(m, "server/discover") == 0) {
                send_json(f, req, result_of(id, discover_result()));
        } else if (f->modern && strcmp(m, "subscriptions/listen") == 0) {
                open_listen(f, req, id);
        } else if (strcmp(m, "initialize") == 0) {
                f->frozen = false;
                snprintf(f->session, sizeof f->session, "s%u", ++f->sessions);
                evhttp_add_header(evhttp_request_get_output_headers(req), "Mcp-Session-Id", f->session);
                send_json(f, req, result_of(id, initialize_result(params)));
        } else if (strcmp(m, "tools/list") == 0) {
                send_json(f, req, result_of(id, tools_page(f, params)));
        } else if (strcmp(m, "tools/call") == 0) {
                call_tool(f, req, id, params);
        } else {
                send_json(f, req, result_of(id, json_object_new_object())); /* ping and the rest */
        }
}

/* A Streamable HTTP server of the initialize era refuses a version it does not speak in
 * MCP-Protocol-Version (as the TypeScript SDK 1.x does: 400); none is taken for its own. */
static bool version_known(struct evhttp_request *req) {
        static const char *const versions[] = { "-", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25" };
        const char *v = header(req, "MCP-Protocol-Version");

        for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
                if (strcmp(v, versions[i]) == 0)
                        return true;
        return false;
}

static bool session_known(struct fake *f, struct evhttp_request *req, json_object *msg) {
        json_object *method = NULL;

        if (json_object_object_get_ex(msg, "method", &method) && strcmp(json_object_get_string(method), "initialize") == 0)
                return true;
        if (f->many_sessions) {
                const char *sid = header(req, "Mcp-Session-Id");
                unsigned n = sid[0] == 's' ? (unsigned)atoi(sid + 1) : 0;

                return n >= 1 && n <= f->sessions && n <= 64 && !(f->deleted & (1ull << (n - 1)));
        }
        return f->session[0] && strcmp(header(req, "Mcp-Session-Id"), f->session) == 0;
}

/* The log's end of a POST's line: " id=N", a call's " tool=NAME", a cancellation's
 * " requestId=N" (static). */
static const char *what_of(json_object *msg) {
        static char text[256];
        json_object *id = NULL, *params = NULL, *v = NULL;
        size_t n = 0;

        text[0] = '\0';
        if (json_object_object_get_ex(msg, "id", &id))
                n += (size_t)snprintf(text + n, sizeof text - n, " id=%s", json_object_to_json_string(id));
        json_object_object_get_ex(msg, "params", &params);
        if (n < sizeof text && json_object_object_get_ex(params, "name", &v))
                n += (size_t)snprintf(text + n, sizeof text - n, " tool=%s", json_object_get_string(v));
        if (n < sizeof text && json_object_object_get_ex(params, "requestId", &v))
                snprintf(text + n, sizeof text - n, " requestId=%s", json_object_to_json_string(v));
        return text;
}

static void on_post(struct fake *f, struct evhttp_request *req) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        char *body = malloc(len + 1);
        json_object *msg, *method = NULL;

        evbuffer_remove(in, body, len);
        body[len] = '\0';
        msg = json_tokener_parse(body);
        free(body);
        json_object_object_get_ex(msg, "method", &method);
        log_line(f, "POST %s sess=%s proto=%s auth=%s accept=%s%s host=%s",
                 method ? json_object_get_string(method) : "(response)", header(req, "Mcp-Session-Id"),
                 header(req, "MCP-Protocol-Version"), header(req, "Authorization"), header(req, "Accept"), what_of(msg),
                 header(req, "Host"));
        if (f->legacy && strncmp(evhttp_request_get_uri(req), "/messages", 9) != 0) {
                evhttp_send_reply(req, 405, "Method Not Allowed", NULL); /* no Streamable HTTP here */
        } else if (f->status) {
                refuse(req, f->status);
        } else if (!msg) {
                evhttp_send_reply(req, 400, "Bad Request", NULL);
        } else if (!f->legacy && !f->modern && !session_known(f, req, msg)) {
                evhttp_send_reply(req, 404, "Not Found", NULL);
        } else if (!f->legacy && !f->modern && !version_known(req)) {
                log_line(f, "REFUSED proto=%s", header(req, "MCP-Protocol-Version"));
                evhttp_send_reply(req, 400, "Bad Request", NULL);
        } else {
                answer(f, req, msg);
        }
        json_object_put(msg);
}

static void on_get(struct fake *f, struct evhttp_request *req) {
        log_line(f, "GET sess=%s last=%s auth=%s host=%s", header(req, "Mcp-Session-Id"), header(req, "Last-Event-ID"),
                 header(req, "Authorization"), header(req, "Host"));
        if (f->no_get) {
                evhttp_send_reply(req, 405, "Method Not Allowed", NULL);
                return;
        }
        if (f->get)
                evhttp_send_reply_end(f->get);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/event-stream");
        evhttp_send_reply_start(req, 200, "OK");
        f->get = req;
        f->get_conn = conn_of(f, req);
        if (f->legacy) {
                struct evbuffer *out = evbuffer_new();

                if (f->elsewhere_port)
                        evbuffer_add_printf(out, "event: endpoint\ndata: http://127.0.0.1:%d/messages?session=L%u\n\n",
                                            f->elsewhere_port, ++f->sessions);
                else
                        evbuffer_add_printf(out, "event: endpoint\ndata: /messages?session=L%u\n\n", ++f->sessions);
                evhttp_send_reply_chunk(req, out);
                evbuffer_free(out);
        }
}

static void on_request(struct evhttp_request *req, void *arg) {
        struct fake *f = arg;

        conn_of(f, req); /* counted before anything of the request is logged */
        switch (evhttp_request_get_command(req)) {
        case EVHTTP_REQ_POST:
                on_post(f, req);
                break;
        case EVHTTP_REQ_GET:
                on_get(f, req);
                break;
        case EVHTTP_REQ_DELETE:
                log_line(f, "DELETE sess=%s auth=%s host=%s", header(req, "Mcp-Session-Id"), header(req, "Authorization"),
                         header(req, "Host"));
                f->session[0] = '\0';
                if (f->many_sessions && header(req, "Mcp-Session-Id")[0] == 's') {
                        unsigned n = (unsigned)atoi(header(req, "Mcp-Session-Id") + 1);

                        if (n >= 1 && n <= 64)
                                f->deleted |= 1ull << (n - 1);
                }
                evhttp_send_reply(req, 200, "OK", NULL);
                break;
        default:
                evhttp_send_reply(req, 405, "Method Not Allowed", NULL);
        }
}

/* Each connection a TLS server's. */
static struct bufferevent *tls_bev(struct event_base *base, void *arg) {
        return bufferevent_openssl_socket_new(base, -1, SSL_new(arg), BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
}

static SSL_CTX *tls_context(const char *cert, const char *key) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

        if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
                return NULL;
        return ctx;
}

/* The port into path, whole or not at all (renamed into place). */
static void write_port(const char *path, int port) {
        char tmp[600];
        FILE *pf;

        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        pf = fopen(tmp, "w");
        fprintf(pf, "%d\n", port);
        fclose(pf);
        rename(tmp, path);
}

int main(int argc, char **argv) {
        struct fake f = { 0 };
        const char *port_file = NULL, *log_path = "/dev/null", *cert = NULL, *key = NULL, *elsewhere_file = NULL;
        struct evhttp *http;
        struct evhttp_bound_socket *bound;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        char tmp[600];
        FILE *pf;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--port-file") == 0 && i + 1 < argc)
                        port_file = argv[++i];
                else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc)
                        log_path = argv[++i];
                else if (strcmp(argv[i], "--status") == 0 && i + 1 < argc)
                        f.status = atoi(argv[++i]);
                else if (strcmp(argv[i], "--elsewhere-port-file") == 0 && i + 1 < argc)
                        elsewhere_file = argv[++i];
                else if (strcmp(argv[i], "--tools") == 0 && i + 1 < argc)
                        f.extra_tools = (unsigned)atoi(argv[++i]);
                else if (strcmp(argv[i], "--sse") == 0)
                        f.sse = true;
                else if (strcmp(argv[i], "--no-get") == 0)
                        f.no_get = true;
                else if (strcmp(argv[i], "--many-sessions") == 0)
                        f.many_sessions = true;
                else if (strcmp(argv[i], "--legacy") == 0)
                        f.legacy = true;
                else if (strcmp(argv[i], "--modern") == 0)
                        f.modern = true;
                else if (strcmp(argv[i], "--tls") == 0 && i + 2 < argc) {
                        cert = argv[++i];
                        key = argv[++i];
                }
        }
        if (!port_file)
                return 2;
        f.log = fopen(log_path, "a");
        f.base = event_base_new();
        http = evhttp_new(f.base);
        evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
        evhttp_set_gencb(http, on_request, &f);
        if (cert) {
                SSL_CTX *ctx = tls_context(cert, key);

                if (!ctx)
                        return 1;
                evhttp_set_bevcb(http, tls_bev, ctx);
        }
        bound = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
        if (!f.log || !bound)
                return 1;
        if (elsewhere_file) {
                struct evhttp_bound_socket *second = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);

                if (!second)
                        return 1;
                getsockname(evhttp_bound_socket_get_fd(second), (struct sockaddr *)&ss, &sl);
                f.elsewhere_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
                write_port(elsewhere_file, f.elsewhere_port);
                sl = sizeof ss;
        }
        getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss, &sl);
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        pf = fopen(tmp, "w");
        fprintf(pf, "%d\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
        fclose(pf);
        rename(tmp, port_file); /* the test never reads half a number */
        event_base_dispatch(f.base);
        return 0;
}
