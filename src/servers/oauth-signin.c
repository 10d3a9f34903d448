/* One sign-in, discovery to tokens; see oauth-signin.h. */
#include "oauth-signin.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "macro.h"
#include "oauth-fetch.h"
#include "oauth-metadata.h"
#include "oauth-text.h"
#include "remote-config.h"

struct oauth_signin {
        enum oauth_signin_state state;
        struct curl_loop *loop;
        struct remote_config net;        /* the url and how it is reached, copied */
        char *scope;                     /* configured scopes, space-separated; NULL: the metadata's */
        bool scope_configured;
        char *resource;                  /* RFC 8707's: the resource metadata's identifier, else the URL */
        char *auth_method;               /* how the client authenticates at the token endpoint; NULL: none */
        char *client_id;                 /* configured, or registered */
        char *client_secret;             /* configured (its text), or registered; NULL: a public client */
        bool client_registered;
        char *metadata_url;              /* "clientMetadataUrl": the client_id where the server takes it */
        char *left_issuer, *left_client; /* a client bound to an authorization server the server left */
        bool issuer_from_origin;         /* no resource metadata: the 2025-03-26 way */
        char *redirect_uri;
        char **urls;                     /* the metadata URLs to try, in order */
        size_t next_url;
        char *issuer;
        struct oauth_server_meta meta;
        char *verifier, *state_text;
        struct oauth_fetch *fetch;
        oauth_signin_url_fn url_ready;
        oauth_signin_finished_fn finished;
        void *userdata;
};

enum oauth_signin_state oauth_signin_state(const struct oauth_signin *s) {
        return s->state;
}

static void set_state(struct oauth_signin *s, enum oauth_signin_state state) {
        s->state = state;
}

static void wipe_free(char *p) {
        if (p)
                explicit_bzero(p, strlen(p));
        free(p);
}

/* The sign-in ends without tokens: the caller hears once, by the callback of the stage. */
static void fail(struct oauth_signin *s, const char *why) {
        bool waiting_url = s->state < SIGNIN_WAIT_CODE;

        set_state(s, SIGNIN_FAILED);
        if (waiting_url)
                s->url_ready(s, NULL, why, s->userdata);
        else
                s->finished(s, NULL, why, s->userdata);
}

static void fail_status(struct oauth_signin *s, const char *what, long status, const char *error, const char *body) {
        char words[256], code[64];
        const char *oauth_error = status ? oauth_error_code(body, code, sizeof code) : NULL;

        if (!status)
                snprintf(words, sizeof words, "%s: %s", what, error ? error : "no answer");
        else if (oauth_error)
                snprintf(words, sizeof words, "%s: HTTP %ld, %s", what, status, oauth_error);
        else
                snprintf(words, sizeof words, "%s: HTTP %ld", what, status);
        fail(s, words);
}

static void on_fetched(struct oauth_fetch *f, long status, const char *body, size_t len, const char *error,
                       void *userdata);
static void try_next_url(struct oauth_signin *s);
static void choose_auth_method(struct oauth_signin *s);

static int fetch_request(struct oauth_signin *s, const struct oauth_request *req) {
        oauth_fetch_free(s->fetch);
        s->fetch = NULL;
        return oauth_fetch_request(s->loop, &s->net, req, on_fetched, s, &s->fetch);
}

static int fetch(struct oauth_signin *s, const char *url, enum oauth_body kind, const char *body) {
        return fetch_request(s, &(struct oauth_request){ .url = url, .kind = kind, .body = body });
}

static void try_next_url(struct oauth_signin *s);

static void start_server_meta(struct oauth_signin *s) {
        oauth_strv_free(s->urls);
        s->urls = NULL;
        s->next_url = 0;
        set_state(s, SIGNIN_SERVER_META);
        if (oauth_server_metadata_urls(s->issuer, &s->urls) < 0) {
                fail(s, "the authorization server is no https URL (or http on loopback)");
                return;
        }
        try_next_url(s);
}

/* No resource metadata anywhere: the server's origin is its authorization server (the
 * 2025-03-26 specification's servers). */
static void origin_as_issuer(struct oauth_signin *s) {
        const char *host = strstr(s->net.url, "://");
        size_t len = host ? (size_t)(host + 3 - s->net.url) + strcspn(host + 3, "/?#") : 0;

        free(s->issuer);
        s->issuer = len ? strndup(s->net.url, len) : NULL;
        if (!s->issuer) {
                fail(s, "out of memory");
                return;
        }
        s->issuer_from_origin = true;
        start_server_meta(s);
}

