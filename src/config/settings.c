/* Table-driven settings; see settings.h. */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

void strv_free(char **strv) {
        for (char **s = strv; s && *s; s++)
                free(*s);
        free(strv);
}

bool settings_string_cut(json_object *v, const char *path, struct config_problems *p) {
        if (!json_object_is_type(v, json_type_string) ||
            strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v))
                return false;
        problems_add(p, PROBLEM_ERROR, path, "contains a NUL character (\\u0000): it would cut the string short there");
        return true;
}

static int parse_string(json_object *v, const char *path, bool absolute, char **dst, struct config_problems *p) {
        if (!json_object_is_type(v, json_type_string) || (absolute && json_object_get_string(v)[0] != '/')) {
                problems_add(p, PROBLEM_ERROR, path, absolute ? "expected an absolute path" : "expected a string");
                return -EINVAL;
        }
        free(*dst);
        *dst = strdup(json_object_get_string(v));
        return 0;
}

static int parse_number(const struct setting *s, json_object *v, const char *path, double *ret,
                        struct config_problems *p) {
        static const char *const units[] = { [SETTING_SIZE] = " (bytes)", [SETTING_SECONDS] = " (seconds)",
                                             [SETTING_COUNT] = "" };
        bool number = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
        double d = number ? json_object_get_double(v) : NAN;

        if (!number || !isfinite(d) || d < s->min || d > s->max ||
            (s->type != SETTING_SECONDS && d != floor(d))) {
                problems_add(p, PROBLEM_ERROR, path, "expected a %snumber from %.15g to %.15g%s",
                             s->type == SETTING_SECONDS ? "" : "whole ", s->min, s->max, units[s->type]);
                return -EINVAL;
        }
        *ret = d;
        return 0;
}

static int parse_mode(json_object *v, const char *path, int *dst, struct config_problems *p) {
        const char *str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
        char *end = NULL;
        long mode = *str >= '0' && *str <= '7' ? strtol(str, &end, 8) : -1;

        if (mode < 0 || mode > 0777 || *end) {
                problems_add(p, PROBLEM_ERROR, path, "expected an octal mode string such as \"0660\"");
                return -EINVAL;
        }
        *dst = (int)mode;
        return 0;
}

static int parse_log_level(json_object *v, const char *path, int *dst, struct config_problems *p) {
        int level = json_object_is_type(v, json_type_string) ? log_level_from_string(json_object_get_string(v)) : -EINVAL;

        if (level < 0) {
                problems_add(p, PROBLEM_ERROR, path, "expected one of \"err\", \"warning\", \"notice\", \"info\", \"debug\"");
                return -EINVAL;
        }
        *dst = level;
        return 0;
}

static int parse_strings(json_object *v, const char *path, char ***dst, struct config_problems *p) {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
        char **strv;
        int r = 0;

        if (!json_object_is_type(v, json_type_array)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an array of strings");
                return -EINVAL;
        }
        strv = calloc(n + 1, sizeof *strv);
        if (!strv)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *item = json_object_array_get_idx(v, i);
                char item_path[512];

                snprintf(item_path, sizeof item_path, "%s[%zu]", path, i);
                if (!json_object_is_type(item, json_type_string)) {
                        problems_add(p, PROBLEM_ERROR, item_path, "expected a string");
                        r = -EINVAL;
                        continue;
                }
                if (settings_string_cut(item, item_path, p)) {
                        r = -EINVAL;
                        continue;
                }
                strv[i] = strdup(json_object_get_string(item));
        }
        if (r < 0) {
                /* entries after a hole are unreachable through the NULL terminator: free them all */
                for (size_t i = 0; i < n; i++)
                        free(strv[i]);
                free(strv);
                return r;
        }
        strv_free(*dst);
        *dst = strv;
        return 0;
}

void settings_list_done(const struct settings_list *how, void *dst) {
        char **list = (char **)((char *)dst + how->list_offset);
        size_t *n = (size_t *)((char *)dst + how->count_offset);

        for (size_t i = 0; how->item_done && i < *n; i++)
                how->item_done(*list + i * how->item_size);
        free(*list);
        *list = NULL;
        *n = 0;
}

