/* Unit tests for json-scan.c: JSON text checked without building it. Each text it accepts
 * is also checked against json-c's strict parser, which must accept it too. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <json-c/json.h>
#include <string.h>

#include "json-scan.h"

#define DEPTH 512

static bool json_c_accepts(const char *text, size_t len) {
        json_tokener *tok = json_tokener_new_ex(DEPTH);
        json_object *o;
        bool ok;

        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        o = json_tokener_parse_ex(tok, text, (int)len);
        if (!o && json_tokener_get_error(tok) == json_tokener_continue)
                o = json_tokener_parse_ex(tok, " ", 1);
        ok = json_tokener_get_error(tok) == json_tokener_success;
        json_object_put(o);
        json_tokener_free(tok);
        return ok;
}

static void accepts(const char *text) {
        cr_assert(json_scan_valid(text, strlen(text), DEPTH), "refused: %s", text);
        cr_assert(json_c_accepts(text, strlen(text)), "json-c refuses what the scanner accepts: %s", text);
}

static void refuses(const char *text) {
        cr_assert_not(json_scan_valid(text, strlen(text), DEPTH), "accepted: %s", text);
}

Test(json_scan, values) {
        static const char *const ok[] = {
                "{}", "[]", "0", "-0", "1", "-12", "1.5", "1e5", "1E+5", "-1.25e-7", "1e400", "123456789012345678901234567890",
                "true", "false", "null", "\"\"", "\"text\"", "{\"a\":1}", "[1,\"two\",null,true,{\"x\":[]}]",
                " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \r\n", "{\"a\":1,\"a\":2}", "{\"\":0}",
        };

        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
                accepts(ok[i]);
}

Test(json_scan, grammar_errors) {
        static const char *const bad[] = {
                "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]", "01", "-", "1.", ".5",
                "1e", "1e+", "+1", "0x10", "NaN", "Infinity", "tru", "nul", "True", "{} {}", "[] x", "\"open",
                "{\"a\":1}}", "[/* c */1]", "{\"a\":1 // c\n}", "\v1", "\f1",
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                refuses(bad[i]);
}

