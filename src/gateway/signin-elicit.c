/* The sign-in link as a URL-mode elicitation; see signin-elicit.h.
 *
 * Each sign-in is in one state, moved by elicit_set_state() alone:
 *   ELICIT_DISCOVERING  the authorization server being found and the client registered:
 *                       the calls that asked wait for the URL
 *   ELICIT_WAITING      the URL given to every call that asked; the listener waits for the
 *                       browser's redirect
 *   ELICIT_FINISHING    the redirect came: its code being exchanged, the browser's request
 *                       held until the answer is known
 *   ELICIT_CLOSING      over (kept or failed): its listener closed, freed on a later turn
 *                       once the browser's page is written (or after ELICIT_LINGER_SEC) */
#include "signin-elicit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "control-access.h"
#include "credential.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "launcher.h"
#include "log.h"
#include "macro.h"
#include "methods.h"
#include "mrtr.h"
#include "oauth-metadata.h"
#include "oauth-signin.h"
#include "oauth-text.h"
#include "oauth-tokens.h"
#include "pool.h"
#include "request-meta.h"
#include "server-config.h"
#include "session.h"
#include "supervisor.h"

#define URL_ELICITATION_REQUIRED (-32042)
#define ELICIT_TIMEOUT_SEC 300  /* a human signs in: as mcpvisorctl login waits */
#define ELICIT_LINGER_SEC 5     /* the browser's last page written before the listener goes */
#define ELICIT_HEAD_MAX 8192

enum elicit_state { ELICIT_DISCOVERING, ELICIT_WAITING, ELICIT_FINISHING, ELICIT_CLOSING };

/* A client given (or waiting for) the elicitation: id is its call still owed an answer
 * (DISCOVERING), NULL once answered. A modern client's call (state: its requestState) is
 * answered input_required and then forgotten: that era has no completion notification. */
struct elicit_client {
        struct client *c;
        json_object *id;
        char *state;
        struct elicit_client *next;
};

struct signin_elicit {
        struct daemon *d;
        enum elicit_state state;
        char *server;
        uid_t uid;                       /* whose token: OAUTH_SHARED for a shared server */
        char *elicitation_id;
        char *url;                       /* the authorization URL, from WAITING on */
        struct oauth_signin *signin;
        struct evhttp *http;             /* the loopback listener for the redirect */
        struct evhttp_bound_socket *bound;
        struct evhttp_request *redirect; /* the browser's, held in FINISHING */
        struct evhttp_request *page;     /* its answer being written */
        struct event *timer;             /* the deadline; in CLOSING, the free */
        struct elicit_client *clients;
        struct signin_elicit *next;
};

static void elicit_set_state(struct signin_elicit *e, enum elicit_state state) {
        e->state = state;
}

static void elicit_log(struct signin_elicit *e, int priority, const char *fmt, ...) _printf_(3, 4);

static void elicit_log(struct signin_elicit *e, int priority, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        char who[32];
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        oauth_subject_text(e->uid, who, sizeof who);
        log_emit(daemon_logger(e->d), priority, &(struct log_subject){ .server = e->server },
                 "sign-in (%s) by URL elicitation: %s", who, text);
}

/* text with &, <, > and " escaped for the browser's page. */
static void add_escaped(struct evbuffer *b, const char *text) {
        for (; *text; text++)
                switch (*text) {
                case '&': evbuffer_add(b, "&amp;", 5); break;
                case '<': evbuffer_add(b, "&lt;", 4); break;
                case '>': evbuffer_add(b, "&gt;", 4); break;
                case '"': evbuffer_add(b, "&quot;", 6); break;
                default: evbuffer_add(b, text, 1);
                }
}

static void on_page_written(struct evhttp_request *req, void *userdata);

