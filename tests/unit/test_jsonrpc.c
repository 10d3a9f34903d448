/* Unit tests for jsonrpc.c: classification of lines and the message builders. */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/buffer.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

static struct jsonrpc_parser parser;
static struct jsonrpc_msg msg;

static void setup(void) {
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
        cr_assert_not_null(parser.tok);
}

static void teardown(void) {
        jsonrpc_msg_done(&msg);
        jsonrpc_parser_done(&parser);
}

TestSuite(jsonrpc, .init = setup, .fini = teardown);

static enum jsonrpc_kind parse_len(const char *line, size_t len) {
        jsonrpc_msg_done(&msg);
        return jsonrpc_parse(&parser, line, len, &msg);
}

static enum jsonrpc_kind parse(const char *line) {
        return parse_len(line, strlen(line));
}

/* line must be rejected with code; the id the error answer echoes must be absent. */
static void expect_invalid(const char *line, int code) {
        enum jsonrpc_kind k = parse(line);

        cr_assert_eq(k, JSONRPC_INVALID, "%s: kind %d, expected INVALID", line, k);
        cr_assert_eq(msg.kind, JSONRPC_INVALID);
        cr_assert_eq(msg.error_code, code, "%s: code %d, expected %d", line, msg.error_code, code);
        cr_assert_not_null(msg.error_message);
}

static void expect_id_int(int64_t want) {
        cr_assert_not_null(msg.id);
        cr_assert(json_object_is_type(msg.id, json_type_int), "id is %s, expected an integer",
                  json_type_to_name(json_object_get_type(msg.id)));
        cr_assert_eq(json_object_get_int64(msg.id), want);
}

static void expect_id_string(const char *want) {
        cr_assert_not_null(msg.id);
        cr_assert(json_object_is_type(msg.id, json_type_string));
        cr_assert_str_eq(json_object_get_string(msg.id), want);
}

/* The compact text of obj, for exact comparisons. */
static const char *text(json_object *obj) {
        return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* Requests and notifications. */

Test(jsonrpc, request_int_id) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{\"cursor\":\"c\"}}"),
                     JSONRPC_REQUEST);
        cr_assert_eq(msg.kind, JSONRPC_REQUEST);
        expect_id_int(7);
        cr_assert_str_eq(msg.method, "tools/list");
        cr_assert_not_null(msg.params);
        cr_assert(json_object_is_type(msg.params, json_type_object));
        cr_assert_str_eq(text(msg.params), "{\"cursor\":\"c\"}");
        cr_assert_null(msg.result);
        cr_assert_null(msg.error);
        cr_assert_not_null(msg.root);
}

Test(jsonrpc, request_string_id) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_string("req-1");
        cr_assert_str_eq(msg.method, "ping");
        cr_assert_null(msg.params);
}

Test(jsonrpc, request_numeric_string_id) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_string("1");
}

Test(jsonrpc, request_empty_string_id) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_string("");
}

Test(jsonrpc, request_id_zero) {
        /* 0 is a real id, not a missing one. */
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_int(0);
}

Test(jsonrpc, request_negative_id) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":-42,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_int(-42);
}

Test(jsonrpc, request_int64_id) {
        /* 2^53 + 1: would be rounded by a double. */
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_int(9007199254740993LL);
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_int(INT64_MAX);
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775807,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_int(INT64_MIN + 1);
}

Test(jsonrpc, request_uint64_id_echoed_exactly) {
        json_object *answer;

        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":18446744073709551614,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        answer = jsonrpc_result(msg.id, NULL);
        cr_assert_str_eq(text(answer), "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551614,\"result\":{}}");
        json_object_put(answer);
}

/* json-c clamps an integer beyond 64 bits to the nearest bound, so an answer would carry
 * another id than the one sent. The bounds themselves are refused too: a clamped value
 * cannot be told from them. */
Test(jsonrpc, ids_beyond_64_bits_refused) {
        static const char *const ids[] = {
                "18446744073709551616", "99999999999999999999999", "18446744073709551615",
                "-9223372036854775809", "-99999999999999999999999", "-9223372036854775808",
        };
        char line[160];

        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
                snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}", ids[i]);
                expect_invalid(line, JSONRPC_INVALID_REQUEST);
                cr_assert_null(msg.id, "%s: an id that is not the one sent must not be echoed", line);
                cr_assert_not_null(strstr(msg.error_message, "64"), "%s: %s", line, msg.error_message);
        }
}

/* Routes are found by a hash of the client's id (router.c): ids json-c finds equal must
 * hash alike, however they were written or stored; others apart, and the seed matters. */
