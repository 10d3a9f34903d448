/* Member names repeated within one JSON object. json-c keeps the last of them without a
 * word, so a reader that must not guess (the configuration) checks the text itself. */
#pragma once

#include <stddef.h>

/* One step down from the top value: an object's member, or an array's element. */
struct json_step {
        const char *name; /* the member's name; NULL for an array's element */
        size_t index;     /* the element's index when name is NULL */
};

/* A name an object repeats: the steps from the top value down to that member, and how
 * many times the name occurs in its object. */
struct json_duplicate {
        const struct json_step *steps;
        size_t depth;
        size_t count;
};

typedef void (*json_duplicate_fn)(const struct json_duplicate *d, void *userdata);

/* Calls found once for each name repeated in an object of text, an object's names in the
 * order of their first occurrence, after what is nested inside them. Names are compared
 * as json-c keys them (escapes decoded, up to a NUL). For text json-c has read: strings are
 * only followed to their closing quote, not checked. Returns 0; -EINVAL when text is not
 * one JSON value nested at most max_depth deep, with the offset of what could not be read
 * in *ret_stop (may be NULL; found may have been called for what came before): also for
 * what json-c reads but JSON has not (NaN, Infinity, a number ending in '.'), which a
 * reader must then refuse itself; -ENOMEM. */
int json_find_duplicates(const char *text, size_t len, unsigned max_depth, json_duplicate_fn found, void *userdata,
                         size_t *ret_stop);

/* The steps as a configuration problem's path: "mcpServers.github.args", "a[2].b"; NULL
 * when out of memory. */
char *json_steps_path(const struct json_step *steps, size_t depth);