static void answer_page(struct signin_elicit *e, struct evhttp_request *req, int status, const char *text) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        struct evbuffer *b = evbuffer_new();

        if (!b) {
                evhttp_send_error(req, HTTP_INTERNAL, NULL);
                return;
        }
        evbuffer_add_printf(b, "<!doctype html><meta charset=utf-8><title>mcpvisor</title><p>");
        add_escaped(b, text);
        evbuffer_add_printf(b, "</p>\n");
        evhttp_add_header(h, "Content-Type", "text/html; charset=utf-8");
        evhttp_add_header(h, "Cache-Control", "no-store");
        evhttp_add_header(h, "Referrer-Policy", "no-referrer");
        evhttp_add_header(h, "Connection", "close");
        if (e) {
                evhttp_request_set_on_complete_cb(req, on_page_written, e);
                e->page = req;
        }
        evhttp_send_reply(req, status, status == HTTP_OK ? "OK" : status == HTTP_NOTFOUND ? "Not Found" : "Service Unavailable",
                          b);
        evbuffer_free(b);
}

static void entry_free(struct elicit_client *ec) {
        json_object_put(ec->id);
        free(ec->state);
        free(ec);
}

static void elicit_free(struct signin_elicit *e) {
        struct signin_elicit **p;

        for (p = &e->d->elicits; *p && *p != e; p = &(*p)->next)
                ;
        if (*p)
                *p = e->next;
        if (e->redirect)
                answer_page(NULL, e->redirect, HTTP_SERVUNAVAIL, "mcpvisor no longer waits for this sign-in.");
        while (e->clients) {
                struct elicit_client *ec = e->clients;

                e->clients = ec->next;
                if (ec->id)
                        client_reply_error(ec->c, ec->id, JSONRPC_INTERNAL_ERROR, "the sign-in ended before it began", NULL);
                entry_free(ec);
        }
        oauth_signin_free(e->signin);
        if (e->http)
                evhttp_free(e->http);
        if (e->timer)
                event_free(e->timer);
        free(e->url);
        free(e->elicitation_id);
        free(e->server);
        free(e);
}

/* Over: no new redirect is taken; freed once its page is written (or soon after). Never
 * frees it here: this may run under the sign-in's or the listener's own callback. */
static void elicit_close(struct signin_elicit *e) {
        struct timeval linger = { .tv_sec = e->redirect || e->page ? ELICIT_LINGER_SEC : 0 };

        elicit_set_state(e, ELICIT_CLOSING);
        if (e->bound) {
                evhttp_del_accept_socket(e->http, e->bound);
                e->bound = NULL;
        }
        evtimer_add(e->timer, &linger);
}

static void on_page_written(struct evhttp_request *req, void *userdata) {
        struct signin_elicit *e = userdata;
        struct timeval now = { 0 };

        e->page = NULL;
        if (e->state == ELICIT_CLOSING)
                evtimer_add(e->timer, &now);
}

/* The calls still owed an answer get this error. */
static void answer_waiting(struct signin_elicit *e, const char *message) {
        for (struct elicit_client *ec = e->clients; ec; ec = ec->next)
                if (ec->id) {
                        client_reply_error(ec->c, ec->id, JSONRPC_INTERNAL_ERROR, message, NULL);
                        json_object_put(ec->id);
                        ec->id = NULL;
                }
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct signin_elicit *e = userdata;
        _cleanup_free_ char *command = NULL, *message = NULL;

        if (e->state != ELICIT_CLOSING) {
                elicit_log(e, LOG_NOTICE, "no sign-in came back within %d s", ELICIT_TIMEOUT_SEC);
                command = oauth_login_command(e->server, e->uid);
                if (asprintf(&message, "sign-in needed: the sign-in to %s timed out; run %s", e->server,
                             command ? command : "mcpvisorctl login") < 0)
                        message = NULL;
                answer_waiting(e, message ? message : "the sign-in timed out");
        }
        elicit_free(e);
}

/* A modern call's answer: input_required with the link as its one elicitation (2026-07-28
 * has no elicitationId), and the requestState its retry brings back. */