static uint64_t id_hash(const char *json, uint64_t seed) {
        json_object *id = json_tokener_parse(json);
        uint64_t h;

        cr_assert_not_null(id, "%s", json);
        h = jsonrpc_id_hash(id, seed);
        json_object_put(id);
        return h;
}

Test(jsonrpc, id_hash) {
        static const char *const distinct[] = { "0", "1", "-1", "\"1\"", "\"\"", "\"a\"", "\"a\\u0000\"", "\"a\\u0000b\"",
                                                "9223372036854775807", "9223372036854775808", "18446744073709551614",
                                                "-9223372036854775807" };
        json_object *stored = json_object_new_uint64(5);

        for (size_t i = 0; i < sizeof distinct / sizeof distinct[0]; i++) {
                cr_assert_eq(id_hash(distinct[i], 7), id_hash(distinct[i], 7), "%s", distinct[i]);
                cr_assert_neq(id_hash(distinct[i], 7), id_hash(distinct[i], 8), "%s: the seed is ignored", distinct[i]);
                for (size_t j = 0; j < i; j++)
                        cr_assert_neq(id_hash(distinct[i], 7), id_hash(distinct[j], 7), "%s and %s", distinct[i], distinct[j]);
        }
        cr_assert_eq(id_hash("\"\\u0041\"", 7), id_hash("\"A\"", 7), "an escape and its character");
        cr_assert_eq(jsonrpc_id_hash(stored, 7), id_hash("5", 7), "5 stored as uint64 and as int64");
        json_object_put(stored);
}

Test(jsonrpc, request_field_order) {
        cr_assert_eq(parse("{\"method\":\"ping\",\"params\":[1,2],\"id\":3,\"jsonrpc\":\"2.0\"}"), JSONRPC_REQUEST);
        expect_id_int(3);
        cr_assert(json_object_is_type(msg.params, json_type_array));
}

Test(jsonrpc, request_keeps_unknown_fields) {
        json_object *extra;

        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"_meta\":{\"k\":true}}"),
                     JSONRPC_REQUEST);
        cr_assert(json_object_object_get_ex(msg.root, "_meta", &extra));
        cr_assert_str_eq(text(extra), "{\"k\":true}");
}

Test(jsonrpc, request_params_wrong_type_left_to_method) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":5}"), JSONRPC_REQUEST);
        cr_assert(json_object_is_type(msg.params, json_type_int));
}

Test(jsonrpc, notification) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{}}"),
                     JSONRPC_NOTIFICATION);
        cr_assert_eq(msg.kind, JSONRPC_NOTIFICATION);
        cr_assert_null(msg.id);
        cr_assert_str_eq(msg.method, "notifications/initialized");
        cr_assert_not_null(msg.params);
}

Test(jsonrpc, notification_without_params) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}"), JSONRPC_NOTIFICATION);
        cr_assert_null(msg.params);
        cr_assert_null(msg.id);
}

/* Responses. */

Test(jsonrpc, response_result) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"x\":1}}"), JSONRPC_RESPONSE);
        expect_id_int(3);
        cr_assert_not_null(msg.result);
        cr_assert_str_eq(text(msg.result), "{\"x\":1}");
        cr_assert_null(msg.error);
        cr_assert_null(msg.method);
}

Test(jsonrpc, response_null_result) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":null}"), JSONRPC_RESPONSE);
        expect_id_string("a");
        cr_assert_null(msg.error);
}

Test(jsonrpc, response_error) {
        json_object *code;

        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32601,\"message\":\"nope\"}}"),
                     JSONRPC_RESPONSE);
        expect_id_int(4);
        cr_assert_null(msg.result);
        cr_assert_not_null(msg.error);
        cr_assert(json_object_object_get_ex(msg.error, "code", &code));
        cr_assert_eq(json_object_get_int(code), -32601);
}

Test(jsonrpc, response_error_not_object) {
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":\"nope\"}", JSONRPC_INVALID_REQUEST);
        expect_id_int(4);
        cr_assert_not_null(strstr(msg.error_message, "\"error\""));
}

Test(jsonrpc, response_result_and_error) {
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}",
                       JSONRPC_INVALID_REQUEST);
        expect_id_int(5);
        cr_assert_not_null(strstr(msg.error_message, "exactly one"));
}

Test(jsonrpc, neither_call_nor_response) {
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":6}", JSONRPC_INVALID_REQUEST);
        expect_id_int(6);
        expect_invalid("{\"jsonrpc\":\"2.0\"}", JSONRPC_INVALID_REQUEST);
        cr_assert_null(msg.id);
}

