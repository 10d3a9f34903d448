/* The checks of one HTTP request (http-request.c): each refusal with its status, words and
 * headers, in the order the front door checks, and what a request that proceeds carries. */
#include <criterion/criterion.h>
#include <string.h>

#include "client-http.h"
#include "http-config.h"
#include "http-request.h"

#define SECRET "unit-token-0123456789abcdef"
#define SID "0123456789abcdef0123456789abcdef"

static struct http_token token = { .secret = SECRET, .secret_len = sizeof SECRET - 1, .user = "ci", .uid = 1000 };
static const struct http_config h = { .tokens = &token, .n_tokens = 1 };

static struct http_verdict judge(struct http_request r) {
        struct http_verdict v;

        http_request_judge(&h, NULL, &r, &v);
        return v;
}

#define BEARER "Bearer " SECRET

Test(http_request, healthz_answers_before_anything_else) {
        cr_assert_eq(judge((struct http_request){ .method = HTTP_GET, .path = "/healthz", .origin = "http://evil.example" }).outcome,
                     HTTP_HEALTHZ);
        cr_assert_eq(judge((struct http_request){ .method = HTTP_POST, .path = "/healthz" }).status, 404);
}

Test(http_request, refusals_in_order) {
        struct http_verdict v;

        cr_assert_eq(judge((struct http_request){ .method = HTTP_POST, .path = "/other", .authorization = BEARER }).status, 404);
        cr_assert_eq(judge((struct http_request){ .method = HTTP_POST, .path = NULL }).status, 404);
        v = judge((struct http_request){ .method = HTTP_POST, .path = "/mcp", .origin = "http://localhost.evil.example",
                                         .authorization = BEARER });
        cr_assert_eq(v.status, 403);
        cr_assert_str_eq(v.log, "Origin not allowed (http.allowedOrigins)");
        v = judge((struct http_request){ .method = HTTP_POST, .path = "/mcp", .origin = "http://localhost:3000" });
        cr_assert_eq(v.status, 401, "a loopback Origin passes, then the token is asked for");
        cr_assert(v.authenticate);
        cr_assert_str_eq(v.log, "no bearer token");
        v = judge((struct http_request){ .method = HTTP_POST, .path = "/mcp", .authorization = "Bearer " SECRET "x" });
        cr_assert_eq(v.status, 401);
        cr_assert_str_eq(v.log, "wrong bearer token");
        cr_assert_eq(judge((struct http_request){ .method = HTTP_POST, .path = "/mcp", .authorization = "Basic eDp5" }).status, 401);
        v = judge((struct http_request){ .method = HTTP_OTHER, .path = "/mcp", .authorization = BEARER });
        cr_assert_eq(v.status, 405);
        cr_assert_str_eq(v.allow, "GET, POST, DELETE");
        cr_assert_eq(judge((struct http_request){ .method = HTTP_POST, .path = "/mcp", .authorization = BEARER,
                                                  .content_type = "text/plain" }).status, 415);
        cr_assert_eq(judge((struct http_request){ .method = HTTP_GET, .path = "/mcp", .authorization = BEARER,
                                                  .accept = "application/json", .session_id = SID }).status, 406);
        v = judge((struct http_request){ .method = HTTP_GET, .path = "/mcp", .authorization = BEARER });
        cr_assert_eq(v.status, 400);
        cr_assert(v.json, "answered as a JSON-RPC error");
        v = judge((struct http_request){ .method = HTTP_DELETE, .path = "/mcp", .authorization = BEARER, .session_id = SID,
                                         .protocol_version = "1999-01-01" });
        cr_assert_eq(v.status, 400);
        cr_assert_str_eq(v.text, "Bad Request: unsupported MCP-Protocol-Version");
}

Test(http_request, what_proceeds_carries_its_token_and_session_key) {
        struct http_verdict v;

        v = judge((struct http_request){ .method = HTTP_POST, .path = "/mcp", .authorization = "bearer   " SECRET,
                                         .content_type = "application/json; charset=utf-8" });
        cr_assert_eq(v.outcome, HTTP_PROCEED);
        cr_assert_eq(v.token, &token);
        cr_assert_eq(v.session_key, 0, "none named: a POST may open one");
        v = judge((struct http_request){ .method = HTTP_GET, .path = "/mcp", .unix_peer = true, .session_id = SID,
                                         .accept = "text/event-stream", .protocol_version = "2025-11-25" });
        cr_assert_eq(v.outcome, HTTP_PROCEED, "no token on the Unix socket");
        cr_assert_null(v.token);
        cr_assert_eq(v.session_key, client_http_key_of(SID));
        v = judge((struct http_request){ .method = HTTP_DELETE, .path = "/mcp", .authorization = BEARER, .session_id = "nope" });
        cr_assert_eq(v.outcome, HTTP_PROCEED);
        cr_assert_eq(v.session_key, 0, "not one of ours in form: unknown, answered 404 by the lookup");
}

