/* Tool and prompt filters of a server entry; see item-filter.h. */
#include "item-filter.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "settings.h"

static const char *const include_keys[ITEM_FILTER_KINDS] = { "includeTools", "includePrompts" };
static const char *const exclude_keys[ITEM_FILTER_KINDS] = { "excludeTools", "excludePrompts" };

static bool any_matches(char *const *globs, const char *name) {
        for (; globs && *globs; globs++)
                if (fnmatch(*globs, name, 0) == 0)
                        return true;
        return false;
}

bool item_filter_offers(const struct item_filter *f, enum catalog_kind kind, const char *name) {
        if ((unsigned)kind >= ITEM_FILTER_KINDS)
                return true;
        if (any_matches(f->exclude[kind], name))
                return false;
        return !f->include[kind] || any_matches(f->include[kind], name);
}

/* As access rules are checked: an empty list or pattern is a mistake, not a way to say all
 * or nothing (leave the key out to offer every item; "disabled" stops the whole server). */
static size_t check_globs(char *const *globs, const char *path, const char *key, struct config_problems *p) {
        char item[600]; /* path is at most 512 */

        if (!globs)
                return 0;
        snprintf(item, sizeof item, "%s.%s", path, key);
        if (!globs[0]) {
                problems_add(p, PROBLEM_ERROR, item, "empty: it would match nothing (leave the key out instead)");
                return 1;
        }
        for (size_t i = 0; globs[i]; i++)
                if (!*globs[i]) {
                        snprintf(item, sizeof item, "%s.%s[%zu]", path, key, i);
                        problems_add(p, PROBLEM_ERROR, item, "an empty pattern matches no name");
                        return 1;
                }
        return 0;
}

size_t item_filter_check(const struct item_filter *f, const char *path, struct config_problems *p) {
        size_t n = 0;

        for (size_t k = 0; k < ITEM_FILTER_KINDS; k++)
                n += check_globs(f->include[k], path, include_keys[k], p) + check_globs(f->exclude[k], path, exclude_keys[k], p);
        return n;
}

static bool globs_equal(char *const *a, char *const *b) {
        if (!a || !b)
                return a == b;
        for (; *a && *b; a++, b++)
                if (strcmp(*a, *b) != 0)
                        return false;
        return !*a && !*b;
}

bool item_filter_equal(const struct item_filter *a, const struct item_filter *b) {
        for (size_t k = 0; k < ITEM_FILTER_KINDS; k++)
                if (!globs_equal(a->include[k], b->include[k]) || !globs_equal(a->exclude[k], b->exclude[k]))
                        return false;
        return true;
}

void item_filter_move(struct item_filter *dst, struct item_filter *src) {
        item_filter_done(dst);
        *dst = *src;
        *src = (struct item_filter){ 0 };
}

void item_filter_done(struct item_filter *f) {
        for (size_t k = 0; k < ITEM_FILTER_KINDS; k++) {
                strv_free(f->include[k]);
                strv_free(f->exclude[k]);
        }
        *f = (struct item_filter){ 0 };
}