/* An invalid message with an id and no method was meant as an answer: its id is of the
 * receiver's numbering, so it is never answered under it. */
Test(jsonrpc, broken_responses_told_apart) {
        static const char *const broken[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}",
                "{\"jsonrpc\":\"2.0\",\"id\":5}",
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":\"not an object\"}",
                "{\"jsonrpc\":\"1.0\",\"id\":5,\"result\":{}}",
                "{\"id\":\"5\",\"result\":{}}",
        };
        static const char *const others[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}",        /* a request */
                "{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}", /* a request */
                "{\"jsonrpc\":\"2.0\",\"result\":{}}",                   /* no id */
                "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}",      /* no valid id */
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}",         /* not JSON */
                "[{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}]",
        };

        for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
                expect_invalid(broken[i], JSONRPC_INVALID_REQUEST);
                cr_assert(jsonrpc_is_broken_response(&msg), "%s", broken[i]);
        }
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
                cr_assert_eq(parse(others[i]), JSONRPC_INVALID, "%s", others[i]);
                cr_assert_not(jsonrpc_is_broken_response(&msg), "%s", others[i]);
        }
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"), JSONRPC_RESPONSE);
        cr_assert_not(jsonrpc_is_broken_response(&msg), "a valid response is not broken");
}

Test(jsonrpc, result_without_id) {
        expect_invalid("{\"jsonrpc\":\"2.0\",\"result\":{}}", JSONRPC_INVALID_REQUEST);
        cr_assert_null(msg.id);
}

/* Parse errors. */

Test(jsonrpc, invalid_json) {
        expect_invalid("{\"jsonrpc\":\"2.0\",", JSONRPC_PARSE_ERROR);
        cr_assert_null(msg.id);
        cr_assert_null(msg.root);
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",}", JSONRPC_PARSE_ERROR);
        cr_assert_null(msg.id, "an id in a line that is not JSON cannot be trusted");
        expect_invalid("{'jsonrpc':'2.0'}", JSONRPC_PARSE_ERROR);
        expect_invalid("", JSONRPC_PARSE_ERROR);
        expect_invalid("   ", JSONRPC_PARSE_ERROR);
}

Test(jsonrpc, trailing_garbage) {
        expect_invalid("{\"a\":1} x", JSONRPC_PARSE_ERROR);
        cr_assert_null(msg.root);
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}{}", JSONRPC_PARSE_ERROR);
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},", JSONRPC_PARSE_ERROR);
}

Test(jsonrpc, trailing_whitespace) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} \t\r\n "), JSONRPC_REQUEST);
        expect_id_int(1);
}

Test(jsonrpc, leading_whitespace) {
        cr_assert_eq(parse(" \t{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}"), JSONRPC_NOTIFICATION);
}

/* Regression test; it was a bug in src/jsonrpc.c:36 only_whitespace(): strchr(" \t\r\n", '\0') finds the terminator,
 * so NUL bytes after the value count as whitespace and the line is accepted. */
Test(jsonrpc, trailing_nul) {
        static const char line[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0";

        cr_assert_eq(parse_len(line, sizeof line - 1), JSONRPC_INVALID);
        cr_assert_eq(msg.error_code, JSONRPC_PARSE_ERROR);
}

Test(jsonrpc, embedded_nul_with_garbage) {
        static const char line[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0x";

        cr_assert_eq(parse_len(line, sizeof line - 1), JSONRPC_INVALID);
        cr_assert_eq(msg.error_code, JSONRPC_PARSE_ERROR);
}

Test(jsonrpc, invalid_utf8) {
        expect_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}", JSONRPC_PARSE_ERROR);
        expect_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\x28\"}", JSONRPC_PARSE_ERROR);
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":{\"k\":\"\xe2\x82\"}}",
                       JSONRPC_PARSE_ERROR);
        cr_assert_null(msg.id);
}

/* What json-c 0.16 reads but RFC 3629 refuses (overlong, surrogate, beyond U+10FFFF), and
 * lone surrogate escapes, which json-c turns into U+FFFD: parse errors with no id. */
