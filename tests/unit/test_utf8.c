/* Unit tests for utf8.c and jsonrpc_text(): text the daemon puts into JSON is valid UTF-8. */
#include <criterion/criterion.h>
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