static void answer_input_required(struct signin_elicit *e, struct client *c, json_object *id, const char *state,
                                  const char *message) {
        json_object *result = json_object_new_object(), *requests = json_object_new_object(),
                    *ask = json_object_new_object(), *params = json_object_new_object();

        json_object_object_add(params, "mode", json_object_new_string("url"));
        json_object_object_add(params, "message", json_object_new_string(message));
        json_object_object_add(params, "url", json_object_new_string(e->url));
        json_object_object_add(ask, "method", json_object_new_string("elicitation/create"));
        json_object_object_add(ask, "params", params);
        json_object_object_add(requests, "signin", ask);
        json_object_object_add(result, "resultType", json_object_new_string("input_required"));
        json_object_object_add(result, "inputRequests", requests);
        json_object_object_add(result, "requestState", json_object_new_string(state));
        client_send(c, jsonrpc_result(id, result));
}

/* The error that carries the elicitation (legacy), or input_required (state: modern). */
static void answer_elicitation(struct signin_elicit *e, struct client *c, json_object *id, const char *state) {
        json_object *data, *list, *one;
        char message[300];

        snprintf(message, sizeof message,
                 "Sign in to %s: open this address in a browser on the host mcpvisor runs on (its redirect comes back "
                 "there), then retry.", e->server);
        if (state) {
                answer_input_required(e, c, id, state, message);
                return;
        }
        data = json_object_new_object();
        list = json_object_new_array();
        one = json_object_new_object();
        json_object_object_add(one, "mode", json_object_new_string("url"));
        json_object_object_add(one, "elicitationId", json_object_new_string(e->elicitation_id));
        json_object_object_add(one, "url", json_object_new_string(e->url));
        json_object_object_add(one, "message", json_object_new_string(message));
        json_object_array_add(list, one);
        json_object_object_add(data, "elicitations", list);
        snprintf(message, sizeof message, "sign-in needed: server '%s' needs a sign-in; open the address given", e->server);
        client_reply_error(c, id, URL_ELICITATION_REQUIRED, message, data);
}

static void on_url(struct oauth_signin *s, const char *url, const char *error, void *userdata) {
        struct signin_elicit *e = userdata;
        _cleanup_free_ char *command = NULL, *message = NULL;

        if (!url) {
                elicit_log(e, LOG_NOTICE, "%s", error);
                command = oauth_login_command(e->server, e->uid);
                if (asprintf(&message, "sign-in needed, but it cannot begin: %s; run %s", error,
                             command ? command : "mcpvisorctl login") < 0)
                        message = NULL;
                answer_waiting(e, message ? message : "the sign-in cannot begin");
                elicit_close(e);
                return;
        }
        e->url = strdup(url);
        if (!e->url) {
                answer_waiting(e, "out of memory");
                elicit_close(e);
                return;
        }
        elicit_set_state(e, ELICIT_WAITING);
        elicit_log(e, LOG_INFO, "waiting for the browser's redirect");
        for (struct elicit_client **p = &e->clients; *p;) {
                struct elicit_client *ec = *p;

                if (ec->id)
                        answer_elicitation(e, ec->c, ec->id, ec->state);
                json_object_put(ec->id);
                ec->id = NULL;
                if (ec->state) {
                        *p = ec->next;
                        entry_free(ec);
                } else {
                        p = &ec->next;
                }
        }
}

/* Whether an earlier entry than ec is of the same client. */
static bool told_before(const struct signin_elicit *e, const struct elicit_client *ec) {
        for (const struct elicit_client *o = e->clients; o != ec; o = o->next)
                if (o->c == ec->c)
                        return true;
        return false;
}

/* The clients given the elicitation hear it is complete, once each. */
static void notify_complete(struct signin_elicit *e) {
        for (struct elicit_client *ec = e->clients; ec; ec = ec->next) {
                json_object *params;

                if (ec->state || told_before(e, ec))
                        continue;
                params = json_object_new_object();
                json_object_object_add(params, "elicitationId", json_object_new_string(e->elicitation_id));
                client_send(ec->c, jsonrpc_notification("notifications/elicitation/complete", params));
        }
}