Test(jsonrpc, invalid_text_json_c_reads) {
        static const char *const bad[] = {
                "\xc0\x80", "\xe0\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xf7\xbf\xbf\xbf",
                "\\ud800", "\\udfff", "\\ud800\\u0041", "\\udc00\\ud800",
        };
        char line[160];

        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
                snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"a\",\"params\":{\"k\":\"%s\"}}", bad[i]);
                expect_invalid(line, JSONRPC_PARSE_ERROR);
                cr_assert(msg.refused_text, "%zu", i);
                cr_assert_null(msg.id, "%zu: a client's error must not echo an id read from such text", i);
                cr_assert_null(jsonrpc_answer_id(&msg), "%zu: a request is no answer", i);
                snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"k\":\"%s\"}}", bad[i]);
                expect_invalid(line, JSONRPC_PARSE_ERROR);
                cr_assert_null(msg.id);
                cr_assert_eq(json_object_get_int(jsonrpc_answer_id(&msg)), 7, "%zu: the answer's request is known", i);
        }
        /* a pair, and the highest code point, stay valid */
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"method\":\"\\ud83d\\ude00 \xf4\x8f\xbf\xbf\"}"), JSONRPC_NOTIFICATION);
        cr_assert_not(msg.refused_text);
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"), JSONRPC_RESPONSE);
        cr_assert_eq(json_object_get_int(jsonrpc_answer_id(&msg)), 3);
}

Test(jsonrpc, valid_utf8) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"method\":\"caf\xc3\xa9/\xe2\x82\xac\"}"), JSONRPC_NOTIFICATION);
        cr_assert_str_eq(msg.method, "caf\xc3\xa9/\xe2\x82\xac");
}

/* Valid JSON that is not a JSON-RPC object. */

Test(jsonrpc, not_an_object) {
        expect_invalid("5", JSONRPC_INVALID_REQUEST);
        cr_assert_not_null(msg.root);
        expect_invalid("\"x\"", JSONRPC_INVALID_REQUEST);
        expect_invalid("5 ", JSONRPC_INVALID_REQUEST);
        expect_invalid("true ", JSONRPC_INVALID_REQUEST);
        cr_assert_not_null(strstr(msg.error_message, "object"));
}

/* Literals and numbers end only when something follows; the line end must do. */
Test(jsonrpc, not_an_object_literals) {
        expect_invalid("true", JSONRPC_INVALID_REQUEST);
        expect_invalid("false", JSONRPC_INVALID_REQUEST);
        expect_invalid("null", JSONRPC_INVALID_REQUEST);
        expect_invalid("12", JSONRPC_INVALID_REQUEST);
        expect_invalid("-1", JSONRPC_INVALID_REQUEST);
}

Test(jsonrpc, batch) {
        expect_invalid("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", JSONRPC_INVALID_REQUEST);
        cr_assert_not_null(strstr(msg.error_message, "batch"), "message: %s", msg.error_message);
        cr_assert_null(msg.id);
        expect_invalid("[]", JSONRPC_INVALID_REQUEST);
        cr_assert_not_null(strstr(msg.error_message, "batch"));
}

Test(jsonrpc, missing_version) {
        expect_invalid("{\"id\":4,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST);
        expect_id_int(4);
        cr_assert_not_null(strstr(msg.error_message, "jsonrpc"));
}

Test(jsonrpc, wrong_version) {
        expect_invalid("{\"jsonrpc\":\"1.0\",\"id\":\"k\",\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST);
        expect_id_string("k");
        expect_invalid("{\"jsonrpc\":2.0,\"id\":8,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST);
        expect_id_int(8);
        expect_invalid("{\"jsonrpc\":\"2.0 \",\"id\":9,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST);
        expect_id_int(9);
        expect_invalid("{\"jsonrpc\":null,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST);
        cr_assert_null(msg.id);
}

Test(jsonrpc, bad_id_types) {
        static const char *const lines[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}",
        };

        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
                expect_invalid(lines[i], JSONRPC_INVALID_REQUEST);
                cr_assert_null(msg.id, "%s: an invalid id must not be echoed", lines[i]);
                cr_assert_not_null(strstr(msg.error_message, "\"id\""), "%s: %s", lines[i], msg.error_message);
        }
}

Test(jsonrpc, method_not_a_string) {
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", JSONRPC_INVALID_REQUEST);
        expect_id_int(1);
        cr_assert_null(msg.method);
        cr_assert_not_null(strstr(msg.error_message, "\"method\""));
        expect_invalid("{\"jsonrpc\":\"2.0\",\"method\":null}", JSONRPC_INVALID_REQUEST);
        expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":[\"a\"]}", JSONRPC_INVALID_REQUEST);
}

/* Nesting. */

static char *nested(int depth) {
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":";
        size_t hl = strlen(head), len = hl + 2 * (size_t)depth + 2;
        char *s = malloc(len);

        cr_assert_not_null(s);
        memcpy(s, head, hl);
        memset(s + hl, '[', (size_t)depth);
        memset(s + hl + depth, ']', (size_t)depth);
        s[len - 2] = '}';
        s[len - 1] = '\0';
        return s;
}

Test(jsonrpc, deep_nesting) {
        char *s = nested(200);

        cr_assert_eq(parse(s), JSONRPC_REQUEST, "200 levels of params must parse");
        cr_assert(json_object_is_type(msg.params, json_type_array));
        free(s);
}

Test(jsonrpc, too_deep) {
        char *s = nested(600);

        expect_invalid(s, JSONRPC_PARSE_ERROR);
        free(s);
}

Test(jsonrpc, parser_reusable) {
        expect_invalid("{\"jsonrpc\":", JSONRPC_PARSE_ERROR);
        /* The half-parsed line above must not leak into the next one. */
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        expect_id_int(2);
        expect_invalid("[", JSONRPC_PARSE_ERROR);
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"), JSONRPC_NOTIFICATION);
}

Test(jsonrpc, msg_done_resets) {
        cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), JSONRPC_REQUEST);
        jsonrpc_msg_done(&msg);
        cr_assert_eq(msg.kind, JSONRPC_INVALID);
        cr_assert_null(msg.root);
        cr_assert_null(msg.id);
        cr_assert_null(msg.method);
}

