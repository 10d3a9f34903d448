/* The sign-in tokens of the servers reached by URL; see oauth-tokens.h. */
#include "oauth-tokens.h"

#include <errno.h>
#include <stdarg.h>
#include <event2/event.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credential.h"
#include "log.h"
#include "macro.h"
#include "oauth-fetch.h"
#include "oauth-key.h"
#include "oauth-metadata.h"
#include "oauth-seal.h"
#include "oauth-text.h"
#include "paths.h"
#include "remote-config.h"
#include "server-config.h"
#include "text.h"
#include "time-util.h"

/* A refresh that could not reach the server is tried again this much later. */
#define RETRY_SECONDS 10.0

struct token {
        struct oauth_tokens *t;
        char *server;
        uid_t uid;
        enum token_state state;
        struct oauth_grant grant;         /* TOKEN_VALID, TOKEN_REFRESHING */
        char *cause;                      /* TOKEN_SIGNIN: why; never a token or a body */
        bool refused_once;                /* a 401 was answered with a refresh: the next one needs a sign-in */
        struct remote_config net;         /* how the server and its authorization server are reached */
        char *client_secret;              /* a configured clientSecret's text, for refreshes */
        struct event *timer;              /* the refresh before expiry */
        struct oauth_fetch *fetch;        /* the refresh under way */
        char *resource_metadata;          /* named by the server's last 401, or NULL */
        bool unsaved;                     /* its grant waits for the key to be written */
        bool challenged;                  /* the server's 401 asked for a sign-in (Bearer) */
        char *wanted_scope;               /* a step-up's: what the next sign-in asks for, or NULL */
        char *left_issuer, *left_client;  /* the authorization server the server moved away from,
                                           * and the client it had there: never shown to another */
        bool issuer_checked;              /* this refusal's resource metadata was read (TOKEN_CHECKING) */
};

/* A revocation sent at a logout, not waited for by anyone. */
struct revocation {
        struct oauth_tokens *t;
        struct oauth_fetch *fetch;
        struct revocation *next;
};

/* The key that seals the files: asked on first need, loaded off the loop (oauth-key.h);
 * tokens needing it meanwhile wait (a file unread stays TOKEN_UNLOADED, a grant to write
 * is marked unsaved). A failure is told to those that waited; the next need asks again. */
enum key_state { KEY_UNASKED, KEY_LOADING, KEY_READY, KEY_FAILED };

struct oauth_tokens {
        struct event_base *base;
        const struct logger *log;
        char *credentials_dir;
        char *state_dir;
        oauth_loop_fn loop;
        void *userdata;
        uint8_t key[OAUTH_KEY_SIZE];
        enum key_state key_state;
        struct oauth_key_load *key_load;  /* KEY_LOADING: systemd-creds at work */
        struct token **tokens;
        size_t n_tokens;
        struct revocation *revocations;
};

static const char *const state_names[TOKEN_STATE_COUNT] = {
        [TOKEN_UNLOADED] = "not read yet",
        [TOKEN_NONE] = "not signed in",
        [TOKEN_VALID] = "signed in",
        [TOKEN_REFRESHING] = "refreshing",
        [TOKEN_SIGNIN] = "sign-in needed",
        [TOKEN_CHECKING] = "checking its authorization server",
};

void oauth_subject_text(uid_t uid, char *buf, size_t size) {
        if (uid == OAUTH_SHARED)
                snprintf(buf, size, "shared");
        else
                snprintf(buf, size, "uid %u", (unsigned)uid);
}

static void subject_log(struct token *k, int priority, const char *fmt, ...) _printf_(3, 4);

static void subject_log(struct token *k, int priority, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        struct log_subject subject = { .server = k->server };
        char who[64];
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        oauth_subject_text(k->uid, who, sizeof who);
        log_emit(k->t->log, priority, &subject, "sign-in (%s): %s", who, text);
}

/* The one place a token changes state; cause copied (SIGNIN's), logged by the caller. */
static void token_set_state(struct token *k, enum token_state state, const char *cause) {
        k->state = state;
        free(k->cause);
        k->cause = cause ? strdup(cause) : NULL;
        if (state != TOKEN_VALID && state != TOKEN_REFRESHING && state != TOKEN_CHECKING)
                oauth_grant_done(&k->grant);
        if (state != TOKEN_VALID && k->timer)
                evtimer_del(k->timer);
}

