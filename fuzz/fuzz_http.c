/* Fuzz target "http": the checks of one request at the HTTP front door
 * (http_request_judge(), http-request.c, which http-front.c calls for every request: path,
 * Origin, bearer token, media types, protocol version, session id), the Mcp-Session-Id's
 * key (client_http_key_of()), a Last-Event-ID (sse_event_id_parse(), sse-event.c) and the
 * body as handle_post() reads it (jsonrpc_parse()).
 *
 * Input: [config: 1 byte] [method: 1] [peer: 1] then, for the path and each header, a byte
 * choosing absent / a well-formed value / the input's own bytes (take_string), then an
 * event id's numbers (16 bytes) and the body (the rest).
 *
 * Invariants:
 *   - a request that proceeds has the endpoint's path, no Origin or an allowed one, GET,
 *     POST or DELETE; on TCP a token whose secret is exactly what follows "Bearer " and
 *     its spaces (compared here by a model of our own); a POST is application/json, a GET
 *     accepts text/event-stream; a GET or DELETE names a session; a named session comes
 *     with no MCP-Protocol-Version or a supported one;
 *   - a refused one has a status among those the front door answers, a reason and a text,
 *     401 with WWW-Authenticate, 405 with Allow, and no token secret in what it says;
 *   - a session id's key is nonzero exactly for 32 lowercase hex digits, odd, and made of
 *     the first 15 of them;
 *   - an event id parses back to the numbers it was written from, and one that parses is
 *     written back as the very text it was;
 *   - the body is classified consistently (a request has a method and an id).
 *   - with http.oauth (config bit 2; no keys at hand, so no JWT is ever accepted): the
 *     resource's metadata is answered for a GET of its well-known path, alone or with the
 *     endpoint's after it, and only then; a bearer error is invalid_token with a 401 for a
 *     bearer token presented, and none without http.oauth.
 * And no crash, leak or undefined behaviour (ASan, UBSan). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client-http.h"
#include "fuzz-input.h"
#include "http-config.h"
#include "http-mirror.h"
#include "http-request.h"
#include "jsonrpc.h"
#include "protocol.h"
#include "request-meta.h"
#include "sse-event.h"

#define SECRET_A "token-a-0123456789abcdef"
#define SECRET_B "token-b-0123456789abcdef"

static struct http_token tokens[2] = {
        { .secret = SECRET_A, .secret_len = sizeof SECRET_A - 1, .user = "a", .uid = 1000 },
        { .secret = SECRET_B, .secret_len = sizeof SECRET_B - 1, .user = "b", .uid = 1001 },
};
static char *origins[] = { "https://app.example", NULL };

/* One of a few well-formed values, absent, or the input's own bytes (owned by *buf). */
static const char *pick(struct fuzz_input *in, const char *const *good, size_t n_good, char **buf) {
        unsigned c = take_choice(in, (unsigned)n_good + 2);

        if (c == 0)
                return NULL;
        if (c <= n_good)
                return good[c - 1];
        *buf = take_string(in, 200);
        return *buf;
}

/* The token named by "Bearer " (any case) and spaces, then exactly its secret: a model of
 * our own, not the code under test. */
static const struct http_token *model_token(const char *auth) {
        if (!auth || strlen(auth) < 7 || strncasecmp(auth, "bearer ", 7) != 0)
                return NULL;
        auth += 7;
        while (*auth == ' ')
                auth++;
        for (size_t i = 0; i < 2; i++)
                if (strcmp(auth, tokens[i].secret) == 0)
                        return &tokens[i];
        return NULL;
}

static bool lower_hex32(const char *id) {
        if (strlen(id) != CLIENT_HTTP_ID_LEN)
                return false;
        for (size_t i = 0; i < CLIENT_HTTP_ID_LEN; i++)
                if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return true;
}

static void check_session_key(const char *id) {
        int64_t key = client_http_key_of(id);
        uint64_t want = 0;

        fuzz_check(!key == !lower_hex32(id), "key %" PRId64 " for \"%s\"", key, id);
        if (!key)
                return;
        for (int i = 0; i < 15; i++)
                want = want * 16 + (uint64_t)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
        fuzz_check(key > 0 && (key & 1) && (uint64_t)key == (want | 1), "key %" PRId64 " for \"%s\"", key, id);
}

static void check_event_id(struct fuzz_input *in, const char *raw) {
        uint64_t seq = take_u32(in) | (uint64_t)take_u32(in) << 32, stream = take_u32(in) | (uint64_t)take_u32(in) << 32;
        uint64_t s2, k2;
        char text[64];

        /* Written from numbers (stream 0: "SEQ"), parsed back to them. */
        if (stream)
                snprintf(text, sizeof text, "%" PRIu64 "-%" PRIu64, seq, stream);
        else
                snprintf(text, sizeof text, "%" PRIu64, seq);
        fuzz_check(sse_event_id_parse(text, &s2, &k2) && s2 == seq && k2 == stream, "\"%s\" read back as %" PRIu64 "-%" PRIu64,
                   text, s2, k2);
        /* Read from anything: only what it would write itself. */
        if (!raw || !sse_event_id_parse(raw, &s2, &k2))
                return;
        if (k2)
                snprintf(text, sizeof text, "%" PRIu64 "-%" PRIu64, s2, k2);
        else
                snprintf(text, sizeof text, "%" PRIu64, s2);
        fuzz_check(strcmp(text, raw) == 0, "\"%s\" parsed as %s", raw, text);
}