Test(json_scan, strings) {
        accepts("\"escapes \\\" \\\\ \\/ \\b \\f \\n \\r \\t\"");
        accepts("\"\\u0041\\u00e9\\u20AC\"");
        accepts("\"\\ud83d\\ude00\"");                  /* a surrogate pair */
        accepts("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
        accepts("\"a long plain run of text, longer than eight bytes at a time, twice over\"");
        refuses("\"\\x41\"");
        refuses("\"\\u12\"");
        refuses("\"\\u12g4\"");
        refuses("\"\\ud83d\"");                         /* a high surrogate alone */
        refuses("\"\\ud83d\\u0041\"");                  /* followed by no low one */
        refuses("\"\\ude00\"");                         /* a low surrogate alone */
        refuses("\"tab\there\"");
        refuses("\"new\nline\"");
        refuses("\"a\\\"");
}

Test(json_scan, bytes_that_are_not_utf8) {
        static const char *const bad[] = {
                "\"\x80\"", "\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"caf\xc3\"",
                "\"\xff\"",
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                refuses(bad[i]);
}

/* Sixteen and eight bytes at a time, with the byte that stops it at every position of a
 * string long enough for several vectors. */
Test(json_scan, special_byte_at_every_offset) {
        static const char stoppers[] = { '"', '\\', '\x01', '\x1f', '\x7f', '\x20', '\x80', '\xff' };
        char text[80];

        for (size_t k = 0; k < sizeof stoppers; k++)
                for (size_t at = 1; at < 70; at++) {
                        bool plain = stoppers[k] == '\x7f' || stoppers[k] == '\x20';

                        memset(text, 'a', sizeof text);
                        text[0] = '"';
                        text[at] = stoppers[k];
                        text[71] = '"';
                        text[72] = '\0';
                        if (plain)
                                cr_assert(json_scan_valid(text, 72, DEPTH), "byte %#x at %zu refused", stoppers[k], at);
                        else
                                cr_assert_not(json_scan_valid(text, 72, DEPTH), "byte %#x at %zu accepted", stoppers[k], at);
                }
}

/* A two-byte character at every position is taken, whichever way the scan meets it. */
Test(json_scan, utf8_at_every_offset) {
        char text[80];

        for (size_t at = 1; at < 69; at++) {
                memset(text, 'a', sizeof text);
                text[0] = '"';
                text[at] = '\xc3';
                text[at + 1] = '\xa9';
                text[71] = '"';
                cr_assert(json_scan_valid(text, 72, DEPTH), "e-acute at %zu refused", at);
        }
}

Test(json_scan, embedded_nul) {
        cr_assert_not(json_scan_valid("\"a\0b\"", 5, DEPTH));
        cr_assert_not(json_scan_valid("1\0", 2, DEPTH));
        cr_assert_not(json_scan_valid("[1,\0 2]", 7, DEPTH));
}

/* Depth as json-c counts it: a value inside n containers is at depth n, scalars included,
 * and depth max_depth is refused. Each verdict is json-c's too. */
static void expect_depth(const char *text, size_t len, unsigned max_depth, bool valid) {
        json_tokener *tok = json_tokener_new_ex((int)max_depth);
        json_object *o;

        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        o = json_tokener_parse_ex(tok, text, (int)len);
        cr_assert_eq(json_tokener_get_error(tok) == json_tokener_success, valid, "json-c at depth %u: %.*s", max_depth,
                     (int)len, text);
        json_object_put(o);
        json_tokener_free(tok);
        cr_assert_eq(json_scan_valid(text, len, max_depth), valid, "the scanner at depth %u: %.*s", max_depth, (int)len,
                     text);
}

Test(json_scan, depth_bounded) {
        char text[2 * 600 + 2];

        for (unsigned depth = 510; depth <= 514; depth++) {
                memset(text, '[', depth);
                memset(text + depth, ']', depth);
                expect_depth(text, 2 * depth, DEPTH, depth <= DEPTH);
                /* a scalar in the innermost array is one level deeper */
                memset(text, '[', depth);
                text[depth] = '1';
                memset(text + depth + 1, ']', depth);
                expect_depth(text, 2 * depth + 1, DEPTH, depth < DEPTH);
        }
        expect_depth("[[]]", 4, 2, true);
        expect_depth("[[1]]", 5, 2, false);
        expect_depth("[[1]]", 5, 3, true);
        expect_depth("{\"a\":{\"b\":1}}", 13, 2, false);
        expect_depth("{\"a\":{\"b\":1}}", 13, 3, true);
        expect_depth("[]", 2, 1, true);
        expect_depth("[1]", 3, 1, false);
}

/* Only the bytes given are read: a value cut anywhere is refused. */
Test(json_scan, every_prefix_of_a_value_refused) {
        static const char text[] = "{\"a\":[1,-2.5e3,\"x\\u00e9\\ud83d\\ude00\xc3\xa9\",true,false,null,{}]}";

        for (size_t n = 0; n < sizeof text - 1; n++)
                cr_assert_not(json_scan_valid(text, n, DEPTH), "a prefix of %zu bytes accepted", n);
        cr_assert(json_scan_valid(text, sizeof text - 1, DEPTH));
}

/* ---- member spans, elements, decoding (issue 14: catalogue items kept as text) ---- */

static const char *const NAME[] = { "name" };

/* text without its "name" member (its cut), as a string to compare. */
static char *without_name(const char *text, struct json_member *m) {
        static char out[512];
        int members = json_scan_members(text, strlen(text), DEPTH, NAME, 1, m);

        cr_assert_geq(members, 0, "refused: %s", text);
        cr_assert_eq(m->count, 1, "%s", text);
        snprintf(out, sizeof out, "%.*s%s", (int)(m->cut_start - text), text, m->cut_end);
        accepts(out);
        return out;
}

Test(json_scan, member_cut_first_middle_last_only) {
        static const struct { const char *text, *value, *without; } cases[] = {
                { "{\"name\":\"a\",\"b\":1}", "\"a\"", "{\"b\":1}" },
                { "{\"b\":1,\"name\":\"a\"}", "\"a\"", "{\"b\":1}" },
                { "{\"b\":1,\"name\":\"a\",\"c\":[2]}", "\"a\"", "{\"b\":1,\"c\":[2]}" },
                { "{\"name\":\"a\"}", "\"a\"", "{}" },
                { " { \"b\" : 1 , \"name\" : \"a\" , \"c\" : 2 } ", "\"a\"", " { \"b\" : 1 , \"c\" : 2 } " },
                { "{ \"name\" : {\"name\":\"inner\"} , \"c\" : 2 }", "{\"name\":\"inner\"}", "{ \"c\" : 2 }" },
                { "{\"c\":2 ,\"name\":\"a\" }", "\"a\"", "{\"c\":2 }" },
        };
        struct json_member m;

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const char *text = cases[i].text;
                cr_assert_str_eq(without_name(text, &m), cases[i].without, "%s", text);
                cr_assert_eq((size_t)(m.end - m.value), strlen(cases[i].value), "%s", text);
                cr_assert_eq(memcmp(m.value, cases[i].value, strlen(cases[i].value)), 0, "%s", text);
                cr_assert_eq(*m.start, '"');
        }
}

Test(json_scan, member_names_escaped_and_repeated) {
        static const char *const names[] = { "name", "uri", "é" };
        struct json_member m[3];
        const char *text = "{\"n\\u0061me\":1,\"uri\":2,\"\\u00e9\":3,\"\\u00c3\\u00a9\":4,\"uri\":5,\"name2\":6,\"nam\":7}";

        cr_assert_eq(json_scan_members(text, strlen(text), DEPTH, names, 3, m), 7);
        cr_assert_eq(m[0].count, 1, "an escaped name is the name");
        cr_assert_eq(*m[0].value, '1');
        cr_assert_eq(m[1].count, 2, "repeated: counted, the last one kept");
        cr_assert_eq(*m[1].value, '5');
        cr_assert_eq(m[2].count, 1, "\\u00e9 is é; \\u00c3\\u00a9 is not");
        cr_assert_eq(*m[2].value, '3');
}

Test(json_scan, members_of_what_is_no_object) {
        static const char *const bad[] = { "[]", "\"name\"", "{\"name\":}", "{\"name\":1,}", "{} x", "", "{\"a\":\"\\ud800\"}" };
        struct json_member m;

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                cr_assert_eq(json_scan_members(bad[i], strlen(bad[i]), DEPTH, NAME, 1, &m), -EINVAL, "%s", bad[i]);
        cr_assert_eq(json_scan_members("{}", 2, DEPTH, NAME, 1, &m), 0);
        cr_assert_eq(m.count, 0);
        cr_assert_eq(json_scan_members("{\"a\":{\"b\":1}}", 13, 1, NAME, 1, &m), -EINVAL, "nested deeper than allowed");
}

struct seen {
        char texts[8][32];
        unsigned n, stop_at;
};

static int note_element(const char *start, size_t len, void *userdata) {
        struct seen *s = userdata;

        snprintf(s->texts[s->n++], sizeof s->texts[0], "%.*s", (int)len, start);
        return s->n == s->stop_at ? 7 : 0;
}

Test(json_scan, elements) {
        struct seen s = { 0 };
        const char *text = " [ {\"a\" : [1, 2]} , \"x,y\" ,3 ,[] ] ";

        cr_assert_eq(json_scan_elements(text, strlen(text), DEPTH, note_element, &s), 0);
        cr_assert_eq(s.n, 4);
        cr_assert_str_eq(s.texts[0], "{\"a\" : [1, 2]}");
        cr_assert_str_eq(s.texts[1], "\"x,y\"");
        cr_assert_str_eq(s.texts[2], "3");
        cr_assert_str_eq(s.texts[3], "[]");
        s = (struct seen){ .stop_at = 2 };
        cr_assert_eq(json_scan_elements(text, strlen(text), DEPTH, note_element, &s), 7, "stopped by the callback");
        cr_assert_eq(s.n, 2);
        s = (struct seen){ 0 };
        cr_assert_eq(json_scan_elements("[]", 2, DEPTH, note_element, &s), 0);
        cr_assert_eq(s.n, 0);
        static const char *const bad[] = { "{}", "[1,]", "[1 2]", "[1] [2]", "[", "\"[]\"" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                s = (struct seen){ 0 };
                cr_assert_eq(json_scan_elements(bad[i], strlen(bad[i]), DEPTH, note_element, &s), -EINVAL, "%s", bad[i]);
        }
}

static void decodes(const char *quoted, const char *want, size_t want_len) {
        char out[64];

        cr_assert(json_scan_valid(quoted, strlen(quoted), DEPTH), "%s", quoted);
        cr_assert_eq(json_scan_decode_string(quoted, strlen(quoted), out), want_len, "%s", quoted);
        cr_assert_eq(memcmp(out, want, want_len + 1), 0, "%s -> %s", quoted, out);
}

Test(json_scan, decode_string) {
        decodes("\"\"", "", 0);
        decodes("\"plain\"", "plain", 5);
        decodes("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "a\"b\\c/d\b\f\n\r\t", 12);
        decodes("\"\\u0041\\u00e9\\u20ac\"", "A\xc3\xa9\xe2\x82\xac", 6);
        decodes("\"caf\xc3\xa9 \\ud83d\\ude00!\"", "caf\xc3\xa9 \xf0\x9f\x98\x80!", 11);
        decodes("\"\\uD83D\\uDE00\"", "\xf0\x9f\x98\x80", 4);
        decodes("\"ab\\u0000cd\"", "ab", 2); /* a C string ends at the NUL, as json-c's do */
}
