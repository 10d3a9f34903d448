/* Unit tests for names.c: the exposed tool-name scheme (prefix + separator + name), its
 * validity rules, the FNV-1a hash and the stable fallback form. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

/* An independent FNV-1a 32 to check the fallbacks' hash against. */
static uint32_t fnv1a(const char *s) {
        uint32_t h = 0x811c9dc5u;

        for (; *s; s++)
                h = (h ^ (uint8_t)*s) * 0x01000193u;
        return h;
}

static void fill(char *buf, char c, size_t n) {
        memset(buf, c, n);
        buf[n] = '\0';
}

static bool is_lower_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* out is exactly the fallback of text: its first 119 bytes with disallowed ones made '_',
 * then '-' and the 8 lowercase hex digits of FNV-1a(text). */
static void expect_fallback_of(const char *text, const char *out) {
        size_t keep = strlen(text) < 119 ? strlen(text) : 119;
        char hash[16];

        cr_assert_eq(strlen(out), keep + 9, "\"%s\": length %zu", out, strlen(out));
        for (size_t i = 0; i < keep; i++) {
                char c = text[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                          c == '-' || c == '.';
                cr_assert_eq(out[i], ok ? c : '_', "byte %zu of \"%s\"", i, out);
        }
        cr_assert_eq(out[keep], '-');
        for (size_t i = keep + 1; i < keep + 9; i++)
                cr_assert(is_lower_hex(out[i]), "\"%s\": byte %zu is not lowercase hex", out, i);
        snprintf(hash, sizeof hash, "%08x", fnv1a(text));
        cr_assert_str_eq(out + keep + 1, hash);
        cr_assert(name_valid(out), "a fallback is always a valid name: \"%s\"", out);
}

/* name_hash */

Test(names, hash_known_values) {
        cr_assert_eq(name_hash(""), 0x811c9dc5u);
        cr_assert_eq(name_hash("a"), 0xe40c292cu);
        cr_assert_eq(name_hash("b"), 0xe70c2de5u);
        cr_assert_eq(name_hash("foobar"), 0xbf9cf968u);
        cr_assert_eq(name_hash("fs__search"), 0x37ed1738u);
        cr_assert_eq(name_hash("\xc3\xa9"), 0x1e9de8c1u, "bytes above 0x7f hash as unsigned");
}

/* name_valid, name_separator_valid */

Test(names, valid_names) {
        char buf[NAME_MAX_LEN + 2];

        cr_assert(name_valid("a"));
        cr_assert(name_valid("Z"));
        cr_assert(name_valid("0"));
        cr_assert(name_valid("_"));
        cr_assert(name_valid("-"));
        cr_assert(name_valid("."));
        cr_assert(name_valid("fs__read_file"));
        cr_assert(name_valid("A-z.0_9"));
        fill(buf, 'x', NAME_MAX_LEN);
        cr_assert(name_valid(buf), "exactly 128 characters");
}

Test(names, invalid_names) {
        char buf[NAME_MAX_LEN + 2];

        cr_assert_not(name_valid(""));
        cr_assert_not(name_valid(" "));
        cr_assert_not(name_valid("a b"));
        cr_assert_not(name_valid("a/b"));
        cr_assert_not(name_valid("a:b"));
        cr_assert_not(name_valid("a+b"));
        cr_assert_not(name_valid("a\tb"));
        cr_assert_not(name_valid("caf\xc3\xa9"));
        cr_assert_not(name_valid("\x7f"));
        cr_assert_not(name_valid("a\n"));
        fill(buf, 'x', NAME_MAX_LEN + 1);
        cr_assert_not(name_valid(buf), "129 characters");
}

Test(names, separators) {
        cr_assert(name_separator_valid("__"));
        cr_assert(name_separator_valid("_"));
        cr_assert(name_separator_valid("."));
        cr_assert(name_separator_valid("-"));
        cr_assert(name_separator_valid("x"));
        cr_assert(name_separator_valid("-._Ab09"));
        cr_assert(name_separator_valid("12345678"), "8 characters");
        cr_assert_not(name_separator_valid(""));
        cr_assert_not(name_separator_valid("123456789"), "9 characters");
        cr_assert_not(name_separator_valid("/"));
        cr_assert_not(name_separator_valid("::"));
        cr_assert_not(name_separator_valid(" "));
        cr_assert_not(name_separator_valid("_ _"));
        cr_assert_not(name_separator_valid("\xc2\xb7"));
}

/* name_expose: the plain form */

Test(names, plain_prefixing) {
        char out[NAME_MAX_LEN + 1];

        cr_assert(name_expose("fs", "__", "read_file", out));
        cr_assert_str_eq(out, "fs__read_file");
        cr_assert(name_expose("github", NAMES_DEFAULT_SEPARATOR, "search", out));
        cr_assert_str_eq(out, "github__search");
        cr_assert(name_expose("a", "__", "b", out));
        cr_assert_str_eq(out, "a__b");
}

Test(names, empty_or_null_prefix) {
        char out[NAME_MAX_LEN + 1];

        cr_assert(name_expose(NULL, "__", "search", out));
        cr_assert_str_eq(out, "search");
        cr_assert(name_expose("", "__", "search", out));
        cr_assert_str_eq(out, "search");
        cr_assert(name_expose("", "!!", "search", out), "no prefix: the separator is not used at all");
        cr_assert_str_eq(out, "search");
}

Test(names, separator_variants) {
        static const struct { const char *sep, *want; } cases[] = {
                { "__", "fs__search" }, { "_", "fs_search" }, { ".", "fs.search" },
                { "-", "fs-search" },  { "--", "fs--search" }, { "12345678", "fs12345678search" },
        };
        char out[NAME_MAX_LEN + 1];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                cr_assert(name_expose("fs", cases[i].sep, "search", out), "sep \"%s\"", cases[i].sep);
                cr_assert_str_eq(out, cases[i].want);
        }
}

