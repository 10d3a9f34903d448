/* Unit tests for utf8.c and jsonrpc_text(): text the daemon puts into JSON is valid UTF-8. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "utf8.h"

static bool valid(const char *s) {
        return utf8_valid(s, strlen(s));
}

Test(utf8, valid_text) {
        cr_assert(valid(""));
        cr_assert(valid("plain ascii"));
        cr_assert(valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")); /* é € 😀 */
        cr_assert(valid("\xed\x9f\xbf"));                            /* U+D7FF, below the surrogates */
        cr_assert(valid("\xf4\x8f\xbf\xbf"));                        /* U+10FFFF */
}

Test(utf8, invalid_text) {
        cr_assert_not(valid("\x80"), "a lone continuation byte");
        cr_assert_not(valid("\xc0\xaf"), "an overlong '/'");
        cr_assert_not(valid("\xe0\x80\xaf"), "an overlong three-byte form");
        cr_assert_not(valid("\xed\xa0\x80"), "a surrogate");
        cr_assert_not(valid("\xf4\x90\x80\x80"), "above U+10FFFF");
        cr_assert_not(valid("\xf5\x80\x80\x80"));
        cr_assert_not(valid("caf\xc3"), "cut mid-character");
}

Test(utf8, mend_cuts_a_character_cut_at_the_end) {
        char euro[] = "price: \xe2\x82";     /* '€' cut by %.Ns */
        char four[] = "x\xf0";

        cr_assert_str_eq(utf8_mend(euro), "price: ");
        cr_assert_str_eq(utf8_mend(four), "x");
}

Test(utf8, mend_replaces_invalid_bytes) {
        char s[] = "a\xff" "b\xc0\xaf" "c\xed\xa0\x80" "d\xc3\xa9";

        cr_assert_str_eq(utf8_mend(s), "a?b??c???d\xc3\xa9");
        cr_assert(valid(s));
}

/* An error message made of a cut name and stderr bytes still serialises to valid UTF-8. */
Test(utf8, error_messages_are_valid_json_text) {
        json_object *msg = jsonrpc_error(NULL, -32600, "Invalid Request: \xff\xfe method \xe2\x82", NULL);
        const char *text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);

        cr_assert(valid(text), "not valid UTF-8: %s", text);
        cr_assert_not_null(strstr(text, "Invalid Request: ?? method \""), "%s", text);
        json_object_put(msg);
}

static void display_is(const char *in, size_t len, size_t max, const char *want) {
        char *got = utf8_display(in, len, max);

        cr_assert_not_null(got);
        cr_assert_str_eq(got, want);
        cr_assert(utf8_valid(got, strlen(got)));
        cr_assert_leq(strlen(got), max);
        free(got);
}

/* A peer's name shown to an operator: no control character, no invisible reordering, no
 * invalid byte, never longer than asked, never cut inside a character. */
Test(utf8, display_text_is_clean_and_bounded) {
        static const char nul_inside[] = "a\0b";
        char big[10240];

        display_is("claude-code", strlen("claude-code"), 64, "claude-code");
        display_is("evil\nline\r\x1b[2J\x7f", strlen("evil\nline\r\x1b[2J\x7f"), 64, "evilline[2J");
        display_is("c1 \xc2\x85\xc2\x9b end", strlen("c1 \xc2\x85\xc2\x9b end"), 64, "c1  end");
        display_is("rtl \xe2\x80\xaetxt.exe\xe2\x81\xa6 \xe2\x80\x8b\xef\xbb\xbfz", strlen("rtl \xe2\x80\xaetxt.exe\xe2\x81\xa6 \xe2\x80\x8b\xef\xbb\xbfz"), 64, "rtl txt.exe z");
        display_is(nul_inside, 3, 64, "ab");
        display_is("bad \xff\xfe byte", strlen("bad \xff\xfe byte"), 64, "bad ?? byte");
        display_is("caf\xc3\xa9", strlen("caf\xc3\xa9"), 4, "caf"); /* é would pass the bound: cut before it */
        display_is("\xc3\xa9t\xc3\xa9", strlen("\xc3\xa9t\xc3\xa9"), 5, "\xc3\xa9t\xc3\xa9");
        memset(big, 'x', sizeof big);
        big[5000] = '\n';
        {
                char *got = utf8_display(big, sizeof big, 64);

                cr_assert_eq(strlen(got), 64);
                free(got);
        }
}
