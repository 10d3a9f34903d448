/* Fuzz target "scan": one line through json-scan.c and jsonrpc_scan_result(), checked
 * against json-c, whose reading the daemon passes a server's result on in place of.
 *
 * Input: the line (one holding '\n', which the framer never gives, is only scanned).
 *
 * Invariants:
 *   - text json_scan_valid() accepts, json-c's strict parser accepts too (the scanner is
 *     never laxer);
 *   - a line jsonrpc_scan_result() takes for a plain result is, to jsonrpc_parse(), a
 *     response with that integer id and a result, no error, and the span it gives (inside
 *     the line) is JSON text json-c reads as the same value as the parsed message's
 *     result;
 *   - the line jsonrpc_result_text_line() builds around that span is itself a plain
 *     result, with the same value, to both readers;
 *   - no head of such a line (what a server's line over the limit leaves to read) is
 *     taken by jsonrpc_scan_head_id() for an answer to another id;
 *   - text catalog_item_new() takes for a tool (issue 14: items kept as text) is an object
 *     whose "name" json-c reads as the item's key, and the item renamed
 *     (catalog_item_parts()) is JSON json-c reads as that object with "name" replaced. */
#include <json-c/json.h>
#include <string.h>

#include "catalog.h"
#include "fuzz-input.h"
#include "json-scan.h"
#include "jsonrpc.h"

static json_tokener *strict_tokener(void) {
        json_tokener *tok = json_tokener_new_ex(512);

        if (!tok)
                abort();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        return tok;
}

/* json-c's reading of text, as jsonrpc.c reads a line: *ok says if it is JSON at all (the
 * JSON null is a NULL object). */
static json_object *json_c_read(const char *text, size_t len, bool *ok) {
        json_tokener *tok = strict_tokener();
        json_object *o = json_tokener_parse_ex(tok, text, (int)len);
        size_t end = json_tokener_get_parse_end(tok);

        if (!o && json_tokener_get_error(tok) == json_tokener_continue) {
                o = json_tokener_parse_ex(tok, " ", 1);
                end = len;
        }
        *ok = json_tokener_get_error(tok) == json_tokener_success;
        for (; *ok && end < len; end++)
                *ok = strchr(" \t\r\n", text[end]) != NULL && text[end] != '\0';
        json_tokener_free(tok);
        return o;
}

static void check_result(struct jsonrpc_parser *parser, const char *line, size_t len,
                         const struct jsonrpc_result_text *r) {
        struct jsonrpc_msg m;
        json_object *value;
        bool ok;

        fuzz_check(r->text >= line && r->text + r->len <= line + len, "the result's span is outside the line");
        jsonrpc_parse(parser, line, len, &m);
        fuzz_check(m.kind == JSONRPC_RESPONSE, "a plain result that json-c does not read as a response (%s)",
                   m.error_message ? m.error_message : "");
        fuzz_check(!m.error && json_object_is_type(m.id, json_type_int) && json_object_get_int64(m.id) == r->id,
                   "json-c reads another id or an error");
        value = json_c_read(r->text, r->len, &ok);
        fuzz_check(ok, "the result's span is not JSON to json-c");
        fuzz_check(json_object_equal(value, m.result), "the span is another value than json-c's result: %s vs %s",
                   json_object_to_json_string(value), json_object_to_json_string(m.result));
        json_object_put(value);
        jsonrpc_msg_done(&m);
}

static void check_rebuilt(struct jsonrpc_parser *parser, const struct jsonrpc_result_text *r) {
        json_object *id = json_object_new_int64(r->id);
        struct iovec parts[5];
        struct jsonrpc_result_text again;
        int n = jsonrpc_result_text_line(id, r->text, r->len, parts);
        char *line = malloc((size_t)n), *p = line;

        fuzz_check(n > 0 && line, "jsonrpc_result_text_line");
        for (int i = 0; i < 5; i++, p += parts[i - 1].iov_len)
                memcpy(p, parts[i].iov_base, parts[i].iov_len);
        fuzz_check(line[n - 1] == '\n' && !memchr(line, '\n', (size_t)n - 1), "the line built is not one line");
        fuzz_check(jsonrpc_scan_result(line, (size_t)n - 1, &again), "the line built is not a plain result");
        fuzz_check(again.id == r->id && again.len == r->len && memcmp(again.text, r->text, r->len) == 0,
                   "the line built carries another id or result");
        check_result(parser, line, (size_t)n - 1, &again);
        free(line);
        json_object_put(id);
}

/* Every head up to 1 KiB: the scan is cheap, but a long line's would take the square. */
static void check_heads(const char *line, size_t size, const struct jsonrpc_result_text *r) {
        int64_t id;

        for (size_t n = 0; n <= size && n <= 1024; n++)
                if (jsonrpc_scan_head_id(line, n, &id))
                        fuzz_check(id == r->id, "the first %zu bytes name id %lld, the line %lld", n, (long long)id,
                                   (long long)r->id);
}

/* The item text o was read from, kept as a tool, and written renamed. */
static void check_item(const char *text, size_t len, json_object *o) {
        struct iovec parts[CATALOG_ITEM_PARTS];
        struct catalog_item *it;
        json_object *name, *renamed;
        size_t n, total = 0;
        char *joined, *p;
        bool ok;

        if (catalog_item_new(CATALOG_TOOLS, text, len, &it) < 0)
                return;
        fuzz_check(json_object_object_get_ex(o, "name", &name) && json_object_is_type(name, json_type_string) &&
                           strcmp(json_object_get_string(name), catalog_item_key(it)) == 0,
                   "the item's key is not json-c's name: %s", catalog_item_key(it));
        n = catalog_item_parts(it, "F__x", parts);
        for (size_t i = 0; i < n; i++)
                total += parts[i].iov_len;
        p = joined = malloc(total ? total : 1);
        fuzz_check(joined != NULL, "out of memory");
        for (size_t i = 0; i < n; p += parts[i].iov_len, i++)
                memcpy(p, parts[i].iov_base, parts[i].iov_len);
        renamed = json_c_read(joined, total, &ok);
        fuzz_check(ok, "the renamed item is not JSON: %.*s", (int)total, joined);
        json_object_object_add(o, "name", json_object_new_string("F__x"));
        fuzz_check(json_object_equal(renamed, o), "the renamed item is another object: %.*s", (int)total, joined);
        json_object_put(renamed);
        free(joined);
        free(it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *line = (const char *)data;
        struct jsonrpc_parser parser;
        struct jsonrpc_result_text r;
        json_object *o;
        bool ok;

        if (size > 1 << 20)
                return 0;
        if (json_scan_valid(line, size, 512)) {
                o = json_c_read(line, size, &ok);
                fuzz_check(ok, "the scanner accepts what json-c refuses");
                check_item(line, size, o);
                json_object_put(o);
        }
        /* The framer splits lines at '\n': a line never holds one. */
        if (memchr(line, '\n', size) || !jsonrpc_scan_result(line, size, &r))
                return 0;
        if (jsonrpc_parser_init(&parser) < 0)
                abort();
        check_result(&parser, line, size, &r);
        check_rebuilt(&parser, &r);
        check_heads(line, size, &r);
        jsonrpc_parser_done(&parser);
        return 0;
}
