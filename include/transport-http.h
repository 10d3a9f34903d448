/* The Streamable HTTP transport of MCP (spec 2025-11-25) behind the server transport's
 * operations (server-transport.h): each message POSTed to the server's URL, its answer
 * read as JSON or as an event stream and handed up line by line; the session id kept and
 * sent; MCP-Protocol-Version sent once initialize negotiated it; the GET stream for what
 * the server sends by itself, reopened with Last-Event-ID when it drops; DELETE of the
 * session when the connection is closed. An HTTP status that ends the session (404 on
 * it, 401 and 403, 5xx, a refused connection) breaks the connection with words naming
 * the status. All transfers go through the daemon's curl loop (curl-loop.h).
 *
 * The run (launcher-http.c) hears once that everything is over (finished), after the input
 * was closed or the transport aborted: then the run has ended. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct curl_loop;
struct curl_slist;
struct logger;
struct event_base;
struct remote_config;
struct server_transport;

/* How the session ended, for the run's end. */
struct http_end {
        bool failure;         /* broken by the server or the network, not closed by the daemon */
        bool no_retry;        /* the server refused the credential: restarting cannot help */
        bool unauthorized;    /* that refusal was a 401: a sign-in token may be refreshed */
        bool bearer_challenge; /* its WWW-Authenticate asked for a Bearer token (RFC 6750) */
        char resource_metadata[512]; /* and named its metadata there (RFC 9728); "" none */
        bool insufficient_scope; /* the refusal was a 403 whose challenge said insufficient_scope */
        char scope[256];      /* the scope a challenge named (RFC 6750 section 3); "" none */
};

/* The sign-in token to send as "Authorization: Bearer" now (oauth-tokens.h), or NULL. */
typedef const char *(*http_bearer_fn)(void *userdata);

typedef void (*http_finished_fn)(const struct http_end *end, void *userdata);

struct http_transport_params {
        struct event_base *base;
        struct curl_loop *loop;
        const struct logger *log;
        const char *name;                 /* the server's, for logs; lives as long as the transport */
        const struct remote_config *rc;   /* its url and connection keys; the same */
        struct curl_slist *headers;       /* the configured headers, values resolved; taken */
        size_t max_message;               /* maxServerMessageSize: one JSON body or SSE event */
        http_finished_fn finished;
        void *userdata;
        http_bearer_fn bearer;            /* NULL: no sign-in ("auth" is not "oauth") */
        void *bearer_userdata;
};

/* NULL when out of memory (the headers are freed). */
struct server_transport *transport_http_new(const struct http_transport_params *params);
/* Ends every transfer at once, without a DELETE; finished follows (on a later loop turn). */
void transport_http_abort(struct server_transport *t);
/* Where the transport is in its life ("open", "broken", "closing", "finished"), for
 * logs and tests. */
const char *transport_http_state(const struct server_transport *t);
