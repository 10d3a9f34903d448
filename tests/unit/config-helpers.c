/* The configuration tests' shared setup; see config-helpers.h. */
#include "config-helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

struct config C;
struct config_problems P;

int parse(const char *text) {
        memset(&P, 0, sizeof P);
        config_init_defaults(&C);
        return config_parse(text, strlen(text), &C, &P);
}

void done(void) {
        config_done(&C);
        problems_done(&P);
}

const struct config_problem *problem_at(const char *path) {
        for (size_t i = 0; i < P.count; i++)
                if (strcmp(P.items[i].path, path) == 0)
                        return &P.items[i];
        return NULL;
}

void expect_entry_refused(const char *members, const char *key, const char *words) {
        char text[1024], path[128];

        done();
        snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{%s}}}", members);
        cr_assert_eq(parse(text), 0, "%s", members);
        snprintf(path, sizeof path, "mcpServers.a%s%s", *key ? "." : "", key);
        cr_assert_not_null(problem_at(path), "%s: no problem at %s (%zu problems, first at %s: %s)", members, path, P.count,
                           P.count ? P.items[0].path : "-", P.count ? P.items[0].message : "-");
        cr_assert(strstr(problem_at(path)->message, words), "%s: %s", members, problem_at(path)->message);
        cr_assert_null(config_find_server(&C, "a"), "%s: the server is skipped", members);
}