Test(jsonrpc, parser_done_twice) {
        jsonrpc_parser_done(&parser);
        cr_assert_null(parser.tok);
        jsonrpc_parser_done(&parser);
        cr_assert_null(parser.tok);
}

Test(jsonrpc, id_valid) {
        json_object *o;

        cr_assert(jsonrpc_id_valid(o = json_object_new_int(1)));
        json_object_put(o);
        cr_assert(jsonrpc_id_valid(o = json_object_new_int64(-5)));
        json_object_put(o);
        cr_assert(jsonrpc_id_valid(o = json_object_new_string("x")));
        json_object_put(o);
        cr_assert_not(jsonrpc_id_valid(o = json_object_new_double(1.0)));
        json_object_put(o);
        cr_assert_not(jsonrpc_id_valid(o = json_object_new_boolean(1)));
        json_object_put(o);
        cr_assert_not(jsonrpc_id_valid(o = json_object_new_object()));
        json_object_put(o);
        cr_assert_not(jsonrpc_id_valid(NULL));
        cr_assert(jsonrpc_id_valid(o = json_object_new_uint64(UINT64_MAX - 1)));
        json_object_put(o);
        cr_assert_not(jsonrpc_id_valid(o = json_object_new_uint64(UINT64_MAX)), "a clamped value");
        json_object_put(o);
        cr_assert_not(jsonrpc_id_valid(o = json_object_new_int64(INT64_MIN)), "a clamped value");
        json_object_put(o);
}

/* Builders. */

Test(jsonrpc, build_result) {
        json_object *id = json_object_new_int(7), *res = json_object_new_object(), *m;

        json_object_object_add(res, "ok", json_object_new_boolean(1));
        m = jsonrpc_result(id, res);
        cr_assert_str_eq(text(m), "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}");
        json_object_put(m);
        json_object_put(id);
}

Test(jsonrpc, build_result_defaults) {
        json_object *m = jsonrpc_result(NULL, NULL);

        cr_assert_str_eq(text(m), "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
        json_object_put(m);
}

Test(jsonrpc, build_error) {
        json_object *id = json_object_new_string("a"), *m;

        m = jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND, "Method not found", NULL);
        cr_assert_str_eq(text(m),
                         "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}");
        json_object_put(m);
        json_object_put(id);
}

Test(jsonrpc, build_error_with_data) {
        json_object *data = json_object_new_array(), *m;

        json_object_array_add(data, json_object_new_string("2025-11-25"));
        m = jsonrpc_error(NULL, JSONRPC_INVALID_PARAMS, "Unsupported protocol version", data);
        cr_assert_str_eq(text(m),
                         "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32602,"
                         "\"message\":\"Unsupported protocol version\",\"data\":[\"2025-11-25\"]}}");
        json_object_put(m);
}