char *oauth_login_command(const char *server, uid_t uid) {
        char *text = NULL;

        if (uid == OAUTH_SHARED) {
                if (asprintf(&text, "mcpvisorctl login %s (as an administrator of mcpvisor)", server) < 0)
                        return NULL;
        } else {
                struct passwd pw, *found = NULL;
                char buf[1024];

                if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || !found)
                        found = NULL;
                if (found && asprintf(&text, "mcpvisorctl login %s (as user %s)", server, found->pw_name) < 0)
                        return NULL;
                if (!found && asprintf(&text, "mcpvisorctl login %s (as uid %u)", server, (unsigned)uid) < 0)
                        return NULL;
        }
        return text;
}

static char *token_path(struct oauth_tokens *t, const char *server, uid_t uid) {
        char *p = NULL;

        if (uid == OAUTH_SHARED) {
                if (asprintf(&p, "%s/tokens/%s.shared", t->state_dir, server) < 0)
                        return NULL;
        } else if (asprintf(&p, "%s/tokens/%s.%u", t->state_dir, server, (unsigned)uid) < 0) {
                return NULL;
        }
        return p;
}

/* What a sealed file is bound to: the server and the user. */
static char *token_aad(const char *server, uid_t uid) {
        char *a = NULL;

        if (asprintf(&a, "mcpvisor token/%s/%ld", server, uid == OAUTH_SHARED ? -1L : (long)uid) < 0)
                return NULL;
        return a;
}

static void key_set_state(struct oauth_tokens *t, enum key_state state) {
        t->key_state = state;
        if (state != KEY_LOADING) {
                oauth_key_load_free(t->key_load);
                t->key_load = NULL;
        }
}

static void on_key(const uint8_t *key, const char *error, void *userdata);

/* 0 with the key there; -EINPROGRESS while it is being loaded (on_key follows); or a
 * negative errno with *error. */
static int need_key(struct oauth_tokens *t, char **error) {
        int r;

        if (t->key_state == KEY_READY)
                return 0;
        if (t->key_state == KEY_LOADING)
                return -EINPROGRESS;
        r = oauth_key_load(t->base, t->credentials_dir, t->state_dir, t->key, on_key, t, &t->key_load, error);
        if (r < 0) {
                key_set_state(t, KEY_FAILED);
                return r;
        }
        key_set_state(t, r == 1 ? KEY_LOADING : KEY_READY);
        return r == 1 ? -EINPROGRESS : 0;
}

