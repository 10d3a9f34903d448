/* A request's era and the modern era's per-request fields (request-meta.c), and the HTTP
 * headers that mirror its body (http-mirror.c): what is modern, what is legacy, and each
 * error the specification names for the rest. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "http-mirror.h"
#include "jsonrpc.h"
#include "mcp-logging.h"
#include "protocol.h"
#include "request-meta.h"
#include "server-config.h"

#define META(fields) "{\"_meta\":{" fields "}}"
#define V "\"io.modelcontextprotocol/protocolVersion\":"
#define CAPS "\"io.modelcontextprotocol/clientCapabilities\":"

/* What the meta borrows lives in the params: kept until the next read. */
static json_object *kept;

static enum request_era read_text(const char *text, struct request_meta *ret) {
        json_object_put(kept);
        kept = text ? json_tokener_parse(text) : NULL;
        return request_meta_read(kept, ret);
}

Test(request_meta, no_version_is_legacy) {
        struct request_meta m;

        cr_assert_eq(read_text(NULL, &m), REQUEST_LEGACY);
        cr_assert_eq(read_text("{}", &m), REQUEST_LEGACY);
        cr_assert_eq(read_text("[1]", &m), REQUEST_LEGACY);
        cr_assert_eq(read_text("{\"_meta\":{\"progressToken\":1}}", &m), REQUEST_LEGACY);
        cr_assert_eq(read_text("{\"_meta\":\"x\"}", &m), REQUEST_LEGACY);
        read_text("{\"_meta\":{}}", &m);
        cr_assert_not(request_meta_present(kept));
        read_text(META(V "\"1900-01-01\""), &m);
        cr_assert(request_meta_present(kept));
        request_meta_done(&m);
}

Test(request_meta, modern_request_read) {
        struct request_meta m;

        cr_assert_eq(read_text(META(V "\"2026-07-28\"," CAPS "{\"elicitation\":{},\"roots\":{}},"
                                    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"c\",\"version\":\"1\"},"
                                    "\"io.modelcontextprotocol/logLevel\":\"debug\""),
                               &m),
                     REQUEST_MODERN);
        cr_assert_str_eq(m.version, MCP_MODERN_VERSION);
        cr_assert_not_null(m.info);
        cr_assert_eq(m.log_level, mcp_level_from_string("debug"));
        cr_assert_eq(request_meta_caps(&m), 1u << CLIENT_CAP_ELICITATION | 1u << CLIENT_CAP_ROOTS);
        cr_assert_eq(read_text(META(V "\"2026-07-28\"," CAPS "{}"), &m), REQUEST_MODERN);
        cr_assert_eq(m.log_level, -1);
        cr_assert_null(m.info);
        cr_assert_eq(request_meta_caps(&m), 0);
}

Test(request_meta, unsupported_version_lists_both_eras) {
        struct request_meta m;
        json_object *supported, *requested;

        cr_assert_eq(read_text(META(V "\"1900-01-01\"," CAPS "{}"), &m), REQUEST_REFUSED);
        cr_assert_eq(m.code, -32022);
        cr_assert_str_eq(m.message, "Unsupported protocol version: 1900-01-01");
        cr_assert(json_object_object_get_ex(m.data, "supported", &supported));
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(supported, 0)), "2026-07-28");
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(supported, 1)), "2025-11-25");
        cr_assert(json_object_object_get_ex(m.data, "requested", &requested));
        cr_assert_str_eq(json_object_get_string(requested), "1900-01-01");
        request_meta_done(&m);
        /* A legacy version is served, but after initialize: the message says so. */
        cr_assert_eq(read_text(META(V "\"2025-11-25\"," CAPS "{}"), &m), REQUEST_REFUSED);
        cr_assert_eq(m.code, -32022);
        cr_assert(strstr(m.message, "after initialize"));
        request_meta_done(&m);
}

Test(request_meta, malformed_fields_are_invalid_params) {
        struct request_meta m;

        cr_assert_eq(read_text(META(V "2026"), &m), REQUEST_REFUSED);
        cr_assert_eq(m.code, JSONRPC_INVALID_PARAMS);
        cr_assert_eq(read_text(META(V "\"2026-07-28\""), &m), REQUEST_REFUSED, "clientCapabilities is required");
        cr_assert_eq(m.code, JSONRPC_INVALID_PARAMS);
        cr_assert(strstr(m.message, "clientCapabilities"));
        cr_assert_eq(read_text(META(V "\"2026-07-28\"," CAPS "[]"), &m), REQUEST_REFUSED);
        cr_assert_eq(m.code, JSONRPC_INVALID_PARAMS);
        cr_assert_eq(read_text(META(V "\"2026-07-28\"," CAPS "{},\"io.modelcontextprotocol/logLevel\":\"loud\""), &m),
                     REQUEST_REFUSED);
        cr_assert_eq(m.code, JSONRPC_INVALID_PARAMS);
        /* clientInfo is for display: a malformed one is dropped, not refused. */
        cr_assert_eq(read_text(META(V "\"2026-07-28\"," CAPS "{},\"io.modelcontextprotocol/clientInfo\":3"), &m), REQUEST_MODERN);
        cr_assert_null(m.info);
}

/* ---- the headers ---- */

static struct jsonrpc_parser parser;

