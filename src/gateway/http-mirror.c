/* The headers that mirror a modern request's body; see http-mirror.h. */
#include "http-mirror.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "jsonrpc.h"
#include "macro.h"
#include "request-meta.h"

#define SENTINEL_START "=?base64?"
#define SENTINEL_END "?="

static int b64_value(char ch) {
        if (ch >= 'A' && ch <= 'Z')
                return ch - 'A';
        if (ch >= 'a' && ch <= 'z')
                return ch - 'a' + 26;
        if (ch >= '0' && ch <= '9')
                return ch - '0' + 52;
        return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Standard base64 (RFC 4648 section 4), padding required to a multiple of four. */
static int b64_decode(const char *in, size_t len, char *ret, size_t size) {
        size_t out = 0;

        if (len % 4 != 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i += 4) {
                int v[4], pad = 0;

                for (int k = 0; k < 4; k++) {
                        if (in[i + k] == '=' && i + 4 == len && k >= 2) {
                                v[k] = 0;
                                pad++;
                                continue;
                        }
                        if (pad || (v[k] = b64_value(in[i + k])) < 0)
                                return -EINVAL;
                }
                unsigned bits = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
                char bytes[3] = { (char)(bits >> 16), (char)(bits >> 8 & 0xff), (char)(bits & 0xff) };
                for (int k = 0; k < 3 - pad; k++) {
                        if (out + 1 >= size || bytes[k] == '\0')
                                return -EINVAL;
                        ret[out++] = bytes[k];
                }
        }
        ret[out] = '\0';
        return 0;
}

int http_mirror_decode(const char *value, char *ret, size_t size) {
        size_t len = strlen(value), start = strlen(SENTINEL_START), end = strlen(SENTINEL_END);

        if (len >= start + end && strncmp(value, SENTINEL_START, start) == 0 &&
            strcmp(value + len - end, SENTINEL_END) == 0)
                return b64_decode(value + start, len - start - end, ret, size);
        if (len >= size)
                return -EINVAL;
        memcpy(ret, value, len + 1);
        return 0;
}

/* The body's value Mcp-Name mirrors for m, or NULL when its method has none. */
static const char *named(const struct jsonrpc_msg *m, const char **ret_field) {
        json_object *v;

        if (strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0)
                *ret_field = "name";
        else if (strcmp(m->method, "resources/read") == 0)
                *ret_field = "uri";
        else
                return NULL;
        if (!json_object_is_type(m->params, json_type_object) || !json_object_object_get_ex(m->params, *ret_field, &v) ||
            !json_object_is_type(v, json_type_string))
                return ""; /* the method's own check says what is wrong with the body */
        return json_object_get_string(v);
}

static const char *meta_version(const struct jsonrpc_msg *m) {
        json_object *meta, *v;

        if (!json_object_is_type(m->params, json_type_object) || !json_object_object_get_ex(m->params, "_meta", &meta) ||
            !json_object_object_get_ex(meta, META_PROTOCOL_VERSION, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int http_mirror_check(const struct http_mirror *h, const struct jsonrpc_msg *m, char *why, size_t size) {
        const char *version = meta_version(m), *field = NULL, *name;
        _cleanup_free_ char *decoded = NULL;

        if (!h->protocol_version || !version || strcmp(h->protocol_version, version) != 0) {
                snprintf(why, size, "Header mismatch: %s", h->protocol_version ? "MCP-Protocol-Version does not match the body's _meta \"" META_PROTOCOL_VERSION "\""
                                                                      : "the MCP-Protocol-Version header is required");
                return -EINVAL;
        }
        if (!h->method || strcmp(h->method, m->method) != 0) {
                snprintf(why, size, "Header mismatch: %s", h->method ? "Mcp-Method does not match the body's method"
                                                                      : "the Mcp-Method header is required");
                return -EINVAL;
        }
        name = named(m, &field);
        if (!name)
                return 0;
        if (!h->name) {
                snprintf(why, size, "Header mismatch: the Mcp-Name header is required for %s", m->method);
                return -EINVAL;
        }
        decoded = malloc(strlen(h->name) + 1);
        if (!decoded || http_mirror_decode(h->name, decoded, strlen(h->name) + 1) < 0 || strcmp(decoded, name) != 0) {
                snprintf(why, size, "Header mismatch: Mcp-Name does not match the body's params.%s", field);
                return -EINVAL;
        }
        return 0;
}

int http_mirror_answer_status(const char *json, size_t len, const char **ret_reason) {
        static const char *const error_name[] = { "error" }, *const code_name[] = { "code" };
        struct json_member error, code;
        long n;

        *ret_reason = "OK";
        if (json_scan_members(json, len, JSONRPC_MAX_DEPTH, error_name, 1, &error) < 0 || error.count == 0 ||
            *error.value != '{' ||
            json_scan_members(error.value, (size_t)(error.end - error.value), JSONRPC_MAX_DEPTH, code_name, 1, &code) < 0 ||
            code.count == 0)
                return 200;
        n = strtol(code.value, NULL, 10);
        if (n == JSONRPC_METHOD_NOT_FOUND) {
                *ret_reason = "Not Found";
                return 404;
        }
        if (n == MCP_ERROR_HEADER_MISMATCH || n == MCP_ERROR_MISSING_CAPABILITY || n == MCP_ERROR_UNSUPPORTED_VERSION) {
                *ret_reason = "Bad Request";
                return 400;
        }
        return 200;
}
