/* The HTTP launcher: a run of a server reached by URL. It starts no program: its
 * transport (transport-http.h) is the MCP session with the server, and the run ends when
 * that session is over (closed by the daemon, or broken by the server or the network).
 * Terminate and kill end it at once. See launcher.h. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credential.h"
#include "curl-loop.h"
#include "run.h"
#include "macro.h"
#include "launcher.h"
#include "oauth-tokens.h"
#include "server-cause.h"
#include "server-config.h"
#include "server-transport.h"
#include "server.h"
#include "supervisor.h"
#include "text.h"
#include "transport-http.h"

struct http_run {
        struct run *in;
        uid_t token_uid;              /* whose sign-in token it sends (OAUTH_SHARED: a shared server's) */
        struct server_transport *t;   /* the connection's; NULL once the session is over */
        struct http_end end;
        bool scope_signin;            /* its 403 asked for scope a sign-in may give */
        bool over;
};

static struct http_run *run_of(const struct run *in) {
        return in->launcher;
}

/* A 401 to a server that may be signed in to. A refused sign-in token is refreshed once,
 * and the restart that follows uses the new one; a second refusal, or none to refresh,
 * needs a sign-in: no retry. Without a token, a Bearer challenge (or "auth": "oauth") says
 * a sign-in is needed too; the challenge's resource metadata is kept for the login. */
static void judge_refusal(struct http_run *run) {
        struct server *s = run->in->server;
        struct oauth_tokens *tokens = s->sv->tokens;

        if (run->end.bearer_challenge)
                oauth_tokens_note_metadata(tokens, s->config, run->token_uid, run->end.resource_metadata);
        if (oauth_tokens_have(tokens, s->config, run->token_uid))
                run->end.no_retry = !oauth_tokens_refused(tokens, s->config, run->token_uid);
        else if (run->end.bearer_challenge || s->config->remote.auth == REMOTE_AUTH_OAUTH)
                run->end.no_retry = true;
        else
                run->end.unauthorized = false; /* no sign-in asked for: the credential's refusal */
}

/* A 403 insufficient_scope to a token: a sign-in asking for more scope may help (the
 * token needs one now, and says which scope), or it may not (its sign-in asked for all of
 * it). Not retried either way: one challenge, one failure, no loop of sign-ins. */
static void judge_scope(struct http_run *run) {
        struct server *s = run->in->server;

        run->scope_signin = oauth_tokens_scope_refused(s->sv->tokens, s->config, run->token_uid, run->end.scope);
        run->end.no_retry = true;
}

/* The sign-in token of its server and user, as it is at each request. */
static const char *bearer(void *userdata) {
        struct http_run *run = userdata;
        struct server *s = run->in->server;

        return s->sv->tokens ? oauth_tokens_bearer(s->sv->tokens, s->config->name, run->token_uid, s->config->remote.url)
                             : NULL;
}

static void on_finished(const struct http_end *end, void *userdata) {
        struct http_run *run = userdata;
        struct server *s = run->in->server;

        run->end = *end;
        if (end->unauthorized && remote_signs_in(&s->config->remote) && supervisor_tokens(s->sv))
                judge_refusal(run);
        else if (end->insufficient_scope && remote_signs_in(&s->config->remote) && supervisor_tokens(s->sv))
                judge_scope(run);
        run->over = true;
        run->t = NULL;
        run_ended(run->in);
}

/* A header's value: a credential's text, put into its format. Secrets never reach a log:
 * the errors name the credential only. */
static int header_credential(const struct remote_header *hd, const char *dir, char **ret, char **error) {
        _cleanup_free_ char *secret = NULL;
        int r;

        r = credential_read_for("header", hd->name, dir, hd->credential, &secret, error);
        if (r < 0)
                return -EPERM;
        if (strpbrk(secret, "\r\n")) {
                text_error(error, "header %s: credential '%s' is not one line of text", hd->name, hd->credential);
                return -EPERM;
        }
        if (!hd->format) {
                *ret = TAKE_PTR(secret);
                return 0;
        }
        /* format holds one "%s" and no other '%' (remote-config.c) */
        const char *at = strstr(hd->format, "%s");

        return asprintf(ret, "%.*s%s%s", (int)(at - hd->format), hd->format, secret, at + 2) < 0 ? -ENOMEM : 0;
}

