/* Unit tests for list-changes.c's pure part: what a client holds of each list, and when
 * that copy is stale. The timer and the clients are covered by
 * tests/integration/test_lists.c. */
#include <criterion/criterion.h>

#include "list-changes.h"

#define S0 0x1111111111111111u
#define S1 0x2222222222222222u

Test(list_seen, never_listed_is_never_stale) {
        struct list_seen seen = { 0 };

        for (int k = 0; k < CATALOG_KIND_COUNT; k++) {
                cr_assert_not(list_seen_should_tell(&seen, k, S0), "kind %d", k);
                cr_assert_not(list_seen_should_tell(&seen, k, 0), "kind %d, signature 0", k);
        }
}

Test(list_seen, first_page_is_the_copy) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_TOOLS, S0, true);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S0), "the list it holds is current");
        cr_assert(list_seen_should_tell(&seen, CATALOG_TOOLS, S1), "the list changed since");
        list_seen_record(&seen, CATALOG_TOOLS, S1, true);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S1), "listed again after the change");
        cr_assert(list_seen_should_tell(&seen, CATALOG_TOOLS, S0));
}

/* A server that went away and came back with the same tools: the client holds the list as
 * it is again, and needs no notification. */
Test(list_seen, back_to_what_the_client_holds) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_PROMPTS, S0, true);
        cr_assert(list_seen_should_tell(&seen, CATALOG_PROMPTS, S1));
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_PROMPTS, S0));
}

Test(list_seen, kinds_apart) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_RESOURCES, S0, true);
        cr_assert(list_seen_should_tell(&seen, CATALOG_RESOURCES, S1));
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TEMPLATES, S1), "templates were never listed");
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S1), "tools were never listed");
}

Test(list_seen, later_pages_of_the_same_list) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_TOOLS, S0, true);
        list_seen_record(&seen, CATALOG_TOOLS, S0, false);
        list_seen_record(&seen, CATALOG_TOOLS, S0, false);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S0));
        cr_assert(list_seen_should_tell(&seen, CATALOG_TOOLS, S1));
}

/* Page 1 from one list, page 2 from the next (the list changed between them): whatever the
 * list is now, even the first one again, the client holds neither. */
Test(list_seen, pages_of_two_lists_are_stale) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_TOOLS, S0, true);
        list_seen_record(&seen, CATALOG_TOOLS, S1, false);
        cr_assert(list_seen_should_tell(&seen, CATALOG_TOOLS, S0), "page 2 came from another list");
        cr_assert(list_seen_should_tell(&seen, CATALOG_TOOLS, S1), "page 1 came from another list");
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_PROMPTS, S1), "another kind is untouched");
        list_seen_record(&seen, CATALOG_TOOLS, S1, true);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S1), "a new first page starts a new copy");
}

/* A later page without a first one (a cursor kept from an earlier session of the list)
 * makes no copy: the client is told nothing it did not ask for. */
Test(list_seen, later_page_alone_is_no_copy) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_TOOLS, S0, false);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S1));
}

/* Told once, a client knows its copy is out of date: later changes are not announced until
 * it fetches the list again. */
Test(list_seen, told_once_per_copy) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_TOOLS, S0, true);
        cr_assert(list_seen_should_tell(&seen, CATALOG_TOOLS, S1));
        list_seen_told(&seen, 1u << CATALOG_TOOLS);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S1), "told already");
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, 0x3333333333333333u), "told already");
        list_seen_record(&seen, CATALOG_TOOLS, S1, false);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S0), "a later page is no new copy");
        list_seen_record(&seen, CATALOG_TOOLS, S1, true);
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_TOOLS, S1));
        cr_assert(list_seen_should_tell(&seen, CATALOG_TOOLS, S0), "a new copy, out of date again");
}

/* Resources and templates share a notification; telling marks only the kinds the client
 * holds, so a template list fetched later is announced on its own. */
Test(list_seen, told_marks_only_listed_kinds) {
        struct list_seen seen = { 0 };

        list_seen_record(&seen, CATALOG_RESOURCES, S0, true);
        list_seen_told(&seen, (1u << CATALOG_RESOURCES) | (1u << CATALOG_TEMPLATES));
        list_seen_record(&seen, CATALOG_TEMPLATES, S0, true);
        cr_assert(list_seen_should_tell(&seen, CATALOG_TEMPLATES, S1));
        cr_assert_not(list_seen_should_tell(&seen, CATALOG_RESOURCES, S1));
}