/* The item named name (NULL in an array): its name checked, its value parsed, its name kept. */
static int parse_named_item(const struct settings_list *how, json_object *v, const char *name, const char *path,
                            char *list, size_t n, void *arg, struct config_problems *p) {
        const char *why = name && how->name_problem ? how->name_problem(name) : NULL;
        char **name_copy = (char **)(list + n * how->item_size + how->name_offset);
        int r;

        if (why) {
                problems_add(p, PROBLEM_ERROR, path, "%s", why);
                return -EINVAL;
        }
        r = how->parse_item(v, name, path, list, n, arg, p);
        if (r < 0)
                return r;
        if (name && !(*name_copy = strdup(name)))
                return -ENOMEM;
        return 0;
}

/* Item *kept of list, or left out (zeroed) when in error: -EINVAL, told, or -ENOMEM. */
static int parse_list_item(const struct settings_list *how, json_object *v, const char *name, const char *path,
                           char *list, size_t *kept, void *arg, struct config_problems *p) {
        char *item = list + *kept * how->item_size;
        int r = parse_named_item(how, v, name, path, list, *kept, arg, p);

        if (r < 0) {
                if (how->item_done)
                        how->item_done(item);
                memset(item, 0, how->item_size);
                return r;
        }
        (*kept)++;
        return 0;
}

/* Out of memory outweighs an item in error: the configuration is not read at all then. */
static int worse(int r, int q) {
        return r == -ENOMEM || q >= 0 ? r : q;
}

int settings_parse_list(const struct settings_list *how, json_object *v, const char *path, void *dst, void *arg,
                        struct config_problems *p) {
        bool fits = json_object_is_type(v, how->by_name ? json_type_object : json_type_array);
        size_t n = !fits ? 0 : how->by_name ? (size_t)json_object_object_length(v) : json_object_array_length(v);
        size_t kept = 0;
        char item_path[600];
        char *list;
        int r = 0;

        if (!fits || (how->nonempty && n == 0)) {
                problems_add(p, PROBLEM_ERROR, path, "%s", how->expected);
                return -EINVAL;
        }
        settings_list_done(how, dst);
        list = calloc(n + 1, how->item_size);
        if (!list)
                return -ENOMEM;
        if (how->by_name) {
                json_object_object_foreach(v, name, item) {
                        snprintf(item_path, sizeof item_path, "%s.%s", path, name);
                        r = worse(r, parse_list_item(how, item, name, item_path, list, &kept, arg, p));
                }
        } else
                for (size_t i = 0; i < n; i++) {
                        json_object *item = json_object_array_get_idx(v, i);

                        snprintf(item_path, sizeof item_path, "%s[%zu]", path, i);
                        r = worse(r, parse_list_item(how, item, NULL, item_path, list, &kept, arg, p));
                }
        *(char **)((char *)dst + how->list_offset) = list;
        *(size_t *)((char *)dst + how->count_offset) = kept;
        return r;
}

static int parse_choice(const struct setting *s, json_object *v, const char *path, int *dst,
                        struct config_problems *p) {
        const char *str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        char list[256] = "";

        for (int i = 0; s->choices[i]; i++) {
                if (str && strcmp(str, s->choices[i]) == 0) {
                        *dst = i;
                        return 0;
                }
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "", s->choices[i]);
        }
        problems_add(p, PROBLEM_ERROR, path, "expected one of %s", list);
        return -EINVAL;
}

