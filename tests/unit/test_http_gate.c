/* The HTTP gate's reading of a request head and its decision (http_head_parse(),
 * http_head_admits()): what evhttp would read where it matters, a body only after a head
 * admitted, and the caps on unauthenticated connections for a descriptor limit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-config.h"
#include "http-gate.h"
#include "http-request.h"

static struct http_token token = { .secret = "s3cret-token", .secret_len = 12, .user = "alice" };
static struct http_config config = { .tokens = &token, .n_tokens = 1 };

/* head parsed from a copy of text (without its blank line) */
static struct http_head parse(const char *text, char **copy) {
        struct http_head h;

        *copy = strdup(text);
        http_head_parse(*copy, strlen(text), &h);
        return h;
}

static bool admits(const char *text, bool unix_peer) {
        char *copy;
        struct http_head h = parse(text, &copy);
        bool r = http_head_admits(&config, NULL, &h, unix_peer);

        free(copy);
        return r;
}

Test(http_gate, reads_what_evhttp_reads) {
        char *c;
        struct http_head h = parse("POST /mcp HTTP/1.1\r\nHost: x\r\nauthorization:  Bearer a \r\nAuthorization: Bearer b\r\n"
                                   "Content-Length: 42\r\nOrigin: http://localhost\r\n", &c);

        cr_assert_not(h.malformed);
        cr_assert_str_eq(h.method, "POST");
        cr_assert_str_eq(h.target, "/mcp");
        cr_assert_str_eq(h.authorization, "Bearer a", "the first, trimmed: %s", h.authorization);
        cr_assert_str_eq(h.origin, "http://localhost");
        cr_assert_eq(h.body, HTTP_HEAD_LENGTH);
        cr_assert_eq(h.length, 42);
        free(c);

        h = parse("PUT /x HTTP/1.1\nTransfer-Encoding: Chunked\nContent-Length: 5\n", &c);
        cr_assert_eq(h.body, HTTP_HEAD_CHUNKED, "chunked wins, line ends without CR");
        free(c);
        h = parse("HEAD /mcp HTTP/1.1\r\nContent-Length: 5\r\n", &c);
        cr_assert_eq(h.body, HTTP_HEAD_NO_BODY, "evhttp reads no body for HEAD");
        free(c);
        h = parse("FROB /mcp HTTP/1.1\r\nContent-Length: 5\r\n", &c);
        cr_assert_eq(h.body, HTTP_HEAD_NO_BODY, "nor for a method it does not know");
        free(c);
        h = parse("GET /mcp HTTP/1.1\r\nContent-Length: 0\r\n", &c);
        cr_assert_eq(h.body, HTTP_HEAD_NO_BODY);
        free(c);
}

Test(http_gate, what_it_cannot_read_as_evhttp_does_is_malformed) {
        static const char *const heads[] = {
                "POST /mcp HTTP/1.1\r\nX-A: 1\r\n folded\r\n",
                "POST /mcp HTTP/1.1\r\nno colon here\r\n",
                "POST /mcp HTTP/1.1\r\nContent-Length: 12abc\r\n",
                "POST /mcp HTTP/1.1\r\nContent-Length: -1\r\n",
                "POST /mcp HTTP/1.1\r\nContent-Length:\r\n",
                "POST /mcp\r\n",
                "\r\n",
                "",
        };

        for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
                char *c;
                struct http_head h = parse(heads[i], &c);

                cr_assert(h.malformed, "%zu: %s", i, heads[i]);
                cr_assert_not(http_head_admits(&config, NULL, &h, true), "%zu", i);
                free(c);
        }
        {
                static const char nul[] = "POST /mcp HTTP/1.1\r\nAuthorization: Bearer s3cret-token\r\n\0\r\nContent-Length: 9\r\n";
                char copy[sizeof nul];
                struct http_head h;

                memcpy(copy, nul, sizeof nul);
                http_head_parse(copy, sizeof nul - 1, &h);
                cr_assert(h.malformed, "evhttp ends a head at a line holding a NUL");
        }
}