/* With http.oauth: the resource's metadata answered without a token, at the well-known path
 * alone and with the endpoint's after it; a bearer token that is no static one is the
 * token's trouble (invalid_token), none is not. Without http.oauth the path is unknown. */
Test(http_request, oauth_metadata_and_bearer_errors) {
        static char *audiences[] = { "http://127.0.0.1:8765/mcp", NULL };
        struct http_config o = { .tokens = &token, .n_tokens = 1,
                                 .oauth = { .issuer = "https://id.example", .audiences = audiences } };
        struct http_verdict v;

        http_request_judge(&o, NULL, &(struct http_request){ .method = HTTP_GET, .path = "/.well-known/oauth-protected-resource" }, &v);
        cr_assert_eq(v.outcome, HTTP_RESOURCE_METADATA);
        http_request_judge(&o, NULL, &(struct http_request){ .method = HTTP_GET, .path = "/.well-known/oauth-protected-resource/mcp" }, &v);
        cr_assert_eq(v.outcome, HTTP_RESOURCE_METADATA);
        http_request_judge(&o, NULL, &(struct http_request){ .method = HTTP_GET, .path = "/.well-known/oauth-protected-resource/other" }, &v);
        cr_assert_eq(v.status, 404);
        http_request_judge(&o, NULL, &(struct http_request){ .method = HTTP_POST, .path = "/.well-known/oauth-protected-resource" }, &v);
        cr_assert_eq(v.status, 404, "GET only");
        cr_assert_eq(judge((struct http_request){ .method = HTTP_GET, .path = "/.well-known/oauth-protected-resource" }).status, 404,
                     "not without http.oauth");
        http_request_judge(&o, NULL, &(struct http_request){ .method = HTTP_POST, .path = "/mcp", .authorization = "Bearer eyJ.x.y" }, &v);
        cr_assert_eq(v.status, 401);
        cr_assert(v.authenticate);
        cr_assert_str_eq(v.bearer_error, "invalid_token");
        http_request_judge(&o, NULL, &(struct http_request){ .method = HTTP_POST, .path = "/mcp" }, &v);
        cr_assert_eq(v.status, 401);
        cr_assert_null(v.bearer_error, "no token, no error (RFC 6750 §3.1)");
        http_request_judge(&o, NULL, &(struct http_request){ .method = HTTP_POST, .path = "/mcp", .authorization = BEARER,
                                                             .content_type = "application/json" }, &v);
        cr_assert_eq(v.outcome, HTTP_PROCEED, "the static token still works");
        cr_assert_eq(v.token, &token);
}

/* The modern era (2026-07-28) has no GET stream and no session to DELETE: without a
 * session, 405 with Allow: POST; a POST without one proceeds (a request of its own). */
Test(http_request, modern_era_without_session) {
        struct http_verdict v;

        v = judge((struct http_request){ .method = HTTP_GET, .path = "/mcp", .authorization = BEARER,
                                         .protocol_version = "2026-07-28" });
        cr_assert_eq(v.status, 405);
        cr_assert_str_eq(v.allow, "POST");
        v = judge((struct http_request){ .method = HTTP_DELETE, .path = "/mcp", .authorization = BEARER,
                                         .protocol_version = "2026-07-28" });
        cr_assert_eq(v.status, 405);
        v = judge((struct http_request){ .method = HTTP_POST, .path = "/mcp", .authorization = BEARER,
                                         .content_type = "application/json", .protocol_version = "2026-07-28" });
        cr_assert_eq(v.outcome, HTTP_PROCEED);
        cr_assert_eq(v.session_key, 0);
        /* without a token, still 401 first */
        v = judge((struct http_request){ .method = HTTP_GET, .path = "/mcp", .protocol_version = "2026-07-28" });
        cr_assert_eq(v.status, 401);
}