static int apply_one(const struct setting *s, json_object *v, const char *path, void *base, struct config_problems *p) {
        void *dst = (char *)base + s->offset;
        double d;
        int r;

        if (settings_string_cut(v, path, p))
                return -EINVAL;
        switch (s->type) {
        case SETTING_PATH:
        case SETTING_STRING:
                return parse_string(v, path, s->type == SETTING_PATH, dst, p);
        case SETTING_SIZE:
        case SETTING_SECONDS:
        case SETTING_COUNT:
                r = parse_number(s, v, path, &d, p);
                if (r < 0)
                        return r;
                if (s->type == SETTING_SIZE)
                        *(size_t *)dst = (size_t)d;
                else if (s->type == SETTING_COUNT)
                        *(unsigned *)dst = (unsigned)d;
                else
                        *(double *)dst = d;
                return 0;
        case SETTING_MODE:
                return parse_mode(v, path, dst, p);
        case SETTING_LOG_LEVEL:
                return parse_log_level(v, path, dst, p);
        case SETTING_BOOL:
                if (!json_object_is_type(v, json_type_boolean)) {
                        problems_add(p, PROBLEM_ERROR, path, "expected true or false");
                        return -EINVAL;
                }
                *(bool *)dst = json_object_get_boolean(v);
                return 0;
        case SETTING_STRINGS:
                return parse_strings(v, path, dst, p);
        case SETTING_CHOICE:
                return parse_choice(s, v, path, dst, p);
        case SETTING_CUSTOM:
                return s->parse(v, path, dst, p);
        case SETTING_IGNORED:
                return 0;
        case SETTING_NOTED:
                problems_add(p, PROBLEM_WARNING, path, "%s", s->note);
                return 0;
        case SETTING_REFUSED:
                problems_add(p, PROBLEM_ERROR, path, "%s", s->note);
                return -EINVAL;
        }
        return -EINVAL;
}

/* Optimal string alignment distance, letters compared without case: a typo is mostly a
 * letter dropped, added, changed, or two swapped. Keys longer than the rows are far. */
#define KEY_ROW 64

static size_t distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b), rows[3][KEY_ROW + 1];

        if (la > KEY_ROW || lb > KEY_ROW)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                rows[0][j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t *prev2 = rows[(i + 1) % 3], *prev = rows[(i + 2) % 3], *row = rows[i % 3];

                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
                        size_t d = prev[j - 1] + cost;

                        if (prev[j] + 1 < d)
                                d = prev[j] + 1;
                        if (row[j - 1] + 1 < d)
                                d = row[j - 1] + 1;
                        if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                            tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && prev2[j - 2] + 1 < d)
                                d = prev2[j - 2] + 1;
                        row[j] = d;
                }
        }
        return rows[la % 3][lb];
}

const char *settings_closest(const struct setting *table, size_t n, const char *key) {
        size_t best = SIZE_MAX, limit = strlen(key) / 3 > 1 ? strlen(key) / 3 : 1;
        const char *closest = NULL;

        for (size_t i = 0; i < n; i++) {
                size_t d = distance(key, table[i].key);
                if (d < best) {
                        best = d;
                        closest = table[i].key;
                }
        }
        return best <= limit ? closest : NULL;
}

static void unknown_key(const struct setting *table, size_t n, const char *key, const char *path,
                        struct config_problems *p) {
        const char *closest = settings_closest(table, n, key);

        if (closest)
                problems_add(p, PROBLEM_ERROR, path, "unknown key; did you mean \"%s\"?", closest);
        else
                problems_add(p, PROBLEM_ERROR, path, "unknown key (the keys are listed in mcpvisor.json(5))");
}

static const struct setting *find_setting(const struct setting *table, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(table[i].key, key) == 0)
                        return &table[i];
        return NULL;
}

size_t settings_apply(const struct setting *table, size_t n, json_object *obj, const char *path, void *base,
                      struct config_problems *p) {
        size_t failed = 0;

        if (!json_object_is_type(obj, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an object");
                return 1;
        }
        json_object_object_foreach(obj, key, value) {
                const struct setting *s = find_setting(table, n, key);
                char *keypath;

                if (asprintf(&keypath, "%s%s%s", path, *path ? "." : "", key) < 0) {
                        failed++;
                        continue;
                }
                if (!s) {
                        unknown_key(table, n, key, keypath, p);
                        failed++;
                } else if (apply_one(s, value, keypath, base, p) < 0)
                        failed++;
                free(keypath);
        }
        return failed;
}