Test(http_gate, admits_the_endpoint_with_a_principal_only) {
        cr_assert(admits("POST /mcp HTTP/1.1\r\nAuthorization: Bearer s3cret-token\r\n", false));
        cr_assert(admits("POST /mcp?x=1 HTTP/1.1\r\nAuthorization: bearer   s3cret-token\r\n", false));
        cr_assert(admits("DELETE /mcp HTTP/1.1\r\n", true), "a Unix socket's peer is a principal");
        cr_assert_not(admits("POST /mcp HTTP/1.1\r\n", false), "no token");
        cr_assert_not(admits("POST /mcp HTTP/1.1\r\nAuthorization: Bearer s3cret-tokeN\r\n", false));
        cr_assert_not(admits("POST /mcp HTTP/1.1\r\nAuthorization: Basic czNjcmV0LXRva2Vu\r\n", false));
        cr_assert_not(admits("POST /mcpx HTTP/1.1\r\nAuthorization: Bearer s3cret-token\r\n", false), "another path");
        cr_assert_not(admits("POST /healthz HTTP/1.1\r\n", true), "/healthz takes no body");
        cr_assert_not(admits("POST /mcp HTTP/1.1\r\nOrigin: http://evil.example\r\nAuthorization: Bearer s3cret-token\r\n",
                             false));
        cr_assert(admits("POST /mcp HTTP/1.1\r\nOrigin: http://127.0.0.1:3000\r\n", true));
}

/* The gate and the front door decide who calls by one function: for every head, the gate
 * lets the body in exactly when the front door would take the request (a POST of JSON,
 * here) rather than refuse it for its path, its Origin or its token. */
Test(http_gate, admits_what_the_front_door_takes) {
        static const struct { const char *target, *path; } paths[] = {
                { "/mcp", "/mcp" }, { "/mcp?x=1", "/mcp" }, { "/mcpx", "/mcpx" }, { "/healthz", "/healthz" }, { "/", "/" },
        };
        static const char *const origins[] = { NULL, "http://127.0.0.1:3000", "http://evil.example" };
        static const char *const auths[] = { NULL, "Bearer s3cret-token", "bearer   s3cret-token", "Bearer s3cret-tokeN",
                                             "Basic czNjcmV0LXRva2Vu", "Bearer" };
        unsigned admitted = 0;

        for (size_t p = 0; p < sizeof paths / sizeof *paths; p++)
                for (size_t o = 0; o < sizeof origins / sizeof *origins; o++)
                        for (size_t a = 0; a < sizeof auths / sizeof *auths; a++)
                                for (int unix_peer = 0; unix_peer <= 1; unix_peer++) {
                                        struct http_request r = { .method = HTTP_POST, .path = paths[p].path,
                                                                  .unix_peer = unix_peer, .origin = origins[o],
                                                                  .authorization = auths[a],
                                                                  .content_type = "application/json" };
                                        struct http_verdict v;
                                        char text[512];
                                        bool gate;

                                        snprintf(text, sizeof text, "POST %s HTTP/1.1\r\n%s%s%s%s%s%s", paths[p].target,
                                                 origins[o] ? "Origin: " : "", origins[o] ? origins[o] : "",
                                                 origins[o] ? "\r\n" : "", auths[a] ? "Authorization: " : "",
                                                 auths[a] ? auths[a] : "", auths[a] ? "\r\n" : "");
                                        gate = admits(text, unix_peer);
                                        http_request_judge(&config, NULL, &r, &v);
                                        cr_assert_eq(gate, v.outcome == HTTP_PROCEED, "%s (unix peer: %d): gate %d, front door %d",
                                                     text, unix_peer, gate, v.outcome);
                                        admitted += gate;
                                }
        cr_assert_gt(admitted, 0);
}

Test(http_gate, caps_leave_the_reserve) {
        cr_assert_eq(http_gates_max_unproven(200, 25), 75);
        cr_assert_eq(http_gates_max_unproven_per_peer(75), 32);
        cr_assert_eq(http_gates_max_unproven(1024, 128), 256);
        cr_assert_eq(http_gates_max_unproven(65536, 256), 256, "at most 256: 256 heads of 64 KiB");
        cr_assert_eq(http_gates_max_unproven(40, 16), 8, "at least 8");
        cr_assert_eq(http_gates_max_unproven_per_peer(8), 4);
}