static void server_meta_ready(struct oauth_signin *s);

/* Neither resource nor server metadata: the 2025-03-26 specification's default endpoints
 * at the server's origin (/authorize, /token, /register). */
static void default_endpoints(struct oauth_signin *s) {
        oauth_server_meta_done(&s->meta);
        s->meta.issuer = strdup(s->issuer);
        if (asprintf(&s->meta.authorization_endpoint, "%s/authorize", s->issuer) < 0)
                s->meta.authorization_endpoint = NULL;
        if (asprintf(&s->meta.token_endpoint, "%s/token", s->issuer) < 0)
                s->meta.token_endpoint = NULL;
        if (asprintf(&s->meta.registration_endpoint, "%s/register", s->issuer) < 0)
                s->meta.registration_endpoint = NULL;
        s->meta.auth_basic = true;
        if (!s->meta.issuer || !s->meta.authorization_endpoint || !s->meta.token_endpoint || !s->meta.registration_endpoint) {
                fail(s, "out of memory");
                return;
        }
        server_meta_ready(s);
}

static void try_next_url(struct oauth_signin *s) {
        const char *url = s->urls ? s->urls[s->next_url] : NULL;

        if (!url) {
                if (s->state == SIGNIN_RESOURCE_META)
                        origin_as_issuer(s);
                else if (s->issuer_from_origin)
                        default_endpoints(s);
                else
                        fail(s, "no authorization server metadata at its well-known URLs (RFC 8414, OpenID Connect)");
                return;
        }
        s->next_url++;
        if (fetch(s, url, OAUTH_BODY_NONE, NULL) < 0)
                fail(s, "out of memory");
}

static void resource_meta_read(struct oauth_signin *s, const char *body) {
        _cleanup_free_ char *scopes = NULL, *resource = NULL;
        const char *why = NULL;

        free(s->issuer);
        s->issuer = NULL;
        if (oauth_parse_resource_metadata(body, s->net.url, &s->issuer, &scopes, &resource, &why) < 0) {
                fail(s, why ? why : "out of memory");
                return;
        }
        free(s->resource);
        s->resource = TAKE_PTR(resource);
        if (!s->scope)
                s->scope = TAKE_PTR(scopes);
        start_server_meta(s);
}

static char *authorization_url(struct oauth_signin *s) {
        _cleanup_free_ char *challenge = NULL;

        if (oauth_random_text(32, &s->verifier) < 0 || oauth_random_text(16, &s->state_text) < 0 ||
            oauth_pkce_challenge(s->verifier, &challenge) < 0)
                return NULL;
        return oauth_authorization_url(s->meta.authorization_endpoint, s->client_id, s->redirect_uri, challenge,
                                       s->state_text, s->resource, s->scope);
}

static void ready_for_code(struct oauth_signin *s) {
        _cleanup_free_ char *url = authorization_url(s);

        if (!url) {
                fail(s, "cannot make the PKCE verifier or the state (no random bytes?)");
                return;
        }
        set_state(s, SIGNIN_WAIT_CODE);
        s->url_ready(s, url, NULL, s->userdata);
}