/* The grant (taken) kept as the token of (server, uid), and the server started again. */
static int keep(struct signin_elicit *e, struct oauth_grant *grant, char **error) {
        struct supervisor *sv = daemon_supervisor(e->d);
        struct oauth_tokens *tokens = supervisor_tokens(sv);
        const struct server_config *config = NULL;
        struct server *srv;
        struct pool *p;
        int r;

        if ((p = supervisor_find_pool(sv, e->server)))
                config = p->config;
        else if ((srv = supervisor_find(sv, e->server)))
                config = srv->config;
        if (!config || !remote_signs_in(&config->remote) || !tokens) {
                oauth_grant_done(grant);
                free(*error);
                *error = strdup("the server is no longer configured to sign in");
                return -ENOENT;
        }
        r = oauth_tokens_put(tokens, config, e->uid, grant, error);
        if (r < 0)
                return r;
        control_login_start_again(e->d, e->server, e->uid, "signed in (a client's URL elicitation)");
        return 0;
}

static void on_finished(struct oauth_signin *s, struct oauth_grant *grant, const char *error, void *userdata) {
        struct signin_elicit *e = userdata;
        _cleanup_free_ char *keep_error = NULL;
        char text[600];

        if (!grant) {
                elicit_log(e, LOG_NOTICE, "failed: %s", error);
                snprintf(text, sizeof text, "mcpvisor: the sign-in to %s failed: %s. Retry from your agent.", e->server, error);
        } else if (keep(e, grant, &keep_error) < 0) {
                elicit_log(e, LOG_WARNING, "signed in, but the token cannot be kept: %s",
                           keep_error ? keep_error : "out of memory");
                snprintf(text, sizeof text, "mcpvisor: signed in to %s, but the token cannot be kept: %s.", e->server,
                         keep_error ? keep_error : "out of memory");
        } else {
                elicit_log(e, LOG_NOTICE, "signed in");
                snprintf(text, sizeof text, "mcpvisor: signed in to %s. You may close this tab and go back to your agent.",
                         e->server);
                notify_complete(e);
        }
        free(grant);
        if (e->redirect) {
                answer_page(e, e->redirect, HTTP_OK, text);
                e->redirect = NULL;
        }
        elicit_close(e);
}

/* An error code of RFC 6749's characters, else a word of our own. */
static const char *error_code(const char *text) {
        return text && *text && strlen(text) < 64 && strspn(text, "abcdefghijklmnopqrstuvwxyz_") == strlen(text) ? text
                                                                                                            : "an error";
}

/* The browser's requests: GET /callback?code&state&iss (or error) once; anything else 404. */
static void on_request(struct evhttp_request *req, void *userdata) {
        struct signin_elicit *e = userdata;
        const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
        const char *path = uri ? evhttp_uri_get_path(uri) : NULL, *query = uri ? evhttp_uri_get_query(uri) : NULL;
        struct evkeyvalq q;
        struct evkeyval *kv;
        const char *refused;
        char text[300];

        if (e->state != ELICIT_WAITING || evhttp_request_get_command(req) != EVHTTP_REQ_GET || !path ||
            strcmp(path, "/callback") != 0) {
                answer_page(NULL, req, HTTP_NOTFOUND, "Not the sign-in's address.");
                return;
        }
        TAILQ_INIT(&q);
        if (evhttp_parse_query_str(query ? query : "", &q) < 0) {
                answer_page(NULL, req, HTTP_NOTFOUND, "Not the sign-in's address.");
                return;
        }
        e->redirect = req;
        elicit_set_state(e, ELICIT_FINISHING);
        refused = evhttp_find_header(&q, "error");
        if (refused) {
                elicit_log(e, LOG_NOTICE, "refused by the authorization server: %s", error_code(refused));
                snprintf(text, sizeof text, "mcpvisor: the authorization server refused the sign-in to %s (%s).", e->server,
                         error_code(refused));
                answer_page(e, req, HTTP_OK, text);
                e->redirect = NULL;
                elicit_close(e);
        } else {
                /* finished follows, maybe before this returns */
                oauth_signin_complete(e->signin, evhttp_find_header(&q, "code"), evhttp_find_header(&q, "state"),
                                      evhttp_find_header(&q, "iss"));
        }
        TAILQ_FOREACH(kv, &q, next)
                explicit_bzero(kv->value, strlen(kv->value));
        evhttp_clear_headers(&q);
}