Test(names, exactly_128_accepted) {
        char name[NAME_MAX_LEN + 1], out[NAME_MAX_LEN + 1], want[NAME_MAX_LEN + 8];

        fill(name, 'n', NAME_MAX_LEN - 4); /* "fs__" + 124 */
        cr_assert(name_expose("fs", "__", name, out));
        snprintf(want, sizeof want, "fs__%s", name);
        cr_assert_eq(strlen(out), 128);
        cr_assert_str_eq(out, want);

        fill(name, 'n', NAME_MAX_LEN);
        cr_assert(name_expose(NULL, "__", name, out), "an unprefixed 128-character name");
        cr_assert_str_eq(out, name);
}

/* name_expose: the fallback */

Test(names, length_129_falls_back) {
        char name[NAME_MAX_LEN + 1], out[NAME_MAX_LEN + 1], joined[NAME_MAX_LEN + 8];

        fill(name, 'n', NAME_MAX_LEN - 3); /* "fs__" + 125 = 129 */
        snprintf(joined, sizeof joined, "fs__%s", name);
        cr_assert_eq(strlen(joined), 129);
        cr_assert_not(name_expose("fs", "__", name, out));
        cr_assert_eq(strlen(out), 128);
        cr_assert_eq(out[119], '-');
        for (int i = 120; i < 128; i++)
                cr_assert(is_lower_hex(out[i]), "\"%s\"", out);
        cr_assert_eq(strncmp(out, joined, 119), 0);
        expect_fallback_of(joined, out);
}

Test(names, very_long_falls_back) {
        char name[1001], out[NAME_MAX_LEN + 1], joined[1100];

        fill(name, 'q', 1000);
        snprintf(joined, sizeof joined, "srv.%s", name);
        cr_assert_not(name_expose("srv", ".", name, out));
        expect_fallback_of(joined, out);
}

Test(names, unprefixed_129_falls_back) {
        char name[NAME_MAX_LEN + 2], out[NAME_MAX_LEN + 1];

        fill(name, 'z', NAME_MAX_LEN + 1);
        cr_assert_not(name_expose("", "__", name, out));
        expect_fallback_of(name, out);
}

Test(names, disallowed_characters_replaced) {
        char out[NAME_MAX_LEN + 1], want[NAME_MAX_LEN + 1];

        cr_assert_not(name_expose("fs", "__", "read file", out));
        snprintf(want, sizeof want, "fs__read_file-%08x", fnv1a("fs__read file"));
        cr_assert_str_eq(out, want);

        cr_assert_not(name_expose("fs", "__", "dir/list", out));
        snprintf(want, sizeof want, "fs__dir_list-%08x", fnv1a("fs__dir/list"));
        cr_assert_str_eq(out, want);

        /* Every byte of a multi-byte character becomes one '_'. */
        cr_assert_not(name_expose("fs", "__", "caf\xc3\xa9", out));
        snprintf(want, sizeof want, "fs__caf__-%08x", fnv1a("fs__caf\xc3\xa9"));
        cr_assert_str_eq(out, want);
        expect_fallback_of("fs__caf\xc3\xa9", out);

        cr_assert_not(name_expose(NULL, "__", "a:b c", out));
        expect_fallback_of("a:b c", out);
}