/* "Name: value" lines of the configured headers, credentials read now. */
static int build_headers(const struct remote_config *rc, const char *dir, struct curl_slist **ret, char **error) {
        struct curl_slist *list = NULL;

        for (size_t i = 0; i < rc->n_headers; i++) {
                const struct remote_header *hd = &rc->headers[i];
                _cleanup_free_ char *value = NULL, *line = NULL;
                struct curl_slist *next;
                int r = hd->credential ? header_credential(hd, dir, &value, error) : 0;

                if (r == 0 && asprintf(&line, "%s: %s", hd->name, hd->credential ? value : hd->value) < 0)
                        r = -ENOMEM;
                next = r == 0 ? curl_slist_append(list, line) : NULL;
                if (line)
                        explicit_bzero(line, strlen(line));
                if (value)
                        explicit_bzero(value, strlen(value));
                if (!next) {
                        curl_slist_free_all(list);
                        return r < 0 ? r : -ENOMEM;
                }
                list = next;
        }
        *ret = list;
        return 0;
}

/* The daemon's curl loop, its daemon-wide part: made at the first run's start (libcurl is
 * loaded then, curl-library.c), kept until the daemon exits. 0, or a negative errno with
 * *error (static) saying why (libcurl missing). */
int launcher_http_loop(struct supervisor *sv, struct curl_loop **ret, const char **error) {
        void **part = NULL;
        struct curl_loop *loop;
        int r = 0;

        for (size_t i = 0; i < RUN_LAUNCHERS; i++)
                if (run_launchers[i] == &run_http_ops)
                        part = &sv->launcher_parts[i];
        loop = *part;
        if (!loop) {
                r = curl_loop_new(sv->base, sv->log, &loop, error);
                *part = loop;
        }
        *ret = loop;
        return r;
}

static int curl_loop_of(struct run *in, struct curl_loop **ret, const char **error) {
        return launcher_http_loop(in->server->sv, ret, error);
}

/* A server signed in to starts with its user's token (a shared server's is the
 * administrator's). None with "auth": "oauth": it fails at once with the command to run,
 * and is not retried (-EPERM); none with "auto": it starts without; one being refreshed:
 * it is tried again after its backoff (-EAGAIN). */
static int check_signin(struct run *in, const struct server_config *c, uid_t uid, char **error) {
        struct oauth_tokens *tokens;
        int r;

        if (!remote_signs_in(&c->remote))
                return 0;
        tokens = supervisor_tokens(in->server->sv);
        if (!tokens)
                return -ENOMEM;
        r = oauth_tokens_ready(tokens, c, uid, error);
        if (r == -EACCES && c->remote.auth == REMOTE_AUTH_AUTO) {
                /* not signed in: it may need none; a Bearer challenge will say */
                free(*error);
                *error = NULL;
                return 0;
        }
        return r == 0 || r == -EAGAIN || r == -ENOMEM ? r : -EPERM;
}

/* After every run: their transfers were its. */
static void http_done(void *part) {
        curl_loop_free(part);
}

