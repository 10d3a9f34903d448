/* Unit tests for protocol.c: MCP protocol version negotiation. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "protocol.h"

static const char *const expected[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

Test(protocol, latest_is_first) {
        cr_assert_str_eq(MCP_LATEST_VERSION, "2025-11-25");
        cr_assert_str_eq(mcp_supported_versions[0], MCP_LATEST_VERSION);
}

Test(protocol, supported_list) {
        size_t n = 0;

        while (mcp_supported_versions[n])
                n++;
        cr_assert_eq(n, 4);
        for (size_t i = 0; i < n; i++)
                cr_assert_str_eq(mcp_supported_versions[i], expected[i]);
}

Test(protocol, negotiate_echoes_supported) {
        for (size_t i = 0; i < 4; i++) {
                char copy[16];
                const char *r;

                /* A copy, so a pointer comparison cannot pass by accident. */
                snprintf(copy, sizeof copy, "%s", expected[i]);
                r = protocol_negotiate(copy);
                cr_assert_str_eq(r, expected[i]);
                cr_assert_neq((void *)r, (void *)copy, "the answer must be a static string");
        }
}

Test(protocol, negotiate_unknown) {
        static const char *const unknown[] = { "2099-01-01", "2024-01-01", "2025-11-25 ", "2025-11-2", "", "latest" };

        for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
                cr_assert_str_eq(protocol_negotiate(unknown[i]), "2025-11-25", "for \"%s\"", unknown[i]);
        cr_assert_str_eq(protocol_negotiate(NULL), "2025-11-25");
}

Test(protocol, version_supported) {
        for (size_t i = 0; i < 4; i++)
                cr_assert(protocol_version_supported(expected[i]), "%s", expected[i]);
        cr_assert_not(protocol_version_supported("2099-01-01"));
        cr_assert_not(protocol_version_supported("2024-10-07"));
        cr_assert_not(protocol_version_supported(""));
        cr_assert_not(protocol_version_supported(NULL));
}

Test(protocol, versions_json) {
        json_object *a = protocol_versions_json();

        cr_assert(json_object_is_type(a, json_type_array));
        cr_assert_eq(json_object_array_length(a), 4);
        for (size_t i = 0; i < 4; i++) {
                json_object *v = json_object_array_get_idx(a, i);
                cr_assert(json_object_is_type(v, json_type_string));
                cr_assert_str_eq(json_object_get_string(v), expected[i]);
                if (i > 0)
                        cr_assert_gt(strcmp(json_object_get_string(json_object_array_get_idx(a, i - 1)),
                                            json_object_get_string(v)), 0, "newest first");
        }
        cr_assert_str_eq(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
                         "[\"2025-11-25\",\"2025-06-18\",\"2025-03-26\",\"2024-11-05\"]");
        cr_assert_eq(json_object_put(a), 1);
}

Test(protocol, versions_json_fresh) {
        json_object *a = protocol_versions_json(), *b = protocol_versions_json();

        /* Each caller owns its array (it is consumed as error data). */
        cr_assert_neq((void *)a, (void *)b);
        json_object_put(a);
        cr_assert_eq(json_object_array_length(b), 4);
        json_object_put(b);
}
