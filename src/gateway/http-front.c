/* The Streamable HTTP front door; see http-front.h. */
#include "http-front.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client-http.h"
#include "client.h"
#include "daemon.h"
#include "http-mirror.h"
#include "http-oauth.h"
#include "http-request.h"
#include "jsonrpc.h"
#include "macro.h"
#include "principal.h"
#include "protocol.h"
#include "refusal-log.h"
#include "request-meta.h"
#include "time-util.h"
#include "user-counts.h"

/* Sessions at their peak, at least, for their end to give memory back (malloc_trim). */
#define HTTP_TRIM_PEAK 64
/* Headers of a request together, at most: what a real client sends is a few hundred bytes. */
#define HTTP_MAX_HEADERS (64 * 1024)
/* An idle keep-alive connection is closed after this; streams write a comment more often. */
#define HTTP_CONNECTION_TIMEOUT 120
/* After a peer's refused request is logged, its next ones are summed up in a line this
 * much later. */
#define HTTP_REFUSAL_LOG_USEC (10 * USEC_PER_SEC)

static const char *header(struct evhttp_request *req, const char *name) {
        return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

static int request_fd(struct evhttp_request *req) {
        return bufferevent_getfd(evhttp_connection_get_bufferevent(evhttp_request_get_connection(req)));
}

static void send_text(struct evhttp_request *req, int code, const char *reason, const char *text) {
        struct evbuffer *b = evbuffer_new();

        if (b)
                evbuffer_add_printf(b, "%s\n", text);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
        evhttp_send_reply(req, code, reason, b);
        if (b)
                evbuffer_free(b);
}

/* A JSON-RPC error with a null id, for a request refused before any session saw it. */
static void send_rpc_error(struct evhttp_request *req, int code, const char *reason, const char *message) {
        json_object *e = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST, message, NULL);
        struct evbuffer *b = evbuffer_new();

        if (b)
                evbuffer_add_printf(b, "%s\n", json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
        json_object_put(e);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply(req, code, reason, b);
        if (b)
                evbuffer_free(b);
}

/* The peer's address as evhttp kept it from accept(), without a system call per request;
 * asked of the socket only if evhttp has none. */
static int peer_address(struct evhttp_request *req, struct sockaddr_storage *ret) {
        const struct sockaddr *sa = evhttp_connection_get_addr(evhttp_request_get_connection(req));
        socklen_t len = sizeof *ret;

        if (sa && sa->sa_family != AF_UNSPEC) {
                size_t n = sa->sa_family == AF_INET    ? sizeof(struct sockaddr_in)
                           : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                       : sizeof(sa_family_t);

                memset(ret, 0, sizeof *ret);
                memcpy(ret, sa, n);
                return 0;
        }
        return getpeername(request_fd(req), (struct sockaddr *)ret, &len) < 0 ? -errno : 0;
}

static void remote_of(struct evhttp_request *req, char *ret, size_t size) {
        struct sockaddr_storage ss;
        char host[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;

        if (peer_address(req, &ss) == 0) {
                if (ss.ss_family == AF_INET) {
                        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
                        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
                } else if (ss.ss_family == AF_INET6) {
                        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
                        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
                }
        }
        snprintf(ret, size, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
}

/* Who a refusal is counted against: the address for TCP, the uid on a Unix socket. */
static int refusal_peer_of(struct evhttp_request *req, struct refusal_peer *ret) {
        struct sockaddr_storage ss;
        struct ucred cred;
        socklen_t cred_len = sizeof cred;
        int r = peer_address(req, &ss);

        if (r < 0)
                return r;
        if (ss.ss_family != AF_UNIX)
                return refusal_peer_of_address((struct sockaddr *)&ss, ret);
        if (getsockopt(request_fd(req), SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0)
                return -errno;
        *ret = refusal_peer_of_uid(cred.uid);
        return 0;
}

static void log_summary(const struct refusal_peer *peer, uint64_t unlogged, void *userdata) {
        struct http_front *f = userdata;
        char who[64];

        if (!peer) {
                log_notice(&f->daemon->log, "%" PRIu64 " more HTTP requests refused from peers too many to log one by one",
                           unlogged);
                return;
        }
        refusal_peer_format(peer, who, sizeof who);
        log_notice(&f->daemon->log, "%" PRIu64 " more HTTP requests from %s refused since its last line", unlogged, who);
}

/* Summaries are due a period after a peer's line: flushed by timer, so that a peer that
 * stops is still summed up. */
static void arm_summaries(struct http_front *f, uint64_t now) {
        uint64_t next = refusal_log_flush(&f->refusals, now, log_summary, f);
        struct timeval tv;

        if (!next)
                return;
        tv = (struct timeval){ .tv_sec = (time_t)((next - now) / USEC_PER_SEC),
                               .tv_usec = (suseconds_t)((next - now) % USEC_PER_SEC) };
        evtimer_add(f->refusal_timer, &tv);
}

static void summaries_due(evutil_socket_t fd, short what, void *userdata) {
        struct http_front *f = userdata;

        arm_summaries(f, now_usec());
}

/* A refusal of peer: logged once per peer, its repeats summed up once a period
 * (refusal-log.h), so a scanner cannot flood the journal. remote: NULL for the peer's name. */
static void refused(struct http_front *f, const struct refusal_peer *peer, const char *remote, const char *what) {
        struct refusal_note note;
        uint64_t now = now_usec();
        char name[64];

        note = refusal_log_take(&f->refusals, peer, now);
        if (!note.log) {
                if (!evtimer_pending(f->refusal_timer, NULL))
                        arm_summaries(f, now);
                return;
        }
        if (!remote) {
                refusal_peer_format(peer, name, sizeof name);
                remote = name;
        }
        if (note.unlogged)
                log_notice(&f->daemon->log, "HTTP request from %s refused: %s (%" PRIu64 " more before it, not logged)",
                           remote, what, note.unlogged);
        else
                log_notice(&f->daemon->log, "HTTP request from %s refused: %s", remote, what);
}

void http_front_refused(struct http_front *f, const struct refusal_peer *peer, const char *why) {
        refused(f, peer, NULL, why);
}

/* A refused request (Origin, token, limits). */
static void log_refusal(struct http_front *f, struct evhttp_request *req, const char *what) {
        struct refusal_peer peer;
        char remote[64];

        if (refusal_peer_of(req, &peer) < 0)
                return; /* gone already */
        if (!peer.unix_peer)
                remote_of(req, remote, sizeof remote);
        refused(f, &peer, peer.unix_peer ? NULL : remote, what);
}

static bool on_unix_socket(struct evhttp_request *req) {
        struct sockaddr_storage ss;

        return peer_address(req, &ss) == 0 && ss.ss_family == AF_UNIX;
}

/* Who is asking: on the Unix socket its peer, else its token's principal. */
struct caller_facts {
        struct principal principal;
        const struct http_token *token;
        char remote[64];
};

/* false when it was answered instead (the peer's credentials unreadable). */
static bool identify(struct evhttp_request *req, const struct http_request *r, const struct http_verdict *v,
                     struct caller_facts *ret) {
        *ret = (struct caller_facts){ 0 };
        if (r->unix_peer) {
                int fd = request_fd(req);
                struct ucred peer;
                socklen_t len = sizeof peer;

                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 || principal_resolve(fd, &peer, &ret->principal) < 0) {
                        principal_done(&ret->principal);
                        send_text(req, 503, "Service Unavailable", "cannot read the peer's credentials");
                        return false;
                }
                snprintf(ret->remote, sizeof ret->remote, "unix peer pid %d", (int)peer.pid);
                return true;
        }
        /* Its uid is all a session's check needs; the whole principal and the remote address
         * are made only if it opens one (open_session), not at every request. */
        ret->token = v->token;
        ret->principal.uid = ret->token->uid;
        return true;
}

/* The session a request names (the verdict's key); answered 404 and NULL when there is none
 * for it. */
static struct client *find_session(struct http_front *f, struct evhttp_request *req, const struct http_request *r,
                                   const struct http_verdict *v, const struct caller_facts *who) {
        struct client *c = v->session_key ? idmap_get(&f->sessions, v->session_key) : NULL;

        /* Someone else's session is as unknown as none: nothing to learn by guessing. One
         * that is ending (the daemon stops, DELETE) takes no more requests. */
        if (!c || c->state != CLIENT_ACTIVE || !client_http_id_matches(c, r->session_id) ||
            !client_http_same_caller(c, who->principal.uid, who->token)) {
                send_rpc_error(req, 404, "Not Found", "Session not found");
                return NULL;
        }
        return c;
}

/* A modern request's error before any client saw it, under its id: 400, as the
 * specification has every error of its _meta and headers answered. */
static void send_modern_error(struct evhttp_request *req, const struct jsonrpc_msg *m, int code, const char *message,
                              json_object *data) {
        json_object *e = jsonrpc_error(m->id, code, message, data);
        struct evbuffer *b = evbuffer_new();

        if (b)
                evbuffer_add_printf(b, "%s\n", json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
        json_object_put(e);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply(req, 400, "Bad Request", b);
        if (b)
                evbuffer_free(b);
}

/* A request without a session that names a modern version (in its _meta, or in the
 * MCP-Protocol-Version header): its headers must mirror its body and its _meta be one we
 * serve, checked before a client is made for it; false when answered. */
static bool modern_request_ok(struct evhttp_request *req, const struct jsonrpc_msg *m) {
        struct http_mirror h = { .protocol_version = header(req, "MCP-Protocol-Version"),
                                 .method = header(req, "Mcp-Method"),
                                 .name = header(req, "Mcp-Name") };
        struct request_meta meta;
        char why[200];

        /* a body that names no version is malformed before its headers can mismatch it */
        if (!request_meta_present(m->params)) {
                send_modern_error(req, m, JSONRPC_INVALID_PARAMS,
                                  "Invalid params: _meta \"" META_PROTOCOL_VERSION "\" is required", NULL);
                return false;
        }
        if (http_mirror_check(&h, m, why, sizeof why) < 0) {
                send_modern_error(req, m, MCP_ERROR_HEADER_MISMATCH, why, NULL);
                return false;
        }
        if (request_meta_read(m->params, &meta) == REQUEST_REFUSED) {
                send_modern_error(req, m, meta.code, meta.message, meta.data);
                return false;
        }
        return true;
}

/* Whether a sessionless request m is one of the modern era's, served without a session:
 * its _meta names a version (an initialize too, which that era has not: answered 404), or
 * its header names a modern one (an initialize without the _meta is a legacy client's). */
static bool modern_request(struct evhttp_request *req, const struct jsonrpc_msg *m) {
        return m->kind == JSONRPC_REQUEST &&
               (request_meta_present(m->params) ||
                (strcmp(m->method, "initialize") != 0 && protocol_modern_version(header(req, "MCP-Protocol-Version"))));
}

/* initialize without a session: a new one, if the limits allow; a modern request: a
 * client for it alone, under the same limits (it counts as a session while it lasts). */
static struct client *open_session(struct http_front *f, struct evhttp_request *req, struct caller_facts *who,
                                   const struct jsonrpc_msg *m) {
        struct daemon *d = f->daemon;
        struct http_caller caller = { .principal = &who->principal, .remote = who->remote, .token = who->token };
        uid_t uid = who->principal.uid;
        enum http_kind kind = HTTP_SESSION;
        struct client *c;
        int64_t key;

        if (modern_request(req, m)) {
                if (!modern_request_ok(req, m))
                        return NULL;
                kind = HTTP_ONE_REQUEST;
        } else if (m->kind != JSONRPC_REQUEST || strcmp(m->method, "initialize") != 0) {
                send_rpc_error(req, 400, "Bad Request", "Bad Request: Mcp-Session-Id header is required");
                return NULL;
        }
        if (d->phase != DAEMON_RUNNING || f->n_sessions >= d->config.max_http_sessions) {
                log_refusal(f, req, d->phase != DAEMON_RUNNING ? "the daemon is not running" : "maxHttpSessions reached");
                send_rpc_error(req, 503, "Service Unavailable", "Service Unavailable: too many HTTP sessions (maxHttpSessions)");
                return NULL;
        }
        if (daemon_count_client(d, uid) != USER_COUNT_TAKEN) {
                log_refusal(f, req, "maxClientsPerUser reached");
                send_rpc_error(req, 429, "Too Many Requests", "Too Many Requests: too many connections of this user (maxClientsPerUser)");
                return NULL;
        }
        if (who->token && http_token_principal(who->token, &who->principal) < 0) {
                user_counts_release(&d->user_counts, uid);
                send_text(req, 503, "Service Unavailable", "out of memory");
                return NULL;
        }
        if (!who->remote[0])
                remote_of(req, who->remote, sizeof who->remote);
        c = client_http_new(f, &caller, kind, &key);
        if (!c) {
                user_counts_release(&d->user_counts, uid);
                send_text(req, 503, "Service Unavailable", "out of memory");
        }
        return c;
}

static void handle_post(struct http_front *f, struct evhttp_request *req, const struct http_request *r,
                        const struct http_verdict *v, struct caller_facts *who) {
        struct evbuffer *body = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(body);
        const char *data = (const char *)evbuffer_pullup(body, -1);
        struct jsonrpc_msg m;
        struct client *c;

        jsonrpc_parse(&f->daemon->parser, data ? data : "", len, &m);
        if (r->session_id)
                c = find_session(f, req, r, v, who);
        else if (m.kind == JSONRPC_INVALID) {
                send_rpc_error(req, 400, "Bad Request", m.error_message ? m.error_message : "Invalid Request");
                c = NULL;
        } else
                c = open_session(f, req, who, &m);
        if (c)
                client_http_post(c, req, &m);
        jsonrpc_msg_done(&m);
}

static void handle_healthz(struct http_front *f, struct evhttp_request *req) {
        static const char *const phases[] = { [DAEMON_STARTING] = "starting", [DAEMON_RUNNING] = "ready",
                                              [DAEMON_STOPPING] = "stopping", [DAEMON_EXIT] = "stopping" };
        enum daemon_phase phase = f->daemon->phase;
        struct evbuffer *b = evbuffer_new();

        if (b)
                evbuffer_add_printf(b, "{\"status\":\"%s\",\"sessions\":%zu}\n", phases[phase], f->n_sessions);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply(req, phase == DAEMON_RUNNING ? 200 : 503, phase == DAEMON_RUNNING ? "OK" : "Service Unavailable", b);
        if (b)
                evbuffer_free(b);
}

/* Where the protected resource's metadata is (RFC 9728 §3.1): the well-known path between
 * the resource's origin and its path. NULL without http.oauth. */
static char *resource_metadata_url(const struct http_config *h, struct evhttp_request *req) {
        const char *resource = h->oauth.issuer ? http_oauth_resource(h, header(req, "Host")) : NULL;
        const char *host = resource ? strstr(resource, "://") : NULL;
        const char *path = host ? strchr(host + 3, '/') : NULL;
        char *url;

        if (!resource)
                return NULL;
        if (asprintf(&url, "%.*s/.well-known/oauth-protected-resource%s", (int)(path ? path - resource : (long)strlen(resource)),
                     resource, path && strcmp(path, "/") != 0 ? path : "") < 0)
                return NULL;
        return url;
}

/* Bearer, with the resource's metadata when http.oauth is set (RFC 9728 §5.1), the error
 * (RFC 6750 §3.1) and the scopes every token needs (requiredScopes), for a client to ask for
 * them from the start (MCP 2025-11-25) or again on insufficient_scope. */
static void add_authenticate(struct http_front *f, struct evhttp_request *req, const struct http_verdict *v) {
        const struct http_config *h = &f->daemon->config.http;
        _cleanup_free_ char *metadata = resource_metadata_url(h, req);
        struct evbuffer *b = evbuffer_new();
        char *value;
        size_t n;

        if (!b)
                return;
        evbuffer_add_printf(b, "Bearer realm=\"mcpvisor\"");
        if (metadata)
                evbuffer_add_printf(b, ", resource_metadata=\"%s\"", metadata);
        if (v->bearer_error)
                evbuffer_add_printf(b, ", error=\"%s\"", v->bearer_error);
        if (v->bearer_error)
                evbuffer_add_printf(b, ", error_description=\"%s\"", v->text);
        if (metadata && h->oauth.required_scopes && h->oauth.required_scopes[0]) {
                evbuffer_add_printf(b, ", scope=\"");
                for (char **s = h->oauth.required_scopes; *s; s++)
                        evbuffer_add_printf(b, "%s%s", s == h->oauth.required_scopes ? "" : " ", *s);
                evbuffer_add_printf(b, "\"");
        }
        n = evbuffer_get_length(b);
        value = malloc(n + 1);
        if (value) {
                evbuffer_copyout(b, value, n);
                value[n] = '\0';
                evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", value);
                free(value);
        }
        evbuffer_free(b);
}

/* GET /.well-known/oauth-protected-resource[/PATH] (RFC 9728 §3.2). */
static void handle_resource_metadata(struct http_front *f, struct evhttp_request *req) {
        const struct http_config *h = &f->daemon->config.http;
        const char *resource = http_oauth_resource(h, header(req, "Host"));
        json_object *doc = json_object_new_object(), *servers = json_object_new_array(), *scopes = json_object_new_array(),
                    *methods = json_object_new_array();
        struct evbuffer *b = evbuffer_new();

        json_object_object_add(doc, "resource", json_object_new_string(resource ? resource : ""));
        json_object_array_add(servers, json_object_new_string(h->oauth.issuer));
        json_object_object_add(doc, "authorization_servers", servers);
        for (char **s = h->oauth.required_scopes; s && *s; s++)
                json_object_array_add(scopes, json_object_new_string(*s));
        for (size_t i = 0; i < h->oauth.n_scopes; i++)
                json_object_array_add(scopes, json_object_new_string(h->oauth.scopes[i].name));
        json_object_object_add(doc, "scopes_supported", scopes);
        json_object_array_add(methods, json_object_new_string("header"));
        json_object_object_add(doc, "bearer_methods_supported", methods);
        if (b)
                evbuffer_add_printf(b, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(doc);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply(req, 200, "OK", b);
        if (b)
                evbuffer_free(b);
}

/* A request the checks refused (http-request.h), answered as its verdict says. */
static void refuse(struct http_front *f, struct evhttp_request *req, const struct http_verdict *v) {
        struct evkeyvalq *out = evhttp_request_get_output_headers(req);

        if (v->log)
                log_refusal(f, req, v->log);
        if (v->authenticate)
                add_authenticate(f, req, v);
        if (v->retry)
                evhttp_add_header(out, "Retry-After", "1");
        if (v->allow)
                evhttp_add_header(out, "Allow", v->allow);
        if (v->json)
                send_rpc_error(req, v->status, v->reason, v->text);
        else
                send_text(req, v->status, v->reason, v->text);
}

static enum http_method method_of(enum evhttp_cmd_type cmd) {
        return cmd == EVHTTP_REQ_GET ? HTTP_GET : cmd == EVHTTP_REQ_POST ? HTTP_POST : cmd == EVHTTP_REQ_DELETE ? HTTP_DELETE : HTTP_OTHER;
}

static void on_request(struct evhttp_request *req, void *userdata) {
        struct http_front *f = userdata;
        const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
        struct http_request r = {
                .method = method_of(evhttp_request_get_command(req)),
                .path = uri ? evhttp_uri_get_path(uri) : NULL,
                .origin = header(req, "Origin"),
                .authorization = header(req, "Authorization"),
                .content_type = header(req, "Content-Type"),
                .accept = header(req, "Accept"),
                .protocol_version = header(req, "MCP-Protocol-Version"),
                .session_id = header(req, "Mcp-Session-Id"),
        };
        struct http_verdict v;
        struct caller_facts who;
        struct client *c;

        r.unix_peer = on_unix_socket(req);
        http_request_judge(&f->daemon->config.http, f->oauth, &r, &v);
        if (v.outcome == HTTP_HEALTHZ) {
                handle_healthz(f, req);
                return;
        }
        if (v.outcome == HTTP_RESOURCE_METADATA) {
                handle_resource_metadata(f, req);
                return;
        }
        if (v.outcome == HTTP_REFUSE) {
                refuse(f, req, &v);
                return;
        }
        if (!identify(req, &r, &v, &who))
                return;
        if (r.method == HTTP_POST)
                handle_post(f, req, &r, &v, &who);
        else if ((c = find_session(f, req, &r, &v, &who)) && r.method == HTTP_GET)
                client_http_get(c, req, header(req, "Last-Event-ID"));
        else if (c)
                client_http_delete(c, req);
        principal_done(&who.principal); /* empty when a session took it */
}

int http_front_start(struct http_front *f, struct daemon *d, const int *passed, size_t n_passed) {
        const struct http_config *h = &d->config.http;
        int r;

        *f = (struct http_front){ .daemon = d };
        idmap_init(&f->sessions);
        if (h->n_listen == 0 && n_passed == 0)
                return 0;
        f->evh = evhttp_new(d->base);
        if (!f->evh)
                return -ENOMEM;
        f->refusal_timer = evtimer_new(d->base, summaries_due, f);
        if (!f->refusal_timer)
                return -ENOMEM;
        refusal_log_init(&f->refusals, HTTP_REFUSAL_LOG_USEC);
        evhttp_set_gencb(f->evh, on_request, f);
        evhttp_set_allowed_methods(f->evh, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                                                   EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD | EVHTTP_REQ_PATCH);
        evhttp_set_max_body_size(f->evh, (ev_ssize_t)d->config.max_message_size);
        evhttp_set_max_headers_size(f->evh, HTTP_MAX_HEADERS);
        evhttp_set_timeout(f->evh, HTTP_CONNECTION_TIMEOUT);
        if ((r = http_listen_init(&f->listen, d->base, f->evh, &d->log)) < 0)
                return r;
        http_gates_init(&f->gates, f, f->listen.fd_limit, f->listen.reserve);
        http_listen_set_gates(&f->listen, &f->gates);
        for (size_t i = 0; i < n_passed; i++)
                if ((r = http_listen_take_passed(&f->listen, passed[i])) < 0)
                        return r;
        for (size_t i = 0; i < h->n_listen; i++)
                if ((r = http_listen_bind(&f->listen, &h->listen[i], d->config.socket_mode)) < 0)
                        return r;
        if (h->oauth.issuer) {
                const char *why = NULL;

                /* At start, so that the first request rarely waits for the issuer's keys. */
                r = http_oauth_new(d->base, &d->log, h, &f->oauth, &why);
                if (r < 0)
                        log_error(&d->log, "http.oauth: cannot fetch the issuer's keys (%s): JWT access tokens are refused",
                                  why ? why : strerror(-r));
        }
        if (h->n_listen > 0 && h->n_tokens == 0 && !h->oauth.issuer && http_listen_has_tcp(&f->listen))
                log_warning(&d->log, "HTTP listens on TCP but http.tokens is empty: every request there is refused");
        return 0;
}

void http_front_stop_listening(struct http_front *f) {
        http_listen_stop(&f->listen);
}

void http_front_done(struct http_front *f) {
        http_listen_done(&f->listen); /* before evhttp_free, which would close its sockets */
        if (f->refusal_timer)
                event_free(f->refusal_timer);
        if (f->evh)
                evhttp_free(f->evh); /* ends the gates of its connections */
        http_gates_done(&f->gates);
        http_oauth_free(f->oauth);
        idmap_done(&f->sessions);
        *f = (struct http_front){ 0 };
}

void http_front_config_changed(struct http_front *f) {
        if (f->evh)
                f->oauth = http_oauth_config_changed(f->oauth, f->daemon->base, &f->daemon->log, &f->daemon->config.http);
}

void http_front_session_opened(struct http_front *f) {
        if (++f->n_sessions > f->sessions_peak)
                f->sessions_peak = f->n_sessions;
}

/* glibc's malloc keeps memory freed amid its heap: after a burst of sessions it would stay
 * with the daemon. Given back once they fall to a quarter of their peak since the last time
 * (a walk of the heap: not at every session's end). */
void http_front_session_ended(struct http_front *f) {
        f->n_sessions--;
        if (f->sessions_peak >= HTTP_TRIM_PEAK && f->n_sessions <= f->sessions_peak / 4) {
                malloc_trim(0);
                f->sessions_peak = f->n_sessions;
        }
}

json_object *http_front_listeners_json(const struct http_front *f) {
        return http_listen_json(&f->listen);
}
