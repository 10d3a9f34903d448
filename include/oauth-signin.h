/* One sign-in to a server reached by URL (OAuth 2.1 with the MCP authorization
 * specification), from discovery to the tokens, a state machine driven by the curl loop:
 *
 *   probe (without a 401 at hand: an initialize without a token, whose 401's challenge
 *     names the metadata and the scope; a server that lets initialize through is asked a
 *     tools/list, for the challenge of its first protected request)
 *   → resource metadata (RFC 9728: the 401's resource_metadata, then the well-known URLs
 *     at the server's path, then at its root; none at all: the server's origin is taken as
 *     its authorization server, as the specification's 2025-03-26 servers are)
 *   → server metadata (RFC 8414, then OpenID Connect Discovery; S256 must be listed)
 *   → client (the configured clientId, else the configured clientMetadataUrl where the
 *     server takes Client ID Metadata Documents, else dynamic registration, RFC 7591: a
 *     native public client with the loopback redirect URI the login was given)
 *   → waiting for the code (the authorization URL, with PKCE S256, state and the RFC 8707
 *     resource, is given to url_ready)
 *   → token (the code exchanged with the verifier and the resource; the state checked in
 *     constant time, and iss (RFC 9207) where the server says it sends it)
 *   → done or failed (finished called once).
 *
 * The verifier never leaves this object. Nothing here logs: the caller says what happened,
 * with the words given, which never hold a token, a code or a query. */
#pragma once

#include <stdbool.h>

struct curl_loop;
struct remote_config;
struct oauth_grant;
struct oauth_signin;

enum oauth_signin_state {
        SIGNIN_PROBE,              /* an unauthenticated initialize, for the 401's challenge */
        SIGNIN_PROBE_LIST,         /* initialize was let through: a tools/list, for its 401 */
        SIGNIN_RESOURCE_META,
        SIGNIN_SERVER_META,
        SIGNIN_REGISTER,
        SIGNIN_WAIT_CODE,
        SIGNIN_TOKEN,
        SIGNIN_DONE,
        SIGNIN_FAILED,
};

/* The authorization URL to open (error NULL), or why there is none (url NULL; the sign-in
 * has failed: finished is not called then). */
typedef void (*oauth_signin_url_fn)(struct oauth_signin *s, const char *url, const char *error, void *userdata);
/* After oauth_signin_complete(): the grant (taken by the callee) or why not. */
typedef void (*oauth_signin_finished_fn)(struct oauth_signin *s, struct oauth_grant *grant, const char *error,
                                         void *userdata);

struct oauth_signin_params {
        struct curl_loop *loop;
        const struct remote_config *rc;   /* copied: a reload may replace it meanwhile */
        const char *redirect_uri;         /* http://127.0.0.1:PORT/... of the login */
        const char *client_secret;        /* the configured clientSecret's text, or NULL */
        const char *resource_metadata;    /* from the server's last 401, or NULL */
        const char *scope;                /* to ask for instead of "scopes" (a step-up's), or NULL */
        const char *left_issuer;          /* an authorization server the server left, and */
        const char *left_client_id;       /* its client there: not presented elsewhere; or NULLs */
        oauth_signin_url_fn url_ready;
        oauth_signin_finished_fn finished;
        void *userdata;
};

/* Starts discovery. 0, -EINVAL (the redirect URI is not a loopback http one), -ENOMEM. */
int oauth_signin_begin(const struct oauth_signin_params *params, struct oauth_signin **ret);
/* The redirect's parameters: finished follows (maybe before this returns, for a refusal). */
void oauth_signin_complete(struct oauth_signin *s, const char *code, const char *state, const char *iss);
enum oauth_signin_state oauth_signin_state(const struct oauth_signin *s);
/* Ends its exchanges; no callback follows. NULL-safe. */
void oauth_signin_free(struct oauth_signin *s);

/* The authorization URL's query for these values, pure (for the tests): response_type,
 * client_id, redirect_uri, code_challenge, S256, state, resource, scope (if any). Malloc'd. */
char *oauth_authorization_url(const char *endpoint, const char *client_id, const char *redirect_uri,
                              const char *challenge, const char *state, const char *resource, const char *scope);