static bool says_no_secret(const char *text) {
        return !text || (!strstr(text, SECRET_A) && !strstr(text, SECRET_B));
}

static void check_verdict(const struct http_config *h, const struct http_request *r, const struct http_verdict *v) {
        const char *endpoint = h->path ? h->path : HTTP_DEFAULT_PATH;
        const char *wk = "/.well-known/oauth-protected-resource";
        bool metadata_path = r->path && strncmp(r->path, wk, strlen(wk)) == 0 &&
                             (!r->path[strlen(wk)] || strcmp(r->path + strlen(wk), endpoint) == 0);

        fuzz_check((v->outcome == HTTP_RESOURCE_METADATA) == (h->oauth.issuer && r->method == HTTP_GET && metadata_path),
                   "resource metadata for %s", r->path ? r->path : "(none)");
        if (v->outcome == HTTP_RESOURCE_METADATA)
                return;
        fuzz_check(!v->bearer_error || (h->oauth.issuer && v->status == 401 && strcmp(v->bearer_error, "invalid_token") == 0 &&
                                        http_request_bearer_text(r->authorization)),
                   "bearer error %s with %d", v->bearer_error, v->status);

        if (v->outcome == HTTP_HEALTHZ) {
                fuzz_check(r->path && strcmp(r->path, "/healthz") == 0 && r->method == HTTP_GET, "healthz for %s", r->path);
                return;
        }
        if (v->outcome == HTTP_REFUSE) {
                fuzz_check(v->status == 400 || v->status == 401 || v->status == 403 || v->status == 404 || v->status == 405 ||
                                   v->status == 406 || v->status == 415,
                           "status %d", v->status);
                fuzz_check(v->reason && v->text, "status %d without words", v->status);
                fuzz_check(v->status != 401 || v->authenticate, "401 without WWW-Authenticate");
                fuzz_check(v->status != 405 || v->allow, "405 without Allow");
                fuzz_check(says_no_secret(v->text) && says_no_secret(v->log) && says_no_secret(v->reason), "a secret told");
                fuzz_check(v->status != 401 || (!r->unix_peer && !model_token(r->authorization)), "401 for a good token");
                return;
        }
        fuzz_check(v->outcome == HTTP_PROCEED, "outcome %d", v->outcome);
        fuzz_check(r->path && strcmp(r->path, endpoint) == 0, "proceeds on path %s", r->path ? r->path : "(none)");
        fuzz_check(!r->origin || http_origin_allowed(h, r->origin), "Origin %s let through", r->origin);
        fuzz_check(r->method != HTTP_OTHER, "method %d let through", r->method);
        if (r->unix_peer)
                fuzz_check(!v->token, "a token on the Unix socket");
        else
                fuzz_check(v->token && v->token == model_token(r->authorization), "Authorization \"%s\" let through",
                           r->authorization ? r->authorization : "(none)");
        if (r->method == HTTP_POST)
                fuzz_check(http_request_is_json(r->content_type) && strncasecmp(r->content_type, "application/json", 16) == 0,
                           "POST of %s", r->content_type ? r->content_type : "(none)");
        if (r->method == HTTP_GET)
                fuzz_check(!r->accept || strstr(r->accept, "text/event-stream") || strstr(r->accept, "*/*"), "GET accepting %s",
                           r->accept);
        fuzz_check(r->method == HTTP_POST || r->session_id, "a GET or DELETE without a session");
        if (r->session_id) {
                fuzz_check(!r->protocol_version || protocol_version_supported(r->protocol_version), "version %s let through",
                           r->protocol_version);
                fuzz_check(v->session_key == client_http_key_of(r->session_id), "key differs");
        } else
                fuzz_check(v->session_key == 0, "a key without a session id");
}

/* A request's modern-era reading (request-meta.c) and its headers' check (http-mirror.c):
 * modern only with a version the daemon serves, refused only with the specification's
 * codes; the headers a conforming client would send (its own body's values) always pass,
 * others never name what is not in the body. */