static int make_dirs(struct oauth_tokens *t) {
        _cleanup_free_ char *tokens = NULL;

        if (mkdir(t->state_dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (asprintf(&tokens, "%s/tokens", t->state_dir) < 0)
                return -ENOMEM;
        if (mkdir(tokens, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* The grant sealed into its file. */
static int save(struct token *k, char **error) {
        struct oauth_tokens *t = k->t;
        _cleanup_free_ char *path = token_path(t, k->server, k->uid), *aad = token_aad(k->server, k->uid);
        _cleanup_free_ uint8_t *sealed = NULL;
        json_object *o;
        size_t len = 0;
        int r;

        if (!path || !aad)
                return -ENOMEM;
        r = need_key(t, error);
        if (r == -EINPROGRESS) {
                k->unsaved = true; /* written once the key is there */
                return 0;
        }
        if (r < 0)
                return r;
        k->unsaved = false;
        r = make_dirs(t);
        if (r < 0) {
                text_error(error, "cannot make %s/tokens: %s", t->state_dir, strerror(-r));
                return r;
        }
        o = oauth_grant_to_json(&k->grant);
        {
                const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                r = oauth_seal(t->key, aad, text, strlen(text), &sealed, &len);
                explicit_bzero((char *)text, strlen(text));
        }
        json_object_put(o);
        if (r == 0)
                r = oauth_file_write(path, sealed, len);
        if (r < 0)
                text_error(error, "cannot keep the token in %s: %s", path, strerror(-r));
        return r;
}

static void arm_refresh(struct token *k);
static void load(struct token *k);

/* The key came (or not): the tokens that waited for it go on. */
static void on_key(const uint8_t *key, const char *error, void *userdata) {
        struct oauth_tokens *t = userdata;

        if (key) {
                memcpy(t->key, key, OAUTH_KEY_SIZE);
                key_set_state(t, KEY_READY);
        } else {
                log_emit(t->log, LOG_WARNING, NULL, "sign-in tokens: no key: %s", error);
                key_set_state(t, KEY_FAILED);
        }
        for (size_t i = 0; i < t->n_tokens; i++) {
                struct token *k = t->tokens[i];
                _cleanup_free_ char *save_error = NULL;

                if (k->state == TOKEN_UNLOADED && key)
                        load(k);
                else if (k->state == TOKEN_UNLOADED)
                        token_set_state(k, TOKEN_SIGNIN, "its stored token cannot be opened: no key");
                if (!k->unsaved || (k->state != TOKEN_VALID && k->state != TOKEN_REFRESHING))
                        continue;
                /* without a key it stays in memory alone: asking again at once would loop */
                if (!key || save(k, &save_error) < 0)
                        subject_log(k, LOG_WARNING, "signed in, but not kept: %s",
                                    save_error ? save_error : error ? error : "out of memory");
                k->unsaved = false;
        }
}

static void load(struct token *k) {
        struct oauth_tokens *t = k->t;
        _cleanup_free_ char *path = token_path(t, k->server, k->uid), *aad = token_aad(k->server, k->uid),
                            *error = NULL, *plain = NULL;
        _cleanup_free_ uint8_t *sealed = NULL;
        size_t len = 0;
        int r;

        if (!path || !aad)
                return;
        r = oauth_file_read(path, &sealed, &len);
        if (r == -ENOENT) {
                token_set_state(k, TOKEN_NONE, NULL);
                return;
        }
        if (r == 0)
                r = need_key(t, &error);
        if (r == -EINPROGRESS)
                return; /* TOKEN_UNLOADED until the key is there */
        if (r == 0)
                r = oauth_unseal(t->key, aad, sealed, len, &plain);
        if (r == 0) {
                r = oauth_grant_from_json(plain, &k->grant);
                explicit_bzero(plain, strlen(plain));
        }
        if (r < 0) {
                subject_log(k, LOG_WARNING, "its token file %s cannot be used: %s", path,
                            error ? error : r == -EBADMSG ? "not sealed with this key for this server and user" : strerror(-r));
                token_set_state(k, TOKEN_SIGNIN, "its stored token cannot be opened (another key, or a damaged file)");
                return;
        }
        token_set_state(k, TOKEN_VALID, NULL);
        arm_refresh(k);
}

static struct token *find(struct oauth_tokens *t, const char *server, uid_t uid) {
        for (size_t i = 0; i < t->n_tokens; i++)
                if (t->tokens[i]->uid == uid && strcmp(t->tokens[i]->server, server) == 0)
                        return t->tokens[i];
        return NULL;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata);

static void take_net(struct token *k, const struct server_config *c) {
        remote_config_done(&k->net);
        k->net.url = strdup(c->remote.url);
        k->net.proxy = c->remote.proxy ? strdup(c->remote.proxy) : NULL;
        k->net.ca_file = c->remote.ca_file ? strdup(c->remote.ca_file) : NULL;
        k->net.insecure = c->remote.insecure;
        k->net.connect_timeout = c->remote.connect_timeout;
        if (k->client_secret)
                explicit_bzero(k->client_secret, strlen(k->client_secret));
        free(k->client_secret);
        k->client_secret = NULL;
        if (c->remote.client_secret)
                (void)credential_read(k->t->credentials_dir ? k->t->credentials_dir : "/nonexistent", c->remote.client_secret,
                                      &k->client_secret);
}

/* The token of (c, uid), made (and its file read) on first need. NULL when out of memory. */
static struct token *get(struct oauth_tokens *t, const struct server_config *c, uid_t uid) {
        struct token *k = find(t, c->name, uid), **grown;

        if (k) {
                take_net(k, c); /* a reload may have changed how it is reached */
                return k;
        }
        grown = realloc(t->tokens, (t->n_tokens + 1) * sizeof *grown);
        if (!grown)
                return NULL;
        t->tokens = grown;
        k = calloc(1, sizeof *k);
        if (!k)
                return NULL;
        *k = (struct token){ .t = t, .uid = uid, .state = TOKEN_UNLOADED };
        remote_config_init(&k->net);
        k->server = strdup(c->name);
        k->timer = evtimer_new(t->base, on_timer, k);
        if (!k->server || !k->timer) {
                if (k->timer)
                        event_free(k->timer);
                free(k->server);
                free(k);
                return NULL;
        }
        t->tokens[t->n_tokens++] = k;
        take_net(k, c);
        load(k);
        return k;
}

static double now_real(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void arm_refresh(struct token *k) {
        double delay;

        if (!k->grant.refresh_token || !k->grant.lifetime || !k->grant.expires_at)
                return;
        /* at 80 % of its lifetime */
        delay = (double)k->grant.expires_at - 0.2 * (double)k->grant.lifetime - now_real();
        if (delay < 0)
                delay = 0;
        struct timeval tv = timeval_from_seconds(delay);
        evtimer_add(k->timer, &tv);
}

static void on_refreshed(struct oauth_fetch *f, long status, const char *body, size_t len, const char *error,
                         void *userdata);

/* The client's secret, registered or configured; NULL for a public client. */
static const char *client_secret(const struct token *k) {
        return k->grant.client_secret ? k->grant.client_secret : k->client_secret;
}

static bool secret_in_body(const struct token *k) {
        return client_secret(k) && text_equal(k->grant.auth_method, "client_secret_post");
}

/* "Basic ..." for a client whose secret goes that way (the default), else NULL. */
static char *basic_of(const struct token *k) {
        char *basic = NULL;

        if (client_secret(k) && !secret_in_body(k) && oauth_basic_credentials(k->grant.client_id, client_secret(k), &basic) < 0)
                return NULL;
        return basic;
}

static char *refresh_request(struct token *k) {
        return oauth_form(NULL, (const struct oauth_field[]){ { "grant_type", "refresh_token" },
                                                              { "refresh_token", k->grant.refresh_token },
                                                              { "client_id", k->grant.client_id },
                                                              { "resource", k->grant.resource },
                                                              { "client_secret", secret_in_body(k) ? client_secret(k) : NULL },
                                                              { NULL, NULL } });
}

/* A refresh starts: 0, or a negative errno (the token stays as it was). */
static int start_refresh(struct token *k) {
        struct curl_loop *loop;
        const char *why = NULL;
        char *body, *basic;
        int r;

        if (k->state != TOKEN_VALID || !k->grant.refresh_token)
                return -EINVAL;
        r = k->t->loop(k->t->userdata, &loop, &why);
        if (r < 0) {
                subject_log(k, LOG_WARNING, "cannot refresh: %s", why ? why : strerror(-r));
                return r;
        }
        body = refresh_request(k);
        basic = basic_of(k);
        r = body ? oauth_fetch_request(loop, &k->net,
                                       &(struct oauth_request){ .url = k->grant.token_endpoint,
                                                                .kind = OAUTH_BODY_FORM,
                                                                .body = body,
                                                                .authorization = basic },
                                       on_refreshed, k, &k->fetch)
                 : -ENOMEM;
        if (body)
                explicit_bzero(body, strlen(body));
        free(body);
        if (basic)
                explicit_bzero(basic, strlen(basic));
        free(basic);
        if (r < 0)
                return r;
        token_set_state(k, TOKEN_REFRESHING, NULL);
        return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct token *k = userdata;

        if (start_refresh(k) < 0 && k->state == TOKEN_VALID) {
                struct timeval tv = timeval_from_seconds(RETRY_SECONDS);
                evtimer_add(k->timer, &tv);
        }
}

static void refresh_refused(struct token *k, long status, const char *body) {
        _cleanup_free_ char *path = token_path(k->t, k->server, k->uid);
        char code[64], cause[160];
        const char *oauth_error = oauth_error_code(body, code, sizeof code);

        snprintf(cause, sizeof cause, "the authorization server refused the refresh (HTTP %ld%s%s)", status,
                 oauth_error ? ", " : "", oauth_error ? oauth_error : "");
        subject_log(k, LOG_WARNING, "%s: a sign-in is needed", cause);
        token_set_state(k, TOKEN_SIGNIN, cause);
        if (path)
                unlink(path); /* its refresh token is dead: nothing in it is of use */
}

static void judge_refresh(struct token *k, long status, const char *body);

static void on_refreshed(struct oauth_fetch *f, long status, const char *body, size_t len, const char *error,
                         void *userdata) {
        struct token *k = userdata;

        /* the body is the fetch's: freed once judged */
        k->fetch = NULL;
        token_set_state(k, TOKEN_VALID, NULL); /* the grant is still held: back to it, then judged */
        judge_refresh(k, status, body);
        oauth_fetch_free(f);
}

static void judge_refresh(struct token *k, long status, const char *body) {
        _cleanup_free_ char *save_error = NULL;
        const char *why = NULL;

        if (status == 400 || status == 401) {
                refresh_refused(k, status, body);
                return;
        }
        if (status != 200) {
                struct timeval tv = timeval_from_seconds(RETRY_SECONDS);

                subject_log(k, LOG_WARNING, "the refresh failed (%s%ld); trying again in %g s",
                            status ? "HTTP " : "", status, RETRY_SECONDS);
                evtimer_add(k->timer, &tv);
                return;
        }
        if (oauth_parse_token_answer(body, (int64_t)now_real(), &k->grant, &why) < 0) {
                subject_log(k, LOG_WARNING, "the refresh's answer is unusable: %s", why ? why : "out of memory");
                token_set_state(k, TOKEN_SIGNIN, why ? why : "the refresh's answer is unusable");
                return;
        }
        if (save(k, &save_error) < 0)
                subject_log(k, LOG_WARNING, "refreshed, but not kept: %s", save_error ? save_error : "out of memory");
        else
                subject_log(k, LOG_INFO, "token refreshed");
        token_set_state(k, TOKEN_VALID, NULL);
        arm_refresh(k);
}

static char *signin_words(struct token *k) {
        _cleanup_free_ char *command = oauth_login_command(k->server, k->uid);
        char *text = NULL;

        if (asprintf(&text, "sign-in needed: run %s%s%s", command ? command : "mcpvisorctl login",
                     k->cause ? "; " : "", k->cause ? k->cause : "") < 0)
                return NULL;
        return text;
}

int oauth_tokens_ready(struct oauth_tokens *t, const struct server_config *c, uid_t uid, char **error) {
        struct token *k = get(t, c, uid);

        if (!k)
                return -ENOMEM;
        if ((k->state == TOKEN_VALID || k->state == TOKEN_REFRESHING || k->state == TOKEN_CHECKING) &&
            !text_equal(k->grant.url, c->remote.url)) {
                /* the entry's "url" changed: that server's token is no token for this one */
                oauth_fetch_free(k->fetch);
                k->fetch = NULL;
                token_set_state(k, TOKEN_SIGNIN, "its token was given for another \"url\"");
                subject_log(k, LOG_NOTICE, "its \"url\" changed since the sign-in: a sign-in is needed");
        }
        if (k->state == TOKEN_VALID && k->grant.expires_at && (double)k->grant.expires_at <= now_real()) {
                if (start_refresh(k) < 0) {
                        token_set_state(k, TOKEN_SIGNIN, "its token expired, and it has no refresh token");
                        subject_log(k, LOG_NOTICE, "its token expired and cannot be refreshed: a sign-in is needed");
                }
        }
        switch (k->state) {
        case TOKEN_VALID:
                return 0;
        case TOKEN_REFRESHING:
                text_error(error, "waiting for its sign-in token's refresh");
                return -EAGAIN;
        case TOKEN_UNLOADED:
                text_error(error, "waiting for the key that opens its sign-in token (systemd-creds)");
                return -EAGAIN;
        case TOKEN_CHECKING:
                text_error(error, "reading its resource metadata again after a refusal");
                return -EAGAIN;
        default:
                free(*error);
                *error = signin_words(k);
                return -EACCES;
        }
}

const char *oauth_tokens_bearer(struct oauth_tokens *t, const char *server, uid_t uid, const char *url) {
        struct token *k = find(t, server, uid);

        if (!k || (k->state != TOKEN_VALID && k->state != TOKEN_REFRESHING && k->state != TOKEN_CHECKING) ||
            !text_equal(k->grant.url, url))
                return NULL;
        return k->grant.access_token;
}

/* A refusal judged (its authorization server is still the token's): refreshed once, then
 * a sign-in. */
static bool refuse(struct token *k) {
        if (k->refused_once || !k->grant.refresh_token) {
                subject_log(k, LOG_WARNING, "the server refused its token%s: a sign-in is needed",
                            k->refused_once ? " again after a refresh" : ", and there is no refresh token");
                token_set_state(k, TOKEN_SIGNIN,
                                k->refused_once ? "the server refused its token again after a refresh"
                                                : "the server refused its token, and there is no refresh token");
                return false;
        }
        k->refused_once = true;
        evtimer_del(k->timer);
        if (start_refresh(k) < 0) {
                token_set_state(k, TOKEN_SIGNIN, "the server refused its token, and the refresh could not start");
                return false;
        }
        subject_log(k, LOG_INFO, "the server refused its token: refreshing it once");
        return true;
}

bool oauth_tokens_child_exited(struct oauth_tokens *t, pid_t pid) {
        return t && oauth_key_load_reap(t->key_load, pid);
}

bool oauth_tokens_signin_needed(struct oauth_tokens *t, const struct server_config *c, uid_t uid) {
        struct token *k = get(t, c, uid);

        return k && (k->state == TOKEN_NONE || k->state == TOKEN_SIGNIN) &&
               (c->remote.auth == REMOTE_AUTH_OAUTH || k->challenged);
}

/* The token and the client it was issued to are its authorization server's alone
 * (SEP-2352): a server that names another one now needs a sign-in there, with a client
 * of its own, and neither the refresh token nor the client id go to either. */
static void issuer_moved(struct token *k, const char *body) {
        _cleanup_free_ char *path = token_path(k->t, k->server, k->uid), *now = NULL, *scopes = NULL, *resource = NULL,
                            *was = remote_url_shown(k->grant.issuer), *shown = NULL;
        const char *why = NULL;
        char cause[600];

        /* the URLs shown without a query: the metadata is the server's to write */
        if (oauth_parse_resource_metadata(body, k->net.url, &now, &scopes, &resource, &why) == 0 && now)
                shown = remote_url_shown(now);
        if (!shown)
                snprintf(cause, sizeof cause, "its authorization server is no longer %s", was ? was : "the one it signed in at");
        else
                snprintf(cause, sizeof cause,
                         "its authorization server changed from %s to %s: the sign-in there registers a client anew",
                         was ? was : "the one it signed in at", shown);
        subject_log(k, LOG_WARNING, "%s; its token is dropped: a sign-in is needed", cause);
        free(k->left_issuer);
        free(k->left_client);
        k->left_issuer = k->grant.issuer ? strdup(k->grant.issuer) : NULL;
        k->left_client = k->grant.client_id ? strdup(k->grant.client_id) : NULL;
        token_set_state(k, TOKEN_SIGNIN, cause);
        if (path)
                unlink(path);
}

static void on_metadata_read(struct oauth_fetch *f, long status, const char *body, size_t len, const char *error,
                             void *userdata) {
        struct token *k = userdata;
        int named = status == 200 ? oauth_metadata_names_issuer(body, k->grant.issuer) : -EBADMSG;

        k->fetch = NULL;
        token_set_state(k, TOKEN_VALID, NULL); /* the grant is still held: back to it, then judged */
        if (named == 0)
                issuer_moved(k, body);
        else
                (void)refuse(k); /* the restart that follows waits for the refresh, or finds a sign-in needed */
        oauth_fetch_free(f);
}

/* The refusal's resource metadata read before anything is sent to the authorization server
 * the token came from: 0 when under way. */
static int check_issuer(struct token *k) {
        struct curl_loop *loop;
        const char *why = NULL;
        int r;

        if (!k->resource_metadata || !k->grant.issuer || k->issuer_checked)
                return -EINVAL;
        r = k->t->loop(k->t->userdata, &loop, &why);
        if (r == 0)
                r = oauth_fetch_start(loop, &k->net, k->resource_metadata, OAUTH_BODY_NONE, NULL, on_metadata_read, k, &k->fetch);
        if (r < 0)
                return r;
        k->issuer_checked = true;
        evtimer_del(k->timer);
        token_set_state(k, TOKEN_CHECKING, NULL);
        return 0;
}

bool oauth_tokens_refused(struct oauth_tokens *t, const struct server_config *c, uid_t uid) {
        struct token *k = get(t, c, uid);

        if (!k)
                return false;
        if (k->state == TOKEN_REFRESHING || k->state == TOKEN_CHECKING)
                return true;
        if (k->state != TOKEN_VALID)
                return false;
        if (check_issuer(k) == 0)
                return true;
        return refuse(k);
}

bool oauth_tokens_scope_refused(struct oauth_tokens *t, const struct server_config *c, uid_t uid, const char *scope) {
        struct token *k = get(t, c, uid);
        _cleanup_free_ char *wanted = NULL;
        char cause[600];

        if (!k || (k->state != TOKEN_VALID && k->state != TOKEN_REFRESHING) || !scope || !*scope)
                return false;
        if (oauth_scope_covers(k->grant.scope, scope)) {
                /* asked for already: a sign-in asking again would be refused again (no loop) */
                subject_log(k, LOG_WARNING, "the server refused its token for scope %s, which its sign-in asked for: not retried",
                            scope);
                return false;
        }
        wanted = oauth_scope_union(k->grant.scope, scope);
        if (!wanted)
                return false;
        snprintf(cause, sizeof cause, "the server needs scope %s (asked for: %s)", scope,
                 k->grant.scope ? k->grant.scope : "none");
        subject_log(k, LOG_WARNING, "%s: a sign-in asking for %s is needed", cause, wanted);
        oauth_fetch_free(k->fetch);
        k->fetch = NULL;
        token_set_state(k, TOKEN_SIGNIN, cause);
        free(k->wanted_scope);
        k->wanted_scope = TAKE_PTR(wanted);
        return true;
}

void oauth_tokens_left(struct oauth_tokens *t, const struct server_config *c, uid_t uid, const char **issuer,
                       const char **client_id) {
        struct token *k = get(t, c, uid);

        *issuer = k ? k->left_issuer : NULL;
        *client_id = k ? k->left_client : NULL;
}

const char *oauth_tokens_wanted_scope(struct oauth_tokens *t, const struct server_config *c, uid_t uid) {
        struct token *k = get(t, c, uid);

        return k ? k->wanted_scope : NULL;
}

bool oauth_tokens_have(struct oauth_tokens *t, const struct server_config *c, uid_t uid) {
        struct token *k = get(t, c, uid);

        return k && (k->state == TOKEN_VALID || k->state == TOKEN_REFRESHING || k->state == TOKEN_CHECKING);
}

void oauth_tokens_note_metadata(struct oauth_tokens *t, const struct server_config *c, uid_t uid, const char *url) {
        struct token *k = get(t, c, uid);
        char *copy = url && *url ? strdup(url) : NULL;

        if (!k) {
                free(copy);
                return;
        }
        free(k->resource_metadata);
        k->resource_metadata = copy;
        k->challenged = true;
}

const char *oauth_tokens_metadata(struct oauth_tokens *t, const struct server_config *c, uid_t uid) {
        struct token *k = get(t, c, uid);

        return k ? k->resource_metadata : NULL;
}

int oauth_tokens_put(struct oauth_tokens *t, const struct server_config *c, uid_t uid, struct oauth_grant *grant,
                     char **error) {
        struct token *k = get(t, c, uid);
        int r;

        if (!k) {
                oauth_grant_done(grant);
                return -ENOMEM;
        }
        oauth_fetch_free(k->fetch);
        k->fetch = NULL;
        token_set_state(k, TOKEN_NONE, NULL);
        k->grant = *grant;
        *grant = (struct oauth_grant){ 0 };
        r = save(k, error);
        if (r < 0) {
                token_set_state(k, TOKEN_NONE, NULL);
                return r;
        }
        k->refused_once = false;
        k->issuer_checked = false;
        free(k->wanted_scope);
        k->wanted_scope = NULL; /* asked for now: the grant's scope says so from here on */
        token_set_state(k, TOKEN_VALID, NULL);
        arm_refresh(k);
        subject_log(k, LOG_NOTICE, "signed in");
        return 0;
}

static void on_revoked(struct oauth_fetch *f, long status, const char *body, size_t len, const char *error,
                       void *userdata) {
        struct revocation *v = userdata, **p;

        for (p = &v->t->revocations; *p && *p != v; p = &(*p)->next)
                ;
        if (*p)
                *p = v->next;
        if (status != 200)
                log_emit(v->t->log, LOG_WARNING, NULL, "sign-in: the token's revocation failed (%s%ld)",
                         status ? "HTTP " : "", status);
        oauth_fetch_free(v->fetch);
        free(v);
}

static void revoke_token(struct token *k) {
        const char *token = k->grant.refresh_token ? k->grant.refresh_token : k->grant.access_token;
        struct revocation *v;
        struct curl_loop *loop;
        const char *why = NULL;
        char *body, *basic;

        if (!k->grant.revocation_endpoint || !token || k->t->loop(k->t->userdata, &loop, &why) < 0)
                return;
        body = oauth_form(NULL, (const struct oauth_field[]){
                { "token", token },
                { "token_type_hint", k->grant.refresh_token ? "refresh_token" : "access_token" },
                { "client_id", k->grant.client_id },
                { "client_secret", secret_in_body(k) ? client_secret(k) : NULL },
                { NULL, NULL } });
        if (!body)
                return;
        v = calloc(1, sizeof *v);
        basic = basic_of(k);
        if (v && oauth_fetch_request(loop, &k->net,
                                     &(struct oauth_request){ .url = k->grant.revocation_endpoint,
                                                              .kind = OAUTH_BODY_FORM,
                                                              .body = body,
                                                              .authorization = basic },
                                     on_revoked, v, &v->fetch) == 0) {
                v->t = k->t;
                v->next = k->t->revocations;
                k->t->revocations = v;
        } else {
                free(v);
        }
        explicit_bzero(body, strlen(body));
        free(body);
        if (basic)
                explicit_bzero(basic, strlen(basic));
        free(basic);
}

int oauth_tokens_forget(struct oauth_tokens *t, const struct server_config *c, uid_t uid) {
        struct token *k = get(t, c, uid);
        _cleanup_free_ char *path = NULL;
        bool had;

        if (!k)
                return -ENOMEM;
        path = token_path(t, k->server, k->uid);
        had = path && unlink(path) == 0;
        if (k->state == TOKEN_VALID || k->state == TOKEN_REFRESHING || k->state == TOKEN_CHECKING) {
                had = true;
                revoke_token(k);
        }
        oauth_fetch_free(k->fetch);
        k->fetch = NULL;
        k->refused_once = false;
        free(k->wanted_scope);
        k->wanted_scope = NULL;
        token_set_state(k, TOKEN_NONE, NULL);
        if (had)
                subject_log(k, LOG_NOTICE, "signed out");
        return had ? 0 : -ENOENT;
}

const char *oauth_tokens_state_text(struct oauth_tokens *t, const struct server_config *c, uid_t uid,
                                    const char **cause) {
        struct token *k = get(t, c, uid);

        *cause = k && k->cause ? k->cause : "";
        return k ? state_names[k->state] : "unknown";
}

int oauth_tokens_new(const struct oauth_tokens_params *p, struct oauth_tokens **ret) {
        struct oauth_tokens *t = calloc(1, sizeof *t);

        if (!t)
                return -ENOMEM;
        t->base = p->base;
        t->log = p->log;
        t->loop = p->loop;
        t->userdata = p->userdata;
        t->credentials_dir = p->credentials_dir ? strdup(p->credentials_dir) : NULL;
        t->state_dir = p->state_dir ? strdup(p->state_dir) : path_state_directory();
        if (!t->state_dir || (p->credentials_dir && !t->credentials_dir)) {
                oauth_tokens_free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

static void token_free(struct token *k) {
        oauth_fetch_free(k->fetch);
        oauth_grant_done(&k->grant);
        if (k->timer)
                event_free(k->timer);
        remote_config_done(&k->net);
        if (k->client_secret)
                explicit_bzero(k->client_secret, strlen(k->client_secret));
        free(k->client_secret);
        free(k->cause);
        free(k->resource_metadata);
        free(k->wanted_scope);
        free(k->left_issuer);
        free(k->left_client);
        free(k->server);
        free(k);
}

void oauth_tokens_free(struct oauth_tokens *t) {
        if (!t)
                return;
        for (size_t i = 0; i < t->n_tokens; i++)
                token_free(t->tokens[i]);
        free(t->tokens);
        while (t->revocations) {
                struct revocation *v = t->revocations;
                t->revocations = v->next;
                oauth_fetch_free(v->fetch);
                free(v);
        }
        oauth_key_load_free(t->key_load);
        explicit_bzero(t->key, sizeof t->key);
        free(t->credentials_dir);
        free(t->state_dir);
        free(t);
}
