/* Unit tests for the count of clients per MCP log level (mcp-logging.c): the most verbose
 * level is the highest one some client still holds, and falls back when that client
 * leaves or asks for less. */
#include <criterion/criterion.h>

#include "mcp-logging.h"

Test(mcp_levels, none_is_minus_one) {
        struct mcp_levels l = { 0 };

        cr_assert_eq(mcp_levels_most_verbose(&l), -1);
}

Test(mcp_levels, most_verbose_wins_and_falls_back) {
        struct mcp_levels l = { 0 };

        mcp_levels_add(&l, 3);
        mcp_levels_add(&l, 7);
        mcp_levels_add(&l, 7);
        cr_assert_eq(mcp_levels_most_verbose(&l), 7);
        mcp_levels_remove(&l, 7);
        cr_assert_eq(mcp_levels_most_verbose(&l), 7, "one client at debug is still there");
        mcp_levels_remove(&l, 7);
        cr_assert_eq(mcp_levels_most_verbose(&l), 3);
        mcp_levels_remove(&l, 3);
        cr_assert_eq(mcp_levels_most_verbose(&l), -1);
}

Test(mcp_levels, extremes) {
        struct mcp_levels l = { 0 };

        mcp_levels_add(&l, 0);
        cr_assert_eq(mcp_levels_most_verbose(&l), 0, "emergency alone");
        mcp_levels_add(&l, MCP_LEVEL_COUNT - 1);
        cr_assert_eq(mcp_levels_most_verbose(&l), MCP_LEVEL_COUNT - 1);
}
