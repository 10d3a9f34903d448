/* One HTTP exchange of a sign-in (oauth-signin.h) or of the token store (oauth-tokens.h)
 * with a server's metadata or its authorization server: a GET of JSON metadata, or a POST
 * of a form (token, registration as JSON, revocation), through the daemon's curl loop,
 * never blocking the loop. No redirect is followed (a token request's secrets would go
 * where the answer points), the body is bounded, and the whole exchange has a deadline.
 * The server's proxy and CA settings apply; "insecure" only to a loopback URL. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct curl_loop;
struct remote_config;
struct oauth_fetch;

#define OAUTH_FETCH_BODY_MAX (256 * 1024)
#define OAUTH_FETCH_TIMEOUT_MS 30000

enum oauth_body { OAUTH_BODY_NONE, OAUTH_BODY_FORM, OAUTH_BODY_JSON };

/* The exchange ended: status 0 when no answer came (error says why, in curl's fixed words,
 * never a URL's query or a body). body is NUL-terminated, valid until done returns. The
 * fetch is over: the callee frees it (oauth_fetch_free) when it likes, even here. */
typedef void (*oauth_fetch_done_fn)(struct oauth_fetch *f, long status, const char *body, size_t len,
                                    const char *error, void *userdata);

/* Starts a GET of url (body NULL) or a POST of body (its kind). 0, or -ENOMEM. */
int oauth_fetch_start(struct curl_loop *loop, const struct remote_config *rc, const char *url, enum oauth_body kind,
                      const char *body, oauth_fetch_done_fn done, void *userdata, struct oauth_fetch **ret);

/* The same, with an Authorization header (a client's "Basic ..." at a token endpoint)
 * and, for mcp, the Accept of an MCP POST (a sign-in's first request to the server, to
 * read its 401's challenge). */
struct oauth_request {
        const char *url;
        enum oauth_body kind;
        const char *body;
        const char *authorization;      /* the header's value, or NULL */
        bool mcp;
};
int oauth_fetch_request(struct curl_loop *loop, const struct remote_config *rc, const struct oauth_request *req,
                        oauth_fetch_done_fn done, void *userdata, struct oauth_fetch **ret);
/* The answer's WWW-Authenticate (the first), or NULL; valid while f is. */
const char *oauth_fetch_challenge(const struct oauth_fetch *f);
/* Ends it if it has not ended (done is not called). NULL-safe. */
void oauth_fetch_free(struct oauth_fetch *f);
