/* "login", "loginFinish" and "logout" on the control socket: mcpvisorctl's side of a
 * sign-in to a server reached by URL with "auth": "oauth" (oauth-signin.h).
 *
 *   login {name, redirectUri}        discovery, registration; answered with {url} to open
 *   loginFinish {name, code, state, iss} | {name, error}
 *                                    the redirect's parameters: the code is exchanged (the
 *                                    PKCE verifier never leaves the daemon) and the token
 *                                    kept (oauth-tokens.h); answered once it is
 *   logout {name}                    the token forgotten, revoked where it can be
 *   clientMetadata {name}            {document}: the Client ID Metadata Document to publish
 *                                    at the server's "clientMetadataUrl"
 *
 * A login belongs to the control connection that began it (its peer's uid is whose token
 * it makes: a per-user server's user, or, for a shared server, the token of all) and ends
 * with it. After a sign-in the server starts again with the token: a shared one is
 * restarted, a per-user one's instance of that user stopped, made again on its next need. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "credential.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "launcher.h"
#include "log.h"
#include "macro.h"
#include "methods.h"
#include "oauth-metadata.h"
#include "oauth-signin.h"
#include "oauth-tokens.h"
#include "pool.h"
#include "server-config.h"
#include "supervisor.h"
#include "text.h"

#define CONTROL_LOGIN_FAILED (-32000)

struct control_login {
        struct daemon *d;
        struct client *c;              /* the control connection that began it */
        json_object *id;               /* its request waiting for an answer, or NULL */
        char *server;
        uid_t uid;                     /* whose token: OAUTH_SHARED for a shared server */
        struct oauth_signin *signin;
        struct control_login *next;
};

static void login_free(struct control_login *l) {
        struct control_login **p;

        for (p = &l->d->logins; *p && *p != l; p = &(*p)->next)
                ;
        if (*p)
                *p = l->next;
        oauth_signin_free(l->signin);
        json_object_put(l->id);
        free(l->server);
        free(l);
}

void control_login_client_gone(struct daemon *d, struct client *c) {
        struct control_login *l = d->logins, *next;

        for (; l; l = next) {
                next = l->next;
                if (l->c == c)
                        login_free(l);
        }
}

static struct control_login *find_login(struct daemon *d, struct client *c, const char *server) {
        for (struct control_login *l = d->logins; l; l = l->next)
                if (l->c == c && strcmp(l->server, server) == 0)
                        return l;
        return NULL;
}

static void answer_error(struct control_login *l, const char *message) {
        json_object *id = TAKE_PTR(l->id);

        if (id) {
                client_reply_error(l->c, id, CONTROL_LOGIN_FAILED, message, NULL);
                json_object_put(id);
        }
}

/* The configuration of the server named in params, and whose token a login by c makes.
 * NULL, answered, when there is none that signs in. */
static const struct server_config *signin_target(struct client *c, struct jsonrpc_msg *m, uid_t *ret_uid,
                                                 const char **ret_name) {
        struct supervisor *sv = daemon_supervisor(c->daemon);
        const struct server_config *config = NULL;
        json_object *v;
        const char *name;
        struct server *s;
        struct pool *p;

        if (!method_params_object(c, m, false))
                return NULL;
        if (!json_object_object_get_ex(m->params, "name", &v) || !json_object_is_type(v, json_type_string)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"name\" (a string) is required", NULL);
                return NULL;
        }
        name = json_object_get_string(v);
        *ret_uid = OAUTH_SHARED;
        if ((p = supervisor_find_pool(sv, name))) {
                config = p->config;
                if (config->instances == INSTANCES_PER_USER)
                        *ret_uid = client_principal(c)->uid;
        } else if ((s = control_named_server(c, m))) {
                config = s->config;
        } else {
                return NULL; /* answered */
        }
        if (!remote_signs_in(&config->remote)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   config->remote.url
                                           ? "this server does not sign in: it has \"auth\": \"none\" or an Authorization header"
                                           : "this server does not sign in: only a server reached by \"url\" does",
                                   NULL);
                return NULL;
        }
        *ret_name = config->name;
        return config;
}

static void on_url(struct oauth_signin *s, const char *url, const char *error, void *userdata) {
        struct control_login *l = userdata;
        json_object *result, *id;

        if (!url) {
                char message[400];

                client_log(l->c, LOG_NOTICE, "sign-in to %s: %s", l->server, error);
                snprintf(message, sizeof message, "cannot sign in to %s: %s", l->server, error);
                answer_error(l, message);
                login_free(l);
                return;
        }
        client_log(l->c, LOG_INFO, "sign-in to %s: waiting for the browser's redirect", l->server);
        id = TAKE_PTR(l->id);
        if (!id)
                return;
        result = json_object_new_object();
        json_object_object_add(result, "name", json_object_new_string(l->server));
        json_object_object_add(result, "url", json_object_new_string(url));
        client_reply_result(l->c, id, result);
        json_object_put(id);
}