static int check(const char *body, const char *version, const char *method, const char *name, char *why) {
        struct jsonrpc_msg m;
        struct http_mirror h = { .protocol_version = version, .method = method, .name = name };
        int r;

        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
        jsonrpc_parse(&parser, body, strlen(body), &m);
        r = http_mirror_check(&h, &m, why, 200);
        jsonrpc_msg_done(&m);
        jsonrpc_parser_done(&parser);
        return r;
}

#define CALL(name) "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":" name ",\"_meta\":{" V "\"2026-07-28\"}}}"
#define READ(uri) "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":" uri ",\"_meta\":{" V "\"2026-07-28\"}}}"
#define LIST "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{" V "\"2026-07-28\"}}}"

Test(http_mirror, matching_headers_pass) {
        char why[200];

        cr_assert_eq(check(LIST, "2026-07-28", "tools/list", NULL, why), 0);
        cr_assert_eq(check(CALL("\"echo\""), "2026-07-28", "tools/call", "echo", why), 0);
        cr_assert_eq(check(READ("\"file:///a b\""), "2026-07-28", "resources/read", "file:///a b", why), 0);
        /* "Hello, 世界" in the sentinel form */
        cr_assert_eq(check(CALL("\"Hello, \\u4e16\\u754c\""), "2026-07-28", "tools/call", "=?base64?SGVsbG8sIOS4lueVjA==?=", why), 0);
}

Test(http_mirror, each_mismatch_is_refused) {
        char why[200];

        cr_assert_eq(check(LIST, NULL, "tools/list", NULL, why), -EINVAL);
        cr_assert(strstr(why, "MCP-Protocol-Version header is required"), "%s", why);
        cr_assert_eq(check(LIST, "2025-11-25", "tools/list", NULL, why), -EINVAL);
        cr_assert(strstr(why, "MCP-Protocol-Version does not match"), "%s", why);
        cr_assert_eq(check(LIST, "2026-07-28", NULL, NULL, why), -EINVAL);
        cr_assert(strstr(why, "Mcp-Method header is required"), "%s", why);
        cr_assert_eq(check(LIST, "2026-07-28", "tools/call", NULL, why), -EINVAL);
        cr_assert(strstr(why, "Mcp-Method does not match"), "%s", why);
        cr_assert_eq(check(CALL("\"echo\""), "2026-07-28", "tools/call", NULL, why), -EINVAL);
        cr_assert(strstr(why, "Mcp-Name header is required"), "%s", why);
        /* A load balancer that routed on the header would send "echo" where the body runs "rm". */
        cr_assert_eq(check(CALL("\"rm\""), "2026-07-28", "tools/call", "echo", why), -EINVAL);
        cr_assert(strstr(why, "Mcp-Name does not match the body's params.name"), "%s", why);
        cr_assert_eq(check(READ("\"file:///b\""), "2026-07-28", "resources/read", "file:///a", why), -EINVAL);
        cr_assert(strstr(why, "params.uri"), "%s", why);
        cr_assert_eq(check(CALL("\"echo\""), "2026-07-28", "tools/call", "=?base64?not base64?=", why), -EINVAL);
}

Test(http_mirror, decode) {
        char out[32];

        cr_assert_eq(http_mirror_decode("plain", out, sizeof out), 0);
        cr_assert_str_eq(out, "plain");
        cr_assert_eq(http_mirror_decode("=?base64?IHBhZGRlZCA=?=", out, sizeof out), 0);
        cr_assert_str_eq(out, " padded ");
        cr_assert_eq(http_mirror_decode("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", out, sizeof out), 0);
        cr_assert_str_eq(out, "=?base64?literal?=");
        cr_assert_eq(http_mirror_decode("=?base64?AA==?=", out, sizeof out), -EINVAL, "a NUL inside");
        cr_assert_eq(http_mirror_decode("=?base64?abc?=", out, sizeof out), -EINVAL, "not a multiple of four");
        cr_assert_eq(http_mirror_decode("=?base64?YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWZnaGlq?=", out, sizeof out), -EINVAL,
                     "longer than the buffer");
}

Test(http_mirror, answer_status) {
        const char *reason;

        cr_assert_eq(http_mirror_answer_status("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"error\":{\"code\":-32601}}}", 63,
                                               &reason),
                     200, "a result's own members are not an error");
        cr_assert_str_eq(reason, "OK");
#define ERR(code) "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"m\",\"code\":" code "}}"
        cr_assert_eq(http_mirror_answer_status(ERR("-32601"), strlen(ERR("-32601")), &reason), 404);
        cr_assert_str_eq(reason, "Not Found");
        cr_assert_eq(http_mirror_answer_status(ERR("-32020"), strlen(ERR("-32020")), &reason), 400);
        cr_assert_eq(http_mirror_answer_status(ERR("-32021"), strlen(ERR("-32021")), &reason), 400);
        cr_assert_eq(http_mirror_answer_status(ERR("-32022"), strlen(ERR("-32022")), &reason), 400);
        cr_assert_str_eq(reason, "Bad Request");
        cr_assert_eq(http_mirror_answer_status(ERR("-32603"), strlen(ERR("-32603")), &reason), 200, "a call's failure");
        cr_assert_eq(http_mirror_answer_status("not json", 8, &reason), 200);
}