Test(jsonrpc, builder_borrows_id) {
        json_object *id = json_object_new_int(3), *m = jsonrpc_result(id, NULL);

        /* The message holds its own reference: dropping ours must not free the id ... */
        cr_assert_eq(json_object_put(id), 0);
        cr_assert_str_eq(text(m), "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
        /* ... and the message's reference is the last one. */
        cr_assert_eq(json_object_put(m), 1);
}

/* m as the daemon writes it: jsonrpc_line()'s parts, appended to out. */
static int write_line(struct evbuffer *out, json_object *m) {
        struct iovec parts[2];
        int n = jsonrpc_line(m, parts);

        cr_assert_gt(n, 0);
        cr_assert_eq(parts[0].iov_len + parts[1].iov_len, (size_t)n);
        evbuffer_add(out, parts[0].iov_base, parts[0].iov_len);
        evbuffer_add(out, parts[1].iov_base, parts[1].iov_len);
        return n;
}

static char *buffer_text(struct evbuffer *b) {
        size_t len = evbuffer_get_length(b);
        char *s = malloc(len + 1);

        cr_assert_not_null(s);
        cr_assert_eq(evbuffer_copyout(b, s, len), (ssize_t)len);
        s[len] = '\0';
        return s;
}

static size_t count_char(const char *s, char c) {
        size_t n = 0;

        for (; *s; s++)
                n += *s == c;
        return n;
}

Test(jsonrpc, write_line) {
        struct evbuffer *out = evbuffer_new();
        json_object *m = jsonrpc_result(NULL, NULL);
        static const char want[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n";
        char *s;

        cr_assert_eq(write_line(out, m), (int)strlen(want));
        s = buffer_text(out);
        cr_assert_str_eq(s, want);
        free(s);
        json_object_put(m);
        evbuffer_free(out);
}

Test(jsonrpc, write_escapes_newlines) {
        struct evbuffer *out = evbuffer_new();
        json_object *res = json_object_new_object(), *m;
        char *s;
        int n;

        json_object_object_add(res, "text", json_object_new_string("line1\nline2\r\n/path"));
        m = jsonrpc_result(NULL, res);
        n = write_line(out, m);
        s = buffer_text(out);
        cr_assert_eq(n, (int)strlen(s));
        cr_assert_eq(count_char(s, '\n'), 1, "only the terminator may be a raw newline: %s", s);
        cr_assert_eq(s[strlen(s) - 1], '\n');
        cr_assert_eq(count_char(s, '\r'), 0);
        cr_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"text\":\"line1\\nline2\\r\\n/path\"}}\n");
        free(s);
        json_object_put(m);
        evbuffer_free(out);
}

Test(jsonrpc, write_appends) {
        struct evbuffer *out = evbuffer_new();
        json_object *a = jsonrpc_result(NULL, NULL), *b = jsonrpc_error(NULL, -32700, "Parse error", NULL);
        char *s;

        evbuffer_add(out, "x", 1);
        cr_assert_gt(write_line(out, a), 0);
        cr_assert_gt(write_line(out, b), 0);
        s = buffer_text(out);
        cr_assert_str_eq(s, "x{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n"
                            "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}\n");
        free(s);
        json_object_put(a);
        json_object_put(b);
        evbuffer_free(out);
}

/* Parses a request line, answers it, and returns the written answer. */
static char *echo(const char *line) {
        struct evbuffer *out = evbuffer_new();
        json_object *reply;
        char *s;

        cr_assert_eq(parse(line), JSONRPC_REQUEST, "%s", line);
        reply = jsonrpc_result(msg.id, NULL);
        jsonrpc_msg_done(&msg); /* the reply must not depend on the request staying alive */
        cr_assert_gt(write_line(out, reply), 0);
        json_object_put(reply);
        s = buffer_text(out);
        evbuffer_free(out);
        return s;
}

Test(jsonrpc, id_echo_keeps_type) {
        static const struct { const char *id, *want; } cases[] = {
                { "1", "1" },
                { "\"1\"", "\"1\"" },
                { "0", "0" },
                { "-7", "-7" },
                { "9007199254740993", "9007199254740993" },
                { "9223372036854775807", "9223372036854775807" },
                { "\"a\\\"b\"", "\"a\\\"b\"" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char line[128], want[128], *got;

                snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}", cases[i].id);
                snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", cases[i].want);
                got = echo(line);
                cr_assert_str_eq(got, want);
                free(got);
        }
}

Test(jsonrpc, answer_parses_back) {
        char *s = echo("{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"ping\"}");

        cr_assert_eq(parse_len(s, strlen(s) - 1), JSONRPC_RESPONSE);
        expect_id_string("1");
        free(s);
}

/* A server's plain result, recognised without parsing it. */

static bool scan(const char *line, struct jsonrpc_result_text *r) {
        return jsonrpc_scan_result(line, strlen(line), r);
}

Test(jsonrpc, scan_result_finds_the_value) {
        struct jsonrpc_result_text r;

        cr_assert(scan("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}", &r));
        cr_assert_eq(r.id, 7);
        cr_assert_eq(r.len, strlen("{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}"));
        cr_assert(memcmp(r.text, "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}", r.len) == 0);
        /* any order, spacing, and members the envelope does not need */
        cr_assert(scan(" { \"result\" : [ 1 , 2 ] , \"x\":{\"error\":1}, \"id\" : 9223372036854775807 ,\"jsonrpc\":\"2.0\" } ", &r));
        cr_assert_eq(r.id, INT64_MAX);
        cr_assert_eq(r.len, strlen("[ 1 , 2 ]"));
        cr_assert(memcmp(r.text, "[ 1 , 2 ]", r.len) == 0);
        cr_assert(scan("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":null}", &r));
        cr_assert_eq(r.id, 0);
        cr_assert(memcmp(r.text, "null", r.len) == 0);
}

/* Everything else takes json-c's path, which classifies it (or calls it garbage). */
Test(jsonrpc, scan_result_leaves_the_rest_to_json_c) {
        static const char *const lines[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"m\"}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"method\":\"x\"}",
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":-1,\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":01,\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775808,\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"result\":[]}",
                "{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
                "{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1}",
                "{\"id\":1,\"result\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"\\u0065rror\":{\"code\":1,\"message\":\"m\"}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"res\\u0075lt\":{}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}} x",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},}",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}",
                "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]",
                "{}", "", "null",
        };
        struct jsonrpc_result_text r;

        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
                cr_assert_not(scan(lines[i], &r), "taken for a plain result: %s", lines[i]);
}