static void register_client(struct oauth_signin *s) {
        json_object *o = oauth_client_metadata(NULL, s->redirect_uri, s->scope);
        int r;

        set_state(s, SIGNIN_REGISTER);
        r = fetch(s, s->meta.registration_endpoint, OAUTH_BODY_JSON,
                  json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        if (r < 0)
                fail(s, "out of memory");
}

static void server_meta_read(struct oauth_signin *s, const char *body) {
        const char *why = NULL;

        oauth_server_meta_done(&s->meta);
        if (oauth_parse_server_metadata(body, s->issuer, &s->meta, &why) < 0) {
                fail(s, why ? why : "out of memory");
                return;
        }
        server_meta_ready(s);
}

/* The client, in the specification's order: configured; else the Client ID Metadata
 * Document the administrator published, where the server takes one (its URL is the
 * client_id of a public client); else registered. */
static void server_meta_ready(struct oauth_signin *s) {
        if (s->client_id && oauth_client_bound_elsewhere(s->client_id, s->left_issuer, s->left_client, s->meta.issuer)) {
                fail(s, "\"clientId\" is the client of the authorization server it left: a client is bound to its "
                        "authorization server; register one at the new one and configure it");
                return;
        }
        if (s->client_id) {
                choose_auth_method(s);
                ready_for_code(s);
                return;
        }
        if (s->metadata_url && s->meta.client_id_documents) {
                s->client_id = strdup(s->metadata_url);
                if (!s->client_id) {
                        fail(s, "out of memory");
                        return;
                }
                ready_for_code(s);
                return;
        }
        if (!s->meta.registration_endpoint) {
                fail(s, s->metadata_url ? "its authorization server takes neither Client ID Metadata Documents nor dynamic "
                                          "client registration: configure \"clientId\""
                                        : "its authorization server offers no dynamic client registration: configure "
                                          "\"clientId\", or \"clientMetadataUrl\" if it takes Client ID Metadata Documents");
                return;
        }
        register_client(s);
}

static void registered(struct oauth_signin *s, const char *body) {
        const char *why = NULL;

        free(s->auth_method);
        s->auth_method = NULL;
        if (oauth_parse_registration(body, &s->client_id, &s->client_secret, &s->auth_method, &why) < 0) {
                fail(s, why ? why : "out of memory");
                return;
        }
        s->client_registered = true;
        if (s->client_secret && !s->auth_method)
                s->auth_method = strdup("client_secret_basic"); /* RFC 7591's default */
        ready_for_code(s);
}

/* A configured client's secret goes as the server says it takes it: Basic unless it
 * lists only client_secret_post. */
static void choose_auth_method(struct oauth_signin *s) {
        free(s->auth_method);
        s->auth_method = NULL;
        if (s->client_secret)
                s->auth_method = strdup(s->meta.auth_basic || !s->meta.auth_post ? "client_secret_basic" : "client_secret_post");
}

static char *dup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

static void token_read(struct oauth_signin *s, const char *body) {
        struct oauth_grant *g = calloc(1, sizeof *g);
        const char *why = NULL;

        if (!g) {
                fail(s, "out of memory");
                return;
        }
        if (oauth_parse_token_answer(body, (int64_t)time(NULL), g, &why) < 0) {
                free(g);
                fail(s, why ? why : "out of memory");
                return;
        }
        g->token_endpoint = strdup(s->meta.token_endpoint);
        g->revocation_endpoint = dup_or_null(s->meta.revocation_endpoint);
        g->issuer = strdup(s->meta.issuer);
        g->client_id = strdup(s->client_id);
        g->client_secret = s->client_registered ? dup_or_null(s->client_secret) : NULL;
        g->resource = strdup(s->resource);
        g->url = strdup(s->net.url);
        g->scope = dup_or_null(s->scope);
        g->auth_method = dup_or_null(s->auth_method);
        if (!g->token_endpoint || !g->issuer || !g->client_id || !g->resource || !g->url) {
                oauth_grant_done(g);
                free(g);
                fail(s, "out of memory");
                return;
        }
        set_state(s, SIGNIN_DONE);
        s->finished(s, g, NULL, s->userdata);
}

/* The server's answer to a request without a token: its challenge's resource_metadata is
 * tried first, and its scope is the one asked for unless "scopes" says. */
static void probed(struct oauth_signin *s, const char *challenge) {
        char metadata[512] = "", scope[512] = "";
        char **wells = NULL, **urls;
        size_t n = 0;

        if (challenge && oauth_bearer_challenge(challenge, metadata, sizeof metadata))
                oauth_challenge_scope(challenge, scope, sizeof scope);
        if (!s->scope_configured && *scope) {
                free(s->scope);
                s->scope = strdup(scope);
        }
        if (oauth_resource_metadata_urls(s->net.url, &wells) < 0) {
                fail(s, "out of memory");
                return;
        }
        while (wells[n])
                n++;
        urls = calloc(n + 2, sizeof *urls);
        if (!urls) {
                oauth_strv_free(wells);
                fail(s, "out of memory");
                return;
        }
        n = 0;
        if (*metadata)
                urls[n++] = strdup(metadata);
        for (char **w = wells; *w; w++)
                urls[n++] = TAKE_PTR(*w);
        oauth_strv_free(wells);
        oauth_strv_free(s->urls);
        s->urls = urls;
        s->next_url = 0;
        set_state(s, SIGNIN_RESOURCE_META);
        try_next_url(s);
}

/* An initialize without a token, and a tools/list without one: a protected server answers
 * one of them 401 with its challenge. */
#define PROBE_BODY                                                                                         \
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"           \
        "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"mcpvisor\",\"version\":\"sign-in\"}}}"
#define PROBE_LIST_BODY "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"

/* The server let initialize through without a token (as a server whose tools alone are
 * protected does): its first real request says where and with which scope to sign in. */
static void probe_list(struct oauth_signin *s) {
        set_state(s, SIGNIN_PROBE_LIST);
        if (fetch_request(s, &(struct oauth_request){ .url = s->net.url,
                                                      .kind = OAUTH_BODY_JSON,
                                                      .body = PROBE_LIST_BODY,
                                                      .mcp = true }) < 0)
                fail(s, "out of memory");
}

static void on_fetched(struct oauth_fetch *f, long status, const char *body, size_t len, const char *error,
                       void *userdata) {
        struct oauth_signin *s = userdata;

        switch (s->state) {
        case SIGNIN_PROBE:
        case SIGNIN_PROBE_LIST:
                if (status == 0)
                        fail_status(s, "the server", status, error, body);
                else if (s->state == SIGNIN_PROBE && status >= 200 && status <= 299)
                        probe_list(s);
                else
                        probed(s, oauth_fetch_challenge(f));
                return;
        case SIGNIN_RESOURCE_META:
        case SIGNIN_SERVER_META:
                if (status == 200)
                        (s->state == SIGNIN_RESOURCE_META ? resource_meta_read : server_meta_read)(s, body);
                else if (status == 0)
                        fail_status(s, s->state == SIGNIN_RESOURCE_META ? "its resource metadata" : "its authorization server's metadata",
                                    status, error, body);
                else
                        try_next_url(s);
                return;
        case SIGNIN_REGISTER:
                if (status == 200 || status == 201)
                        registered(s, body);
                else
                        fail_status(s, "the client registration", status, error, body);
                return;
        case SIGNIN_TOKEN:
                if (status == 200)
                        token_read(s, body);
                else
                        fail_status(s, "the token request", status, error, body);
                return;
        case SIGNIN_WAIT_CODE:
        case SIGNIN_DONE:
        case SIGNIN_FAILED:
                return;
        }
}

static bool same_secret(const char *a, const char *b) {
        size_t la = strlen(a);

        return la == strlen(b) && CRYPTO_memcmp(a, b, la) == 0;
}

static char *token_request(struct oauth_signin *s, const char *code) {
        bool secret_in_body = s->client_secret && s->auth_method && strcmp(s->auth_method, "client_secret_post") == 0;

        return oauth_form(NULL, (const struct oauth_field[]){ { "grant_type", "authorization_code" },
                                                              { "code", code },
                                                              { "redirect_uri", s->redirect_uri },
                                                              { "client_id", s->client_id },
                                                              { "code_verifier", s->verifier },
                                                              { "resource", s->resource },
                                                              { "client_secret", secret_in_body ? s->client_secret : NULL },
                                                              { NULL, NULL } });
}

void oauth_signin_complete(struct oauth_signin *s, const char *code, const char *state, const char *iss) {
        char *body;
        int r;

        if (s->state != SIGNIN_WAIT_CODE)
                return;
        set_state(s, SIGNIN_TOKEN);
        if (!state || !same_secret(state, s->state_text)) {
                fail(s, "the redirect's state is not this sign-in's: ignored (another browser tab, or a forged redirect)");
                return;
        }
        /* RFC 9207: a mix-up of authorization servers shows as another iss */
        if ((s->meta.iss_parameter && !iss) || (iss && strcmp(iss, s->meta.issuer) != 0)) {
                fail(s, "the redirect's iss is not the authorization server's (RFC 9207): refused");
                return;
        }
        if (!code || !*code) {
                fail(s, "the redirect carries no code");
                return;
        }
        _cleanup_free_ char *basic = NULL;

        if (s->client_secret && s->auth_method && strcmp(s->auth_method, "client_secret_basic") == 0 &&
            oauth_basic_credentials(s->client_id, s->client_secret, &basic) < 0) {
                fail(s, "out of memory");
                return;
        }
        body = token_request(s, code);
        r = body ? fetch_request(s, &(struct oauth_request){ .url = s->meta.token_endpoint,
                                                             .kind = OAUTH_BODY_FORM,
                                                             .body = body,
                                                             .authorization = basic })
                 : -ENOMEM;
        wipe_free(body);
        if (basic)
                explicit_bzero(basic, strlen(basic));
        if (r < 0)
                fail(s, "out of memory");
}

char *oauth_authorization_url(const char *endpoint, const char *client_id, const char *redirect_uri,
                              const char *challenge, const char *state, const char *resource, const char *scope) {
        return oauth_form(endpoint, (const struct oauth_field[]){ { "response_type", "code" },
                                                                  { "client_id", client_id },
                                                                  { "redirect_uri", redirect_uri },
                                                                  { "code_challenge", challenge },
                                                                  { "code_challenge_method", "S256" },
                                                                  { "state", state },
                                                                  { "resource", resource },
                                                                  { "scope", scope },
                                                                  { NULL, NULL } });
}

static char *scopes_joined(char *const *scopes) {
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (!scopes || !*scopes)
                return NULL;
        f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        for (char *const *p = scopes; *p; p++)
                fprintf(f, "%s%s", p == scopes ? "" : " ", *p);
        if (fclose(f) != 0)
                return NULL;
        return text;
}

/* As if a probe's challenge had named url. */
static void probed_hint(struct oauth_signin *s, const char *url) {
        char *challenge = NULL;

        if (asprintf(&challenge, "Bearer resource_metadata=\"%s\"", url) < 0) {
                fail(s, "out of memory");
                return;
        }
        probed(s, challenge);
        free(challenge);
}

int oauth_signin_begin(const struct oauth_signin_params *p, struct oauth_signin **ret) {
        struct oauth_signin *s;
        int r;

        if (strncmp(p->redirect_uri, "http://127.0.0.1:", 17) != 0 && strncmp(p->redirect_uri, "http://[::1]:", 13) != 0)
                return -EINVAL;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        remote_config_init(&s->net);
        s->state = p->resource_metadata && oauth_url_acceptable(p->resource_metadata) ? SIGNIN_RESOURCE_META : SIGNIN_PROBE;
        s->loop = p->loop;
        s->url_ready = p->url_ready;
        s->finished = p->finished;
        s->userdata = p->userdata;
        s->net.url = strdup(p->rc->url);
        s->net.proxy = dup_or_null(p->rc->proxy);
        s->net.ca_file = dup_or_null(p->rc->ca_file);
        s->net.insecure = p->rc->insecure;
        s->net.connect_timeout = p->rc->connect_timeout;
        s->redirect_uri = strdup(p->redirect_uri);
        /* a step-up's union (SEP-2350) says what to ask for, else "scopes" */
        s->scope = p->scope ? strdup(p->scope) : scopes_joined(p->rc->scopes);
        s->scope_configured = s->scope != NULL;
        s->metadata_url = dup_or_null(p->rc->client_metadata_url);
        s->left_issuer = dup_or_null(p->left_issuer);
        s->left_client = dup_or_null(p->left_client_id);
        s->resource = strdup(p->rc->url);
        s->client_id = dup_or_null(p->rc->client_id);
        s->client_secret = p->rc->client_id ? dup_or_null(p->client_secret) : NULL;
        if (!s->net.url || !s->redirect_uri || !s->resource) {
                oauth_signin_free(s);
                return -ENOMEM;
        }
        *ret = s;
        if (s->state == SIGNIN_RESOURCE_META) {
                /* the server's last 401 named its metadata: no probe needed */
                set_state(s, SIGNIN_PROBE);
                probed_hint(s, p->resource_metadata);
                return 0;
        }
        r = fetch_request(s, &(struct oauth_request){ .url = s->net.url,
                                                      .kind = OAUTH_BODY_JSON,
                                                      .body = PROBE_BODY,
                                                      .mcp = true });
        if (r < 0) {
                *ret = NULL;
                oauth_signin_free(s);
        }
        return r;
}

void oauth_signin_free(struct oauth_signin *s) {
        if (!s)
                return;
        oauth_fetch_free(s->fetch);
        remote_config_done(&s->net);
        free(s->scope);
        free(s->resource);
        free(s->auth_method);
        free(s->client_id);
        wipe_free(s->client_secret);
        free(s->metadata_url);
        free(s->left_issuer);
        free(s->left_client);
        free(s->redirect_uri);
        oauth_strv_free(s->urls);
        free(s->issuer);
        oauth_server_meta_done(&s->meta);
        wipe_free(s->verifier);
        wipe_free(s->state_text);
        free(s);
}
