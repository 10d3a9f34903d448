/* Tool and prompt filters of a server entry; see item-filter.h. */
#include "item-filter.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "macro.h"
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

/* Read as Gemini CLI reads them, so that a file written for it means the same here and a
 * reload is never blocked by a list it accepts: an empty exclude list excludes nothing
 * (nothing to say); an empty include list offers none of that kind, and an empty pattern
 * matches no name, both likely slips, so warned about. Returns the errors: none. */
static size_t check_globs(char *const *globs, bool include, const char *path, const char *key,
                          struct config_problems *p) {
        _cleanup_free_ char *item = NULL;

        if (!globs)
                return 0;
        if (!globs[0] && include && asprintf(&item, "%s.%s", path, key) >= 0)
                problems_add(p, PROBLEM_WARNING, item,
                             "empty: the server offers no %s (leave the key out to offer every one, or set \"disabled\")",
                             strcmp(key, "includeTools") == 0 ? "tools" : "prompts");
        for (size_t i = 0; globs[i]; i++) {
                if (*globs[i])
                        continue;
                free(item);
                item = NULL;
                if (asprintf(&item, "%s.%s[%zu]", path, key, i) >= 0)
                        problems_add(p, PROBLEM_WARNING, item, "an empty pattern matches no name");
        }
        return 0;
}

size_t item_filter_check(const struct item_filter *f, const char *path, struct config_problems *p) {
        size_t n = 0;

        for (size_t k = 0; k < ITEM_FILTER_KINDS; k++)
                n += check_globs(f->include[k], true, path, include_keys[k], p) +
                     check_globs(f->exclude[k], false, path, exclude_keys[k], p);
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
