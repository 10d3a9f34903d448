/* Repeated member names, found by walking the text with json-scan's grammar (strings
 * aside); see json-duplicates.h. */
#include "json-duplicates.h"

#include <errno.h>
#include <stdbool.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "macro.h"

struct walk {
        struct json_scan scan;
        struct json_step *steps; /* max_depth + 1 of them: the way down to p */
        size_t depth;
        unsigned max_depth;
        json_duplicate_fn found;
        void *userdata;
};

/* One object's member names, in text order. */
struct names {
        char **items;
        size_t n, cap;
};

struct sorted_name {
        const char *name;
        size_t pos;
};

static void names_free(struct names *names) {
        for (size_t i = 0; i < names->n; i++)
                free(names->items[i]);
        free(names->items);
}

/* Takes name, even on failure. */
static int names_add(struct names *names, char *name) {
        if (names->n == names->cap) {
                size_t cap = names->cap ? names->cap * 2 : 8;
                char **items = realloc(names->items, cap * sizeof *items);

                if (!items) {
                        free(name);
                        return -ENOMEM;
                }
                names->items = items;
                names->cap = cap;
        }
        names->items[names->n++] = name;
        return 0;
}

/* The string from start to end (quotes included), as json-c keys it. */
static int decode_name(const char *start, const char *end, char **ret) {
        _cleanup_free_ char *quoted = NULL;
        json_object *o;

        if (!memchr(start, '\\', (size_t)(end - start)))
                return (*ret = strndup(start + 1, (size_t)(end - start) - 2)) ? 0 : -ENOMEM;
        quoted = strndup(start, (size_t)(end - start));
        if (!quoted)
                return -ENOMEM;
        o = json_tokener_parse(quoted);
        if (!json_object_is_type(o, json_type_string)) {
                json_object_put(o);
                return -EINVAL;
        }
        *ret = strdup(json_object_get_string(o));
        json_object_put(o);
        return *ret ? 0 : -ENOMEM;
}

static int by_name(const void *a, const void *b) {
        const struct sorted_name *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sorted, so that an object of many members costs n log n, not n squared. */
static int report(struct walk *w, const struct names *names) {
        _cleanup_free_ struct sorted_name *sorted = NULL;
        _cleanup_free_ size_t *repeats = NULL;
        size_t n = names->n;

        if (n < 2)
                return 0;
        sorted = calloc(n, sizeof *sorted);
        repeats = calloc(n, sizeof *repeats);
        if (!sorted || !repeats)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                sorted[i] = (struct sorted_name){ names->items[i], i };
        qsort(sorted, n, sizeof *sorted, by_name);
        for (size_t i = 0, j; i < n; i = j) {
                for (j = i + 1; j < n && strcmp(sorted[i].name, sorted[j].name) == 0; j++)
                        ;
                repeats[sorted[i].pos] = j - i;
        }
        for (size_t i = 0; i < n; i++)
                if (repeats[i] > 1) {
                        w->steps[w->depth] = (struct json_step){ .name = names->items[i] };
                        w->found(&(struct json_duplicate){ w->steps, w->depth + 1, repeats[i] }, w->userdata);
                }
        return 0;
}

/* Only a string's end matters here, and json-c has read it: json_scan_string() would
 * refuse a lone surrogate escape, which json-c takes. */
static bool skip_string(struct json_scan *s) {
        if (!json_scan_take(s, '"'))
                return false;
        while (s->p < s->end && *s->p != '"')
                s->p += *s->p == '\\' && s->p + 1 < s->end ? 2 : 1;
        return json_scan_take(s, '"');
}

static int walk_value(struct walk *w);

static int walk_down(struct walk *w, struct json_step step) {
        int r;

        w->steps[w->depth++] = step;
        r = walk_value(w);
        w->depth--;
        return r;
}

static int walk_member(struct walk *w, struct names *names) {
        const char *start = w->scan.p;
        char *name;
        int r;

        if (!skip_string(&w->scan))
                return -EINVAL;
        r = decode_name(start, w->scan.p, &name);
        if (r == 0)
                r = names_add(names, name);
        if (r < 0)
                return r;
        json_scan_ws(&w->scan);
        if (!json_scan_take(&w->scan, ':'))
                return -EINVAL;
        json_scan_ws(&w->scan);
        return walk_down(w, (struct json_step){ .name = name });
}

/* An object or an array at p: what is inside, then the names the object repeats. */
static int walk_container(struct walk *w, char close) {
        struct names names = { 0 };
        size_t index = 0;
        int r = 0;

        w->scan.p++;
        json_scan_ws(&w->scan);
        if (!json_scan_take(&w->scan, close)) {
                do {
                        json_scan_ws(&w->scan);
                        r = close == '}' ? walk_member(w, &names)
                                         : walk_down(w, (struct json_step){ .index = index++ });
                        json_scan_ws(&w->scan);
                } while (r == 0 && json_scan_take(&w->scan, ','));
                if (r == 0 && !json_scan_take(&w->scan, close))
                        r = -EINVAL;
        }
        if (r == 0)
                r = report(w, &names);
        names_free(&names);
        return r;
}

static int walk_value(struct walk *w) {
        if (w->scan.p >= w->scan.end)
                return -EINVAL;
        if (*w->scan.p == '"')
                return skip_string(&w->scan) ? 0 : -EINVAL;
        if (*w->scan.p == '{' || *w->scan.p == '[') {
                if (w->depth >= w->max_depth)
                        return -EINVAL;
                return walk_container(w, *w->scan.p == '{' ? '}' : ']');
        }
        return json_scan_value(&w->scan) ? 0 : -EINVAL;
}

int json_find_duplicates(const char *text, size_t len, unsigned max_depth, json_duplicate_fn found, void *userdata,
                         size_t *ret_stop) {
        struct walk w = { .max_depth = max_depth, .found = found, .userdata = userdata };
        int r;

        w.steps = calloc((size_t)max_depth + 1, sizeof *w.steps);
        if (!w.steps)
                return -ENOMEM;
        json_scan_init(&w.scan, text, len, max_depth);
        json_scan_ws(&w.scan);
        r = walk_value(&w);
        json_scan_ws(&w.scan);
        if (r == 0 && w.scan.p != w.scan.end)
                r = -EINVAL;
        if (ret_stop)
                *ret_stop = (size_t)(w.scan.p - text);
        free(w.steps);
        return r;
}

char *json_steps_path(const struct json_step *steps, size_t depth) {
        char *path = strdup(""), *next;

        for (size_t i = 0; i < depth && path; i++) {
                int r = steps[i].name ? asprintf(&next, "%s%s%s", path, i ? "." : "", steps[i].name)
                                      : asprintf(&next, "%s[%zu]", path, steps[i].index);
                free(path);
                path = r < 0 ? NULL : next;
        }
        return path;
}
