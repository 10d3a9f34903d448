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

struct http_config {
        int credentials;          /* enum http_credentials, set before parsing; kept across it */
        struct http_address *listen;
        size_t n_listen;
        char *path;               /* the MCP endpoint; NULL: HTTP_DEFAULT_PATH */
        char **allowed_origins;   /* NULL-terminated; NULL: only loopback and localhost */
        struct http_token *tokens;
        size_t n_tokens;
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
/* Whether origin (the Origin header's value) may call: one of allowed_origins, or, with
 * none configured, http(s)://localhost, 127.0.0.1 or [::1] on any port. */
bool http_origin_allowed(const struct http_config *h, const char *origin);