/* A listener on 127.0.0.1, its port chosen by the kernel, under an evhttp of its own.
 * 0 with the port, or a negative errno. */
static int open_listener(struct signin_elicit *e, unsigned *ret_port) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        struct evconnlistener *l;
        int fd, r;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        l = evconnlistener_new(e->d->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 8, fd);
        if (!l) {
                close(fd);
                return -ENOMEM;
        }
        e->http = evhttp_new(e->d->base);
        if (!e->http) {
                evconnlistener_free(l);
                return -ENOMEM;
        }
        evhttp_set_max_headers_size(e->http, ELICIT_HEAD_MAX);
        evhttp_set_max_body_size(e->http, 0);
        evhttp_set_timeout(e->http, 10);
        evhttp_set_allowed_methods(e->http, EVHTTP_REQ_GET);
        evhttp_set_gencb(e->http, on_request, e);
        e->bound = evhttp_bind_listener(e->http, l);
        if (!e->bound) {
                evconnlistener_free(l);
                return -ENOMEM;
        }
        *ret_port = ntohs(a.sin_port);
        return 0;
}

static struct signin_elicit *find(struct daemon *d, const char *server, uid_t uid) {
        for (struct signin_elicit *e = d->elicits; e; e = e->next)
                if (e->state != ELICIT_CLOSING && e->uid == uid && strcmp(e->server, server) == 0)
                        return e;
        return NULL;
}

/* Whether c has been given the elicitation already (a legacy client, to notify). */
static bool told(const struct signin_elicit *e, const struct client *c) {
        for (const struct elicit_client *ec = e->clients; ec; ec = ec->next)
                if (ec->c == c && !ec->id && !ec->state)
                        return true;
        return false;
}

/* c's call m waits for or is given the elicitation (a modern call: input_required). */
static int join(struct signin_elicit *e, struct client *c, struct jsonrpc_msg *m) {
        _cleanup_free_ char *state = NULL;
        struct elicit_client *ec, **tail;

        if (session_stateless(&c->session) &&
            !(state = mrtr_seal_own(daemon_mrtr(c->daemon), c, m, MRTR_ROUND_SIGNIN)))
                return -ENOMEM;
        if (e->state != ELICIT_DISCOVERING && (state || told(e, c))) {
                answer_elicitation(e, c, m->id, state); /* nothing more to keep of it */
                return 0;
        }
        ec = calloc(1, sizeof *ec);
        if (!ec)
                return -ENOMEM;
        ec->c = c;
        for (tail = &e->clients; *tail; tail = &(*tail)->next)
                ;
        *tail = ec;
        if (e->state == ELICIT_DISCOVERING) {
                ec->id = json_object_get(m->id);
                ec->state = TAKE_PTR(state);
        } else {
                answer_elicitation(e, c, m->id, NULL);
        }
        return 0;
}

/* A sign-in of (config, uid) begun, c's call waiting for its URL. NULL: nothing begun, c
 * not answered. */
static struct signin_elicit *begin(struct client *c, struct jsonrpc_msg *m, const struct server_config *config, uid_t uid) {
        struct daemon *d = c->daemon;
        struct supervisor *sv = daemon_supervisor(d);
        struct oauth_tokens *tokens = supervisor_tokens(sv);
        _cleanup_free_ char *secret = NULL;
        char redirect[64];
        struct curl_loop *loop;
        const char *why = NULL, *left_issuer = NULL, *left_client = NULL;
        struct signin_elicit *e;
        unsigned port = 0;
        int r;