Test(jsonrpc, result_text_line) {
        json_object *id = json_object_new_string("a\"b");
        const char *raw = "{ \"x\" : [1, 2.50] }";
        struct iovec parts[5];
        char line[128] = "";
        int n = jsonrpc_result_text_line(id, raw, strlen(raw), parts);

        cr_assert_gt(n, 0);
        for (int i = 0; i < 5; i++)
                strncat(line, parts[i].iov_base, parts[i].iov_len);
        cr_assert_eq((size_t)n, strlen(line));
        cr_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"result\":{ \"x\" : [1, 2.50] }}\n");
        json_object_put(id);
}

/* Nesting as json-c counts it, the envelope included: a result json-c refuses as too deep
 * is not taken for a plain result either. */
Test(jsonrpc, scan_result_depth_as_json_c) {
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":";
        char *line = malloc(2048);
        struct jsonrpc_result_text r;

        for (size_t n = 509; n <= 512; n++)
                for (int scalar = 0; scalar < 2; scalar++) {
                        size_t len = strlen(head);
                        memcpy(line, head, len);
                        memset(line + len, '[', n);
                        len += n;
                        if (scalar)
                                line[len++] = '1';
                        memset(line + len, ']', n);
                        len += n;
                        line[len++] = '}';
                        bool json_c = parse_len(line, len) == JSONRPC_RESPONSE;
                        cr_assert_eq(jsonrpc_scan_result(line, len, &r), json_c, "%zu arrays%s: json-c %s it", n,
                                     scalar ? " around 1" : "", json_c ? "takes" : "refuses");
                }
        free(line);
}

/* The id of an answer too long to read, from the head of its line. */

static bool head_id(const char *head, int64_t *id) {
        *id = -1;
        return jsonrpc_scan_head_id(head, strlen(head), id);
}