/* The server starts again with its new token, or without one after a logout (which
 * leaves it needing a sign-in): a shared one restarts, a per-user one's instance of that
 * user stops, made again on its next need. */
void control_login_start_again(struct daemon *d, const char *server, uid_t uid, const char *detail) {
        struct supervisor *sv = daemon_supervisor(d);
        struct server *s;
        struct pool *p;

        if ((p = supervisor_find_pool(sv, server))) {
                struct server_owner owner = { .kind = OWNER_USER, .uid = uid };

                pool_stop(p, uid == OAUTH_SHARED ? NULL : &owner, detail);
        } else if ((s = supervisor_find(sv, server)) && !s->config->disabled) {
                server_handle(s, SERVER_EV_RESTART, detail);
        }
}

static void on_finished(struct oauth_signin *s, struct oauth_grant *grant, const char *error, void *userdata) {
        struct control_login *l = userdata;
        struct supervisor *sv = daemon_supervisor(l->d);
        struct oauth_tokens *tokens = supervisor_tokens(sv);
        const struct server_config *config = NULL;
        _cleanup_free_ char *store_error = NULL;
        struct server *srv;
        struct pool *p;
        char message[600];
        json_object *result, *id;

        if (!grant) {
                client_log(l->c, LOG_NOTICE, "sign-in to %s failed: %s", l->server, error);
                snprintf(message, sizeof message, "sign-in to %s failed: %s", l->server, error);
                answer_error(l, message);
                login_free(l);
                return;
        }
        if ((p = supervisor_find_pool(sv, l->server)))
                config = p->config;
        else if ((srv = supervisor_find(sv, l->server)))
                config = srv->config;
        if (!config || !remote_signs_in(&config->remote) || !tokens ||
            oauth_tokens_put(tokens, config, l->uid, grant, &store_error) < 0) {
                oauth_grant_done(grant);
                free(grant);
                snprintf(message, sizeof message, "signed in to %s, but the token cannot be kept: %s", l->server,
                         !config ? "the server is no longer configured" : store_error ? store_error : "out of memory");
                answer_error(l, message);
                login_free(l);
                return;
        }
        free(grant);
        snprintf(message, sizeof message, "signed in by uid %u (mcpvisorctl login)", (unsigned)client_principal(l->c)->uid);
        control_login_start_again(l->d, l->server, l->uid, message);
        id = TAKE_PTR(l->id);
        if (id) {
                result = json_object_new_object();
                json_object_object_add(result, "name", json_object_new_string(l->server));
                json_object_object_add(result, "signedIn", json_object_new_boolean(true));
                client_reply_result(l->c, id, result);
                json_object_put(id);
        }
        login_free(l);
}

static const char *string_param(struct jsonrpc_msg *m, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(m->params, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static void login(struct client *c, struct jsonrpc_msg *m) {
        struct daemon *d = c->daemon;
        const char *name = NULL, *redirect;
        _cleanup_free_ char *secret = NULL;
        const struct server_config *config;
        struct control_login *l, *old;
        struct oauth_tokens *tokens = supervisor_tokens(daemon_supervisor(d));
        struct curl_loop *loop;
        const char *why = NULL, *left_issuer = NULL, *left_client = NULL;
        uid_t uid;
        int r;

        config = signin_target(c, m, &uid, &name);
        if (!config)
                return;
        redirect = string_param(m, "redirectUri");
        if (!redirect) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"redirectUri\" (http://127.0.0.1:PORT/..., where mcpvisorctl listens) is required",
                                   NULL);
                return;
        }
        if (launcher_http_loop(daemon_supervisor(d), &loop, &why) < 0) {
                client_reply_error(c, m->id, CONTROL_LOGIN_FAILED, why ? why : "cannot load libcurl", NULL);
                return;
        }
        if (config->remote.client_secret &&
            credential_read(daemon_supervisor(d)->credentials_dir ? daemon_supervisor(d)->credentials_dir : "/nonexistent",
                            config->remote.client_secret, &secret) < 0) {
                client_reply_error(c, m->id, CONTROL_LOGIN_FAILED,
                                   "cannot read the credential of \"clientSecret\" (check LoadCredential= in mcpvisor.service)",
                                   NULL);
                return;
        }
        old = find_login(d, c, name);
        if (old) {
                answer_error(old, "superseded by another login on this connection");
                login_free(old);
        }
        l = calloc(1, sizeof *l);
        if (!l || !(l->server = strdup(name))) {
                free(l);
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
                return;
        }
        l->d = d;
        l->c = c;
        l->uid = uid;
        l->id = json_object_get(m->id);
        l->next = d->logins;
        d->logins = l;
        client_log(c, LOG_INFO, "sign-in to %s%s: discovering its authorization server", name,
                   uid == OAUTH_SHARED ? " (shared)" : "");
        if (tokens)
                oauth_tokens_left(tokens, config, uid, &left_issuer, &left_client);
        r = oauth_signin_begin(&(struct oauth_signin_params){ .loop = loop,
                                                              .rc = &config->remote,
                                                              .redirect_uri = redirect,
                                                              .client_secret = secret,
                                                              .resource_metadata = tokens ? oauth_tokens_metadata(tokens, config, uid)
                                                                                          : NULL,
                                                              .scope = tokens ? oauth_tokens_wanted_scope(tokens, config, uid) : NULL,
                                                              .left_issuer = left_issuer,
                                                              .left_client_id = left_client,
                                                              .url_ready = on_url,
                                                              .finished = on_finished,
                                                              .userdata = l },
                               &l->signin);
        if (secret)
                explicit_bzero(secret, strlen(secret));
        if (r < 0) {
                answer_error(l, r == -EINVAL ? "\"redirectUri\" must be http://127.0.0.1:PORT/... or http://[::1]:PORT/..."
                                             : "out of memory");
                login_free(l);
        }
}