        if (launcher_http_loop(sv, &loop, &why) < 0)
                return NULL;
        if (config->remote.client_secret &&
            credential_read(sv->credentials_dir ? sv->credentials_dir : "/nonexistent", config->remote.client_secret,
                            &secret) < 0)
                return NULL; /* the login's text names the fix */
        e = calloc(1, sizeof *e);
        if (!e)
                return NULL;
        *e = (struct signin_elicit){ .d = d, .state = ELICIT_DISCOVERING, .uid = uid };
        e->server = strdup(config->name);
        e->timer = evtimer_new(d->base, on_timer, e);
        if (!e->server || !e->timer || oauth_random_text(18, &e->elicitation_id) < 0 || open_listener(e, &port) < 0 ||
            join(e, c, m) < 0) {
                elicit_free(e);
                return NULL;
        }
        e->next = d->elicits;
        d->elicits = e;
        evtimer_add(e->timer, &(struct timeval){ .tv_sec = ELICIT_TIMEOUT_SEC });
        snprintf(redirect, sizeof redirect, "http://127.0.0.1:%u/callback", port);
        client_log(c, LOG_INFO, "sign-in to %s%s begun for its call (URL elicitation)", e->server,
                   uid == OAUTH_SHARED ? " (shared)" : "");
        oauth_tokens_left(tokens, config, uid, &left_issuer, &left_client);
        r = oauth_signin_begin(&(struct oauth_signin_params){ .loop = loop,
                                                              .rc = &config->remote,
                                                              .redirect_uri = redirect,
                                                              .client_secret = secret,
                                                              .resource_metadata = oauth_tokens_metadata(tokens, config, uid),
                                                              /* a step-up's scopes; a moved server's old client kept away */
                                                              .scope = oauth_tokens_wanted_scope(tokens, config, uid),
                                                              .left_issuer = left_issuer,
                                                              .left_client_id = left_client,
                                                              .url_ready = on_url,
                                                              .finished = on_finished,
                                                              .userdata = e },
                               &e->signin);
        if (secret)
                explicit_bzero(secret, strlen(secret));
        if (r < 0) {
                answer_waiting(e, "the sign-in cannot begin: out of memory");
                elicit_close(e);
        }
        return e;
}

/* c may sign in for the token of uid: a per-user instance's user, or for a shared token
 * whoever may use the control socket (as mcpvisorctl login asks). */
static bool may_sign_in(struct client *c, uid_t uid) {
        char why[256];

        if (uid != OAUTH_SHARED)
                return client_principal(c)->uid == uid;
        return control_access_allowed(daemon_config(c->daemon)->control_group, client_principal(c), why, sizeof why);
}

/* Whether c's call m takes the link: its client declared URL mode (a modern request in its
 * own _meta), and, modern, the call may be answered input_required. */
static bool takes_link(struct client *c, struct jsonrpc_msg *m) {
        if (!(session_request_caps(&c->session, m->params) & CLIENT_CAP_URL_ELICITATION))
                return false;
        return !session_stateless(&c->session) || mrtr_method_takes_input(m->method);
}

bool signin_elicit_offer(struct client *c, struct jsonrpc_msg *m, struct server *s) {
        struct oauth_tokens *tokens = supervisor_tokens(daemon_supervisor(c->daemon));
        const struct server_config *config = s->config;
        uid_t uid = s->owner.kind == OWNER_USER ? s->owner.uid : OAUTH_SHARED;
        struct signin_elicit *e;

        if (!takes_link(c, m))
                return false;
        if (!remote_signs_in(&config->remote) || !tokens || !oauth_tokens_signin_needed(tokens, config, uid) ||
            !may_sign_in(c, uid))
                return false;
        e = find(c->daemon, config->name, uid);
        if (e)
                return join(e, c, m) == 0;
        return begin(c, m, config, uid) != NULL;
}

void signin_elicit_client_gone(struct daemon *d, struct client *c) {
        for (struct signin_elicit *e = d->elicits; e; e = e->next)
                for (struct elicit_client **p = &e->clients; *p;) {
                        struct elicit_client *ec = *p;

                        if (ec->c != c) {
                                p = &ec->next;
                                continue;
                        }
                        *p = ec->next;
                        entry_free(ec);
                }
}

void signin_elicit_done(struct daemon *d) {
        while (d->elicits)
                elicit_free(d->elicits);
}