static void check_modern(const struct jsonrpc_msg *m) {
        struct request_meta meta;
        enum request_era era = request_meta_read(m->params, &meta);
        json_object *v;
        char why[200];

        fuzz_check(era != REQUEST_MODERN || protocol_modern_version(meta.version), "modern with %s", meta.version);
        fuzz_check(era != REQUEST_REFUSED || meta.code == JSONRPC_INVALID_PARAMS || meta.code == MCP_ERROR_UNSUPPORTED_VERSION,
                   "refused with %d", meta.code);
        fuzz_check((era == REQUEST_LEGACY) == !request_meta_present(m->params), "era %d", era);
        request_meta_done(&meta);
        if (era != REQUEST_MODERN)
                return;
        struct http_mirror h = { .protocol_version = meta.version, .method = m->method };
        if (json_object_object_get_ex(m->params, strcmp(m->method, "resources/read") == 0 ? "uri" : "name", &v) &&
            json_object_is_type(v, json_type_string) && strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v))
                h.name = json_object_get_string(v);
        if (h.name && strncmp(h.name, "=?base64?", 9) == 0)
                h.name = NULL; /* a client sends that one encoded */
        if (h.name || (strcmp(m->method, "tools/call") && strcmp(m->method, "prompts/get") && strcmp(m->method, "resources/read")))
                fuzz_check(http_mirror_check(&h, m, why, sizeof why) == 0, "a conforming client's headers refused: %s", why);
        h.method = "tools/call-other";
        fuzz_check(strcmp(m->method, h.method) == 0 || http_mirror_check(&h, m, why, sizeof why) < 0,
                   "another method let through");
}

static void check_body(const uint8_t *data, size_t size) {
        static struct jsonrpc_parser parser;
        static bool ready;
        struct jsonrpc_msg m;

        if (!ready) {
                fuzz_check(jsonrpc_parser_init(&parser) == 0, "parser");
                ready = true;
        }
        jsonrpc_parse(&parser, (const char *)data, size, &m);
        if (m.kind == JSONRPC_REQUEST)
                fuzz_check(m.method && m.id, "a request without method or id");
        if (m.kind == JSONRPC_NOTIFICATION)
                fuzz_check(m.method && !m.id, "a notification without method, or with an id");
        if (m.kind == JSONRPC_REQUEST)
                check_modern(&m);
        jsonrpc_msg_done(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const paths[] = { "/mcp", "/healthz", "/x", "/", "/mcp/", "/.well-known/oauth-protected-resource",
                                             "/.well-known/oauth-protected-resource/mcp",
                                             "/.well-known/oauth-protected-resource/x" };
        static char *audiences[] = { "http://127.0.0.1:8765/mcp", NULL };
        static const char *const origin_values[] = { "http://localhost:3000", "https://app.example", "http://127.0.0.1",
                                                      "http://[::1]:8", "http://localhost.evil.example", "null" };
        static const char *const auths[] = { "Bearer " SECRET_A, "bearer   " SECRET_B, "Bearer " SECRET_A "x", "Basic eDp5",
                                             "BEARER " SECRET_B, "Bearer", "Bearer " };
        static const char *const types[] = { "application/json", "application/json; charset=utf-8", "Application/JSON",
                                             "application/jsonx", "text/plain" };
        static const char *const accepts[] = { "text/event-stream", "application/json", "*/*",
                                               "application/json, text/event-stream" };
        static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01", "" };
        static const char *const ids[] = { "0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789abcdef",
                                           "0123456789abcdef0123456789abcde", "", "ffffffffffffffffffffffffffffffff" };
        static const char *const event_ids[] = { "1", "5-2", "18446744073709551615", "18446744073709551616", "1-0", "-1",
                                                 " 1", "01", "1-", "1-2-3" };
        struct fuzz_input in = { data, size };
        unsigned config = take_u8(&in);
        struct http_config h = { .tokens = tokens, .n_tokens = 2, .path = (config & 1) ? "/x" : NULL,
                                 .allowed_origins = (config & 2) ? origins : NULL,
                                 .oauth = { .issuer = (config & 4) ? "https://id.example" : NULL,
                                            .audiences = (config & 4) ? audiences : NULL } };
        char *bufs[8] = { 0 };
        const char *last_event_id;
        struct http_request r = { .method = (enum http_method)take_choice(&in, 4), .unix_peer = take_u8(&in) & 1 };
        struct http_verdict v;

        r.path = pick(&in, paths, ARRAY_LEN(paths), &bufs[0]);
        r.origin = pick(&in, origin_values, ARRAY_LEN(origin_values), &bufs[1]);
        r.authorization = pick(&in, auths, ARRAY_LEN(auths), &bufs[2]);
        r.content_type = pick(&in, types, ARRAY_LEN(types), &bufs[3]);
        r.accept = pick(&in, accepts, ARRAY_LEN(accepts), &bufs[4]);
        r.protocol_version = pick(&in, versions, ARRAY_LEN(versions), &bufs[5]);
        r.session_id = pick(&in, ids, ARRAY_LEN(ids), &bufs[6]);
        last_event_id = pick(&in, event_ids, ARRAY_LEN(event_ids), &bufs[7]);

        http_request_judge(&h, NULL, &r, &v);
        check_verdict(&h, &r, &v);
        if (r.session_id)
                check_session_key(r.session_id);
        check_event_id(&in, last_event_id);
        check_body(in.data, in.size);
        for (size_t i = 0; i < ARRAY_LEN(bufs); i++)
                free(bufs[i]);
        return 0;
}
