/* The daemon's "http" setting: the Streamable HTTP front door's addresses, endpoint path,
 * allowed Origins and bearer tokens, each token mapped to a principal the access rules see
 * as they see a socket peer. Parsed and checked here; served by http-front.c. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct config_problems;
struct principal;

#define HTTP_DEFAULT_PATH "/mcp"
#define HTTP_DEFAULT_MAX_SESSIONS 1024
/* An HTTP session waiting for nothing (no request pending, no stream open) for this long
 * ends: minutes, as a client that left without DELETE (most do) holds it until then. */
#define HTTP_DEFAULT_SESSION_IDLE 300.0

/* One address to listen on: "127.0.0.1:8765", "[::1]:8765" or "unix:/run/x.sock". */
struct http_address {
        char *host;      /* a literal address; NULL for a Unix socket */
        unsigned port;
        char *path;      /* the Unix socket's path; NULL for TCP */
};

struct http_token {
        char *secret;         /* the credential's text; NULL when HTTP_CREDENTIALS_UNREAD */
        size_t secret_len;
        char *user;           /* as written, for logs and mcpvisorctl clients */
        uid_t uid;
        gid_t *groups;        /* the first is the primary group; owned */
        size_t n_groups;
        char *profile;        /* the profile its sessions start in; NULL: none */
};

/* Whether a token's credential is read while the configuration is: the daemon reads it
 * from its unit's $CREDENTIALS_DIRECTORY; --check-config, outside the service, has none,
 * so it checks each token's shape only and its secret stays NULL. */
enum http_credentials { HTTP_CREDENTIALS_READ, HTTP_CREDENTIALS_UNREAD };

/* Seconds between two fetches of the issuer's keys that tokens with an unknown kid ask for. */
#define HTTP_OAUTH_DEFAULT_KEYS_REFRESH 30

/* One entry of a map of "http.oauth" ("users", "scopes"): a claim's value to a name. */
struct http_oauth_map {
        char *name;     /* the claim's value */
        char *to;       /* a host user (users), a profile (scopes) */
};

/* "http.oauth": the front door as an OAuth resource server, accepting the JWT access tokens
 * of one issuer beside the static tokens (http-oauth.h). issuer NULL: not configured. */
struct http_oauth_config {
        char *issuer;
        char **audiences;         /* NULL-terminated; filled with the front door's URLs when not set */
        char *user_claim;         /* NULL: "sub" */
        char *groups_claim;       /* NULL: groups come from the host user only */
        char **algorithms;        /* as written; NULL: JWT_DEFAULT_ALGS */
        unsigned algs;            /* enum jwt_alg bits, from algorithms */
        double clock_skew;        /* seconds */
        double keys_refresh;      /* seconds between fetches asked for by unknown kids */
        struct http_oauth_map *users;
        size_t n_users;
        struct http_oauth_map *scopes;
        size_t n_scopes;
        char **required_scopes;   /* NULL-terminated; NULL: none */
};

struct http_config {
        int credentials;          /* enum http_credentials, set before parsing; kept across it */
        struct http_address *listen;
        size_t n_listen;
        char *path;               /* the MCP endpoint; NULL: HTTP_DEFAULT_PATH */
        char **allowed_origins;   /* NULL-terminated; NULL: only loopback and localhost */
        struct http_token *tokens;
        size_t n_tokens;
        struct http_oauth_config oauth;
};

/* Parses one address as written in "listen"; -EINVAL with why (a static string). */
int http_address_parse(const char *text, struct http_address *ret, const char **why);
void http_address_done(struct http_address *a);

/* The settings table's parser of "http" (settings.h, SETTING_CUSTOM); dst is a struct
 * http_config. Tokens are read from $CREDENTIALS_DIRECTORY unless h->credentials is
 * HTTP_CREDENTIALS_UNREAD. */
int http_config_parse(json_object *v, const char *path, void *dst, struct config_problems *p);
/* Checks what needs the whole configuration: each token's profile exists. */
size_t http_config_check(const struct http_config *h, bool (*profile_exists)(const char *name, void *arg), void *arg,
                         struct config_problems *p);
void http_config_done(struct http_config *h);

/* The token whose secret is secret (len bytes), compared in constant time against every
 * token, or NULL. */
const struct http_token *http_token_find(const struct http_config *h, const char *secret, size_t len);
/* The principal t stands for, as the access rules see it: its uid, its user's name, the
 * first of its groups as the primary one and the others as supplementary. -ENOMEM (ret
 * then empty). */
int http_token_principal(const struct http_token *t, struct principal *ret);
/* The host user a token's user claim value names: the "users" map's entry for it, else the
 * value itself. */
const char *http_oauth_user_of(const struct http_oauth_config *o, const char *claim);
/* The profile a scope chooses ("scopes"), or NULL. */
const char *http_oauth_profile_of(const struct http_oauth_config *o, const char *scope);
/* The URL of the front door that a request with Host host (NULL: none) reached, as the
 * protected resource: the audience that is http://HOST + path, else the first audience. */
const char *http_oauth_resource(const struct http_config *h, const char *host);

/* Whether origin (the Origin header's value) may call: one of allowed_origins, or, with
 * none configured, http(s)://localhost, 127.0.0.1 or [::1] on any port. */
bool http_origin_allowed(const struct http_config *h, const char *origin);