/* An error code of RFC 6749's characters, else a word of our own: what the browser was
 * redirected with is shown, never more. */
static const char *error_code(const char *e) {
        return e && *e && strlen(e) < 64 && strspn(e, "abcdefghijklmnopqrstuvwxyz_") == strlen(e) ? e : "an error";
}

static void login_finish(struct client *c, struct jsonrpc_msg *m) {
        const char *name, *error;
        struct control_login *l;
        char message[200];

        if (!method_params_object(c, m, false))
                return;
        name = string_param(m, "name");
        l = name ? find_login(c->daemon, c, name) : NULL;
        if (!l || oauth_signin_state(l->signin) != SIGNIN_WAIT_CODE || l->id) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "no login of this server is waiting on this connection",
                                   NULL);
                return;
        }
        l->id = json_object_get(m->id);
        error = string_param(m, "error");
        if (error) {
                snprintf(message, sizeof message, "sign-in to %s refused by the authorization server: %s", l->server,
                         error_code(error));
                answer_error(l, message);
                login_free(l);
                return;
        }
        oauth_signin_complete(l->signin, string_param(m, "code"), string_param(m, "state"), string_param(m, "iss"));
}

static void logout(struct client *c, struct jsonrpc_msg *m) {
        struct oauth_tokens *tokens = supervisor_tokens(daemon_supervisor(c->daemon));
        const struct server_config *config;
        const char *name = NULL;
        json_object *result;
        uid_t uid;
        int r;

        config = signin_target(c, m, &uid, &name);
        if (!config)
                return;
        if (!tokens) {
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
                return;
        }
        r = oauth_tokens_forget(tokens, config, uid);
        result = json_object_new_object();
        json_object_object_add(result, "name", json_object_new_string(name));
        json_object_object_add(result, "signedOut", json_object_new_boolean(r == 0));
        if (r == 0) {
                char detail[96];

                snprintf(detail, sizeof detail, "signed out by uid %u (mcpvisorctl logout)", (unsigned)client_principal(c)->uid);
                control_login_start_again(c->daemon, json_object_get_string(json_object_object_get(result, "name")), uid, detail);
        }
        client_reply_result(c, m->id, result);
}

/* The Client ID Metadata Document for the server's "clientMetadataUrl": what its
 * administrator publishes there. Its redirect URI is mcpvisorctl login's without a port:
 * an authorization server takes any port on a loopback IP redirect (RFC 8252 section 7.3). */
static void client_metadata(struct client *c, struct jsonrpc_msg *m) {
        const struct server_config *config;
        const char *name;
        json_object *result;
        uid_t uid;

        config = signin_target(c, m, &uid, &name);
        if (!config)
                return;
        if (!config->remote.client_metadata_url) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "this server has no \"clientMetadataUrl\": it signs in with \"clientId\" or a registration",
                                   NULL);
                return;
        }
        result = json_object_new_object();
        json_object_object_add(result, "document",
                               oauth_client_metadata(config->remote.client_metadata_url, "http://127.0.0.1/callback", NULL));
        client_send(c, jsonrpc_result(m->id, result));
}

const struct method control_login = CONTROL_METHOD("login", login);
const struct method control_login_finish = CONTROL_METHOD("loginFinish", login_finish);
const struct method control_logout = CONTROL_METHOD("logout", logout);
const struct method control_client_metadata = CONTROL_METHOD("clientMetadata", client_metadata);
