/* The checks of one request at the HTTP front door, as a pure function of what it says
 * (its method, path and headers) and of the "http" setting: which endpoint, whether its
 * Origin may call, which token it presents, whether its media types and protocol version
 * are ones the endpoint takes, and which session it names. http-front.c reads a request into a
 * struct http_request, asks http_request_judge(), and answers a refusal as the verdict
 * says; the fuzz harness fuzz_http calls the same function. No I/O, no allocation, but for
 * the check of a JWT when http.oauth is set (http-oauth.h: a signature verified, claims
 * parsed, the user and groups looked up, all freed before it returns). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct http_config;
struct http_oauth;
struct http_token;

enum http_method { HTTP_GET, HTTP_POST, HTTP_DELETE, HTTP_OTHER };

/* What the front door reads of a request; a header absent is NULL. */
struct http_request {
        enum http_method method;
        const char *path;             /* the URI's path; NULL when it has none */
        bool unix_peer;               /* on a Unix socket: the kernel names the peer, no token */
        const char *origin;
        const char *authorization;
        const char *content_type;
        const char *accept;
        const char *protocol_version; /* MCP-Protocol-Version */
        const char *session_id;       /* Mcp-Session-Id */
};

enum http_outcome {
        HTTP_HEALTHZ,  /* GET /healthz: answered without a token */
        HTTP_RESOURCE_METADATA, /* GET /.well-known/oauth-protected-resource[/PATH] with http.oauth:
                                 * answered without a token (RFC 9728) */
        HTTP_PROCEED,  /* to the session it names (or, a POST naming none, a new one) */
        HTTP_REFUSE,   /* answered with the verdict's status and text */
};

struct http_verdict {
        enum http_outcome outcome;
        /* HTTP_REFUSE: */
        int status;
        const char *reason;           /* the status line's phrase */
        const char *text;             /* the body's text */
        bool json;                    /* text is a JSON-RPC error's message (null id), else plain text */
        const char *log;              /* what the refusal log says of it (refusal-log.h); NULL: not logged */
        const char *allow;            /* an Allow header; NULL: none */
        bool authenticate;            /* a WWW-Authenticate: Bearer header */
        const char *bearer_error;     /* its error: "invalid_token", "insufficient_scope"; NULL: none */
        bool retry;                   /* a Retry-After header: the issuer's keys are on their way */
        /* HTTP_PROCEED: */
        const struct http_token *token; /* the token presented (TCP); NULL on a Unix socket */
        int64_t session_key;          /* the Mcp-Session-Id's key (client_http_key_of()); 0: none
                                       * given, or not one of ours in form (then unknown) */
};

/* Who sends a request, from what its head names: whether it is for the endpoint (path:
 * its URI's path, NULL when none), whether its Origin (NULL: none) may call, and on TCP
 * (unix_peer false) the bearer token it presents, found in *ret_token (NULL on a Unix
 * socket): one of the static tokens (compared in constant time), else, with oauth (NULL:
 * none; http.oauth set), a JWT access token of the issuer mapped to its identity
 * (http-oauth.h). The first checks of http_request_judge(), and all that the HTTP gate
 * (http-gate.c) asks before it lets a connection's body in: both decide by this one
 * function. *ret_why: a JWT refused, in words. */
enum http_admission {
        HTTP_ADMIT_NOT_ENDPOINT,
        HTTP_ADMIT_ORIGIN_REFUSED,
        HTTP_ADMIT_NO_TOKEN,        /* none, or one that is not of h (no http.oauth) */
        HTTP_ADMIT_TOKEN_INVALID,   /* a bearer token that is none of h's nor a valid JWT: 401 invalid_token */
        HTTP_ADMIT_NO_USER,         /* a valid JWT whose user is no host user: 403 */
        HTTP_ADMIT_SCOPE,           /* a valid JWT without a required scope: 403 insufficient_scope */
        HTTP_ADMIT_KEYS_PENDING,    /* the issuer's keys are on their way: 503, retry */
        HTTP_ADMITTED,
};
enum http_admission http_request_admission(const struct http_config *h, struct http_oauth *oauth, const char *path,
                                           const char *origin, const char *authorization, bool unix_peer,
                                           const struct http_token **ret_token, const char **ret_why);

/* The TOKEN of an Authorization header "Bearer TOKEN" (the scheme's case aside, spaces
 * before the token skipped), or NULL. */
const char *http_request_bearer_text(const char *authorization);
/* The static token an Authorization header names, or NULL. */
const struct http_token *http_request_bearer(const struct http_config *h, const char *authorization);
/* Whether path is where the protected resource's metadata is served (RFC 9728 §3.1): the
 * well-known path, alone or with the endpoint's path after it. */
bool http_request_is_resource_metadata(const struct http_config *h, const char *path);
/* Whether a Content-Type is application/json (with parameters or not). */
bool http_request_is_json(const char *content_type);
void http_request_judge(const struct http_config *h, struct http_oauth *oauth, const struct http_request *r,
                        struct http_verdict *ret);