Test(names, disallowed_separator_falls_back) {
        char out[NAME_MAX_LEN + 1];

        cr_assert_not(name_expose("fs", "::", "search", out));
        expect_fallback_of("fs::search", out);
        cr_assert_eq(strncmp(out, "fs__search-", 11), 0);
}

Test(names, empty_name_falls_back) {
        char out[NAME_MAX_LEN + 1];

        cr_assert_not(name_expose(NULL, "__", "", out), "an empty exposed name is not valid");
        cr_assert_str_eq(out, "-811c9dc5");
        cr_assert(name_expose("fs", "__", "", out), "\"fs__\" is a valid name");
        cr_assert_str_eq(out, "fs__");
}

Test(names, long_and_disallowed_falls_back) {
        char name[300], out[NAME_MAX_LEN + 1], joined[320];

        for (size_t i = 0; i < 299; i++)
                name[i] = i % 7 == 0 ? ' ' : (char)('a' + i % 26);
        name[299] = '\0';
        snprintf(joined, sizeof joined, "x__%s", name);
        cr_assert_not(name_expose("x", "__", name, out));
        cr_assert_eq(strlen(out), 128);
        expect_fallback_of(joined, out);
}

Test(names, fallback_stable) {
        char name[200], a[NAME_MAX_LEN + 1], b[NAME_MAX_LEN + 1];

        fill(name, 'k', 199);
        name[50] = '/';
        cr_assert_not(name_expose("srv", "__", name, a));
        for (int i = 0; i < 5; i++) {
                memset(b, 0x55, sizeof b);
                cr_assert_not(name_expose("srv", "__", name, b));
                cr_assert_str_eq(a, b);
        }
        name_fallback("srv/tool name", a);
        name_fallback("srv/tool name", b);
        cr_assert_str_eq(a, b);
}

Test(names, fallback_distinct_after_119) {
        char x[NAME_MAX_LEN + 20], y[NAME_MAX_LEN + 20], ox[NAME_MAX_LEN + 1], oy[NAME_MAX_LEN + 1];

        fill(x, 'm', 140);
        fill(y, 'm', 140);
        y[125] = 'M';
        cr_assert_not(name_expose(NULL, "__", x, ox));
        cr_assert_not(name_expose(NULL, "__", y, oy));
        cr_assert_eq(strncmp(ox, oy, 120), 0, "the kept part is the same");
        cr_assert_str_neq(ox, oy, "the hash tells them apart");

        /* Differing at byte 119, the first byte not kept. */
        fill(y, 'm', 140);
        y[119] = 'n';
        cr_assert_not(name_expose(NULL, "__", y, oy));
        cr_assert_str_neq(ox, oy);

        /* A prefixed pair whose joined text differs only in its last byte. */
        fill(x, 'm', 130);
        fill(y, 'm', 130);
        y[129] = 'p';
        cr_assert_not(name_expose("s", "__", x, ox));
        cr_assert_not(name_expose("s", "__", y, oy));
        cr_assert_str_neq(ox, oy);
}

Test(names, fallback_hashes_unchanged_text) {
        char a[NAME_MAX_LEN + 1], b[NAME_MAX_LEN + 1];

        /* "a b" and "a_b" keep the same characters but hash differently. */
        name_fallback("a b", a);
        name_fallback("a_b", b);
        cr_assert_str_neq(a, b);
        expect_fallback_of("a b", a);
        expect_fallback_of("a_b", b);
}

Test(names, fallback_forms) {
        char out[NAME_MAX_LEN + 1], want[NAME_MAX_LEN + 1], text[400];

        name_fallback("", out);
        cr_assert_str_eq(out, "-811c9dc5");
        name_fallback("a", out);
        cr_assert_str_eq(out, "a-e40c292c");
        name_fallback("b/search", out);
        snprintf(want, sizeof want, "b_search-%08x", fnv1a("b/search"));
        cr_assert_str_eq(out, want);
        fill(text, '.', 399);
        name_fallback(text, out);
        expect_fallback_of(text, out);
        fill(text, 'w', 119);
        name_fallback(text, out);
        cr_assert_eq(strlen(out), 128);
        expect_fallback_of(text, out);
}

Test(names, expose_fallback_matches_name_fallback) {
        char name[NAME_MAX_LEN + 1], joined[NAME_MAX_LEN + 32], a[NAME_MAX_LEN + 1], b[NAME_MAX_LEN + 1];

        fill(name, 'r', NAME_MAX_LEN);
        snprintf(joined, sizeof joined, "github__%s", name);
        cr_assert_not(name_expose("github", "__", name, a));
        name_fallback(joined, b);
        cr_assert_str_eq(a, b, "the fallback of the parts is the fallback of the joined text");
}
