/* Which of a server's own tools and prompts it offers to clients: "includeTools",
 * "excludeTools", "includePrompts" and "excludePrompts" of its entry (the keys Gemini CLI
 * reads), shell-style globs (fnmatch) on the server's names ("get_*", never the exposed
 * "github__get_*"). Exclude wins over include. The registry leaves out what is not offered,
 * so it is neither listed nor callable: a call is answered as one to a name that does not
 * exist. Filters change on reload without restarting the server. */
#pragma once

#include <stdbool.h>

#include "catalog.h"

struct config_problems;

/* Tools and prompts have names to filter on; resources are filtered by access rules only. */
#define ITEM_FILTER_KINDS (CATALOG_PROMPTS + 1)

struct item_filter {
        char **include[ITEM_FILTER_KINDS]; /* NULL-terminated globs; NULL: every name */
        char **exclude[ITEM_FILTER_KINDS]; /* NULL: none */
};

/* Whether the server offers its item named name of kind (resources and templates: always). */
bool item_filter_offers(const struct item_filter *f, enum catalog_kind kind, const char *name);
/* Problems with globs already parsed at path (the entry's): an empty array or pattern. */
size_t item_filter_check(const struct item_filter *f, const char *path, struct config_problems *p);
bool item_filter_equal(const struct item_filter *a, const struct item_filter *b);
/* Moves src into dst, releasing what dst held; src is left empty. */
void item_filter_move(struct item_filter *dst, struct item_filter *src);
void item_filter_done(struct item_filter *f);