Test(jsonrpc, scan_head_id_finds_an_answer_named_first) {
        int64_t id;

        cr_assert(head_id("{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"xxx", &id));
        cr_assert_eq(id, 42);
        cr_assert(head_id(" { \"id\" : 7 , \"error\" : {\"code\":-1,\"message\":\"xx", &id));
        cr_assert_eq(id, 7);
        cr_assert(head_id("{\"id\":3,\"x\":[1,2],\"result\"", &id), "cut off after the key");
        cr_assert_eq(id, 3);
        cr_assert(head_id("{\"result\":{},\"id\":5,\"extra\":\"xxxx", &id), "whole members before the cut");
        cr_assert_eq(id, 5);
}

/* Where the head cannot tell which call it answers, no guess. */
Test(jsonrpc, scan_head_id_refuses_what_it_cannot_tell) {
        static const char *const heads[] = {
                "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"xxxx",   /* id after the result */
                "{\"jsonrpc\":\"2.0\",\"id\":12",                                  /* maybe 123 */
                "{\"jsonrpc\":\"2.0\",\"id\":12,",                                 /* no result or error yet */
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\",\"params\":{\"x\":\"xx",
                "{\"id\":1,\"result\":{},\"method\":\"x\",\"params\":\"xx",
                "{\"id\":1,\"id\":2,\"result\":\"xx",
                "{\"id\":\"1\",\"result\":\"xx",
                "{\"id\":-1,\"result\":\"xx",
                "{\"id\":1.5,\"result\":\"xx",
                "{\"i\\u0064\":1,\"result\":\"xx",
                "[{\"id\":1,\"result\":\"xx",
                "xxxxxxxxxxxxxxxxxxxxxxxxx",
                "",
        };
        int64_t id;

        for (size_t i = 0; i < sizeof heads / sizeof *heads; i++)
                cr_assert_not(head_id(heads[i], &id), "took %lld from %s", (long long)id, heads[i]);
}

/* The method and id of a message the daemon made, from the head of a request as large as
 * a call's arguments may be: the HTTP transport matches a cancellation to the POST of
 * its request by them. */
Test(jsonrpc, scan_request_head_table) {
        static const struct {
                const char *line;
                bool ok;
                const char *method; /* NULL: none */
                int64_t id;
        } cases[] = {
                { "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"x\":\"cut off", true, "tools/call", 7 },
                { "{\"method\":\"ping\",\"id\":0}", true, "ping", 0 },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}", true,
                  "notifications/cancelled", -1 },
                { "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}", true, NULL, 4 },
                { "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\"}", true, "x", -1 },
                { "{\"jsonrpc\":\"2.0\",\"id\":-2,\"method\":\"x\"}", true, "x", -1 },
                { " { \"id\" : 9 , \"method\" : \"m\" }", true, "m", 9 },
                { "[1]", false, NULL, -1 },
                { "", false, NULL, -1 },
        };

        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                struct jsonrpc_request_head h;
                bool ok = jsonrpc_scan_request_head(cases[i].line, strlen(cases[i].line), &h);

                cr_assert_eq(ok, cases[i].ok, "%s", cases[i].line);
                cr_assert_eq(h.id, cases[i].id, "%s: id %lld", cases[i].line, (long long)h.id);
                if (!cases[i].method)
                        cr_assert_null(h.method, "%s", cases[i].line);
                else
                        cr_assert(h.method && h.method_len == strlen(cases[i].method) &&
                                          memcmp(h.method, cases[i].method, h.method_len) == 0,
                                  "%s", cases[i].line);
        }
}

/* The request line written from its parts is byte for byte the envelope's line. */
static void check_request_line(int64_t id, const char *method, const char *params_json) {
        json_object *params = params_json ? json_tokener_parse(params_json) : NULL;
        json_object *envelope = jsonrpc_request(id, method, params ? json_object_get(params) : NULL);
        char head[JSONRPC_REQUEST_HEAD_MAX], line[512] = "";
        struct iovec want[2], parts[4];
        int n = jsonrpc_request_line(id, method, params, head, parts), w = jsonrpc_line(envelope, want);

        cr_assert_eq(n, w);
        for (size_t i = 0; i < 4; i++)
                strncat(line, parts[i].iov_base, parts[i].iov_len);
        cr_assert_eq(strlen(line), (size_t)n);
        cr_assert_eq(memcmp(line, want[0].iov_base, want[0].iov_len), 0, "%s", line);
        cr_assert_str_eq(line + want[0].iov_len, "\n");
        json_object_put(envelope);
        json_object_put(params);
}

Test(jsonrpc, request_line_as_the_envelope) {
        check_request_line(1, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"a/b \\\"q\\\" \\u00e9\"}}");
        check_request_line(INT64_MAX, "ping", NULL);
        check_request_line(42, "resources/read", "{\"uri\":\"file:///x\",\"_meta\":{\"progressToken\":7}}");
        check_request_line(3, "tools/list", "{}");
}

Test(jsonrpc, request_line_refuses_methods_to_escape) {
        char head[JSONRPC_REQUEST_HEAD_MAX], long_method[200];
        struct iovec parts[4];

        cr_assert_eq(jsonrpc_request_line(1, "a\"b", NULL, head, parts), -EINVAL);
        cr_assert_eq(jsonrpc_request_line(1, "a\\b", NULL, head, parts), -EINVAL);
        cr_assert_eq(jsonrpc_request_line(1, "a\nb", NULL, head, parts), -EINVAL);
        memset(long_method, 'm', sizeof long_method - 1);
        long_method[sizeof long_method - 1] = '\0';
        cr_assert_eq(jsonrpc_request_line(1, long_method, NULL, head, parts), -EINVAL);
}