static int http_open_transport(struct run *in, const struct server_config *c, struct server_transport **ret,
                               char **error) {
        struct supervisor *sv = in->server->sv;
        struct curl_slist *headers = NULL;
        struct curl_loop *loop;
        struct http_run *run;
        const char *why = NULL;
        int r;

        r = curl_loop_of(in, &loop, &why);
        if (r < 0) {
                /* libcurl4 is a dependency of the package; a build elsewhere may lack it */
                text_error(error, "cannot load libcurl.so.4 (%s): install the package libcurl4", why ? why : strerror(-r));
                return r == -ENOENT ? -EPERM : r;
        }
        uid_t uid = in->server->owner.kind == OWNER_USER ? in->server->owner.uid : OAUTH_SHARED;

        r = check_signin(in, c, uid, error);
        if (r < 0)
                return r;
        r = build_headers(&c->remote, sv->credentials_dir, &headers, error);
        if (r < 0)
                return r;
        run = calloc(1, sizeof *run);
        if (!run) {
                curl_slist_free_all(headers);
                return -ENOMEM;
        }
        *run = (struct http_run){ .in = in, .token_uid = uid };
        run->t = transport_http_new(&(struct http_transport_params){
                .base = sv->base,
                .loop = loop,
                .log = sv->log,
                .name = c->name,
                .rc = &c->remote,
                .headers = headers,
                .max_message = sv->max_server_message_size,
                .finished = on_finished,
                .userdata = run,
                .bearer = remote_signs_in(&c->remote) ? bearer : NULL,
                .bearer_userdata = run,
        });
        if (!run->t) {
                free(run);
                return -ENOMEM;
        }
        in->launcher = run;
        *ret = run->t;
        return 0;
}

/* The session begins with the first message the connection sends (initialize). */
static int http_start(struct run *in, const struct server_config *c, char **env, const struct run_stdio *stdio,
                      char **error) {
        return 0;
}

static int http_terminate(struct run *in) {
        struct http_run *run = run_of(in);

        if (!run->t)
                return -ESRCH;
        transport_http_abort(run->t);
        return 0;
}

static void http_kill_wait(struct run *in) {
        /* nothing runs anywhere of ours: the transfers end with the connection */
}

/* No process: no exit code. A broken session is said by the cause (the HTTP status); a
 * refused credential asks for no restart. */
static void http_describe_end(const struct run *in, struct server_exit *ret) {
        const struct http_run *run = run_of(in);

        *ret = (struct server_exit){ .no_retry = run->end.no_retry };
        if (run->end.no_retry && (run->end.unauthorized || run->scope_signin) &&
            remote_signs_in(&in->server->config->remote) && in->server->sv->tokens) {
                _cleanup_free_ char *words = NULL;

                /* the token is in TOKEN_SIGNIN now: its words say which command to run */
                if (oauth_tokens_ready(in->server->sv->tokens, in->server->config, run->token_uid, &words) < 0 && words)
                        server_exit_set_reason(ret, words);
        }
}

static const char *http_describe(const struct run *in, char *buf, size_t size) {
        snprintf(buf, size, "%s", "an HTTP session");
        return buf;
}

static pid_t http_main_pid(const struct run *in) {
        return 0;
}

static void http_usage(const struct run *in, struct run_usage *ret) {
        *ret = (struct run_usage){ .memory_current = RUN_USAGE_UNKNOWN, .memory_peak = RUN_USAGE_UNKNOWN,
                                   .cpu_usec = RUN_USAGE_UNKNOWN, .tasks = RUN_USAGE_UNKNOWN };
}

/* A server reached by URL has no program to launch: its launcher keys are refused. */
static bool http_serves(const struct server_config *c) {
        return c->remote.url != NULL;
}

/* Never with its query: a credential may be there. */
static const char *http_url(const struct server_config *c) {
        return c->remote.shown_url ? c->remote.shown_url : "?";
}

/* Its stop closes the session (DELETE); terminate and kill end its transfers at once. */
static const struct run_words http_words = {
        .input = "session",
        .terminate = "ending its transfers",
        .terminated = "ending its transfers",
        .kill = "ending them again",
        .killed = "its transfers ended",
        .stuck = "",
};

static void http_free(struct run *in) {
        free(in->launcher);
        in->launcher = NULL;
}

const struct run_ops run_http_ops = {
        .name = "http",
        .kind = -1,
        .serves = http_serves,
        .words = &http_words,
        .target = http_url,
        .url = http_url,
        .done = http_done,
        .open_transport = http_open_transport,
        .start = http_start,
        .terminate = http_terminate,
        .kill = http_terminate,
        .kill_wait = http_kill_wait,
        .describe_end = http_describe_end,
        .describe = http_describe,
        .main_pid = http_main_pid,
        .usage = http_usage,
        .free = http_free,
};
