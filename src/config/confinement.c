/* A server's confinement settings; see confinement.h. */
#include "confinement.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"
#include "settings.h"
#include "text.h"

const char *const confinement_sandbox_names[] = { "strict", "basic", "none", NULL };

const char *const confinement_key_names[CONFINEMENT_KEY_COUNT] = {
        [CONFINEMENT_KEY_SANDBOX] = "sandbox",
        [CONFINEMENT_KEY_READ_WRITE_PATHS] = "readWritePaths",
        [CONFINEMENT_KEY_READ_ONLY_PATHS] = "readOnlyPaths",
        [CONFINEMENT_KEY_NETWORK] = "network",
        [CONFINEMENT_KEY_MEMORY_MAX] = "memoryMax",
        [CONFINEMENT_KEY_TASKS_MAX] = "tasksMax",
        [CONFINEMENT_KEY_CPU_QUOTA] = "cpuQuota",
        [CONFINEMENT_KEY_USER] = "user",
        [CONFINEMENT_KEY_GROUP] = "group",
        [CONFINEMENT_KEY_DYNAMIC_USER] = "dynamicUser",
        [CONFINEMENT_KEY_STATE_DIRECTORY] = "stateDirectory",
};

/* What "stateDirectory": true names, below /var/lib or $XDG_CONFIG_HOME: a directory of
 * its own, so that a server's name never lands on the daemon's files there (the config
 * file and mcpvisor.d/ under a user manager). */
#define STATE_DIRECTORY_PARENT "mcpvisor/servers"
#define STATE_DIRECTORY_MAX 255
#define NAME_MAX_LEN 32

void confinement_init(struct confinement *c) {
        *c = (struct confinement){ .sandbox = CONFINEMENT_DEFAULT_SANDBOX, .network = true };
}

void confinement_done(struct confinement *c) {
        strv_free(c->read_write_paths);
        strv_free(c->read_only_paths);
        free(c->user);
        free(c->group);
        free(c->state_directory);
        confinement_init(c);
}

/* An array of absolute paths; "." and ".." components are refused, as they would name
 * another directory than the one written. */
static const char *path_problem(const char *s) {
        if (s[0] != '/')
                return "expected an absolute path";
        for (const char *c = s; (c = strchr(c, '/')); c++)
                if ((c[1] == '.' && (c[2] == '/' || !c[2])) || (c[1] == '.' && c[2] == '.' && (c[3] == '/' || !c[3])))
                        return "expected an absolute path without \".\" or \"..\"";
        return NULL;
}

int confinement_parse_paths(json_object *v, const char *path, void *dst, struct config_problems *p) {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
        char **strv;

        if (!json_object_is_type(v, json_type_array)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an array of absolute paths");
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                json_object *item = json_object_array_get_idx(v, i);
                const char *why = json_object_is_type(item, json_type_string) ? path_problem(json_object_get_string(item))
                                                                               : "expected an absolute path";
                char item_path[600];

                snprintf(item_path, sizeof item_path, "%s[%zu]", path, i);
                if (settings_string_cut(item, item_path, p))
                        return -EINVAL;
                if (why) {
                        problems_add(p, PROBLEM_ERROR, item_path, "%s", why);
                        return -EINVAL;
                }
        }
        strv = calloc(n + 1, sizeof *strv);
        if (!strv)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(strv[i] = strdup(json_object_get_string(json_object_array_get_idx(v, i))))) {
                        strv_free(strv);
                        return -ENOMEM;
                }
        strv_free(*(char ***)dst);
        *(char ***)dst = strv;
        return 0;
}

static uint64_t unit_multiplier(char unit) {
        static const char units[] = "KMGT";
        const char *u = unit ? strchr(units, unit) : NULL;

        return u ? (uint64_t)1 << (10 * (u - units + 1)) : 0;
}

/* digits[.digits][K|M|G|T]: whole part in integers (exact), the fraction in doubles. */
int confinement_parse_size(const char *s, uint64_t *ret) {
        uint64_t whole = 0, mult = 1;
        double fraction = 0, scale = 0.1;
        const char *c = s;

        if (strcmp(s, "infinity") == 0) {
                *ret = CONFINEMENT_INFINITY;
                return 0;
        }
        if (*c < '0' || *c > '9')
                return -EINVAL;
        for (; *c >= '0' && *c <= '9'; c++) {
                if (whole > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t)(*c - '0');
        }
        if (*c == '.') {
                if (c[1] < '0' || c[1] > '9')
                        return -EINVAL;
                for (c++; *c >= '0' && *c <= '9'; c++, scale /= 10)
                        fraction += scale * (*c - '0');
        }
        if (*c) {
                mult = unit_multiplier(*c);
                if (mult == 0 || c[1])
                        return -EINVAL;
        }
        if (whole > (UINT64_MAX / 2) / mult)
                return -ERANGE;
        *ret = whole * mult + (uint64_t)(fraction * (double)mult);
        return 0;
}

int confinement_parse_memory(json_object *v, const char *path, void *dst, struct config_problems *p) {
        uint64_t bytes = 0;
        int r = -EINVAL;

        if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0) {
                bytes = (uint64_t)json_object_get_int64(v);
                r = 0;
        } else if (json_object_is_type(v, json_type_string))
                r = confinement_parse_size(json_object_get_string(v), &bytes);
        if (r < 0 || bytes == 0) {
                problems_add(p, PROBLEM_ERROR, path,
                             "expected a number of bytes above 0, a size such as \"256M\" or \"1.5G\" (K, M, G, T: powers of 1024), or \"infinity\"");
                return -EINVAL;
        }
        *(uint64_t *)dst = bytes;
        return 0;
}

/* N% or N.NN%: systemd keeps CPU quotas to a hundredth of a percent. */
int confinement_parse_percent(const char *s, uint64_t *ret) {
        size_t len = strlen(s), digits = strspn(s, "0123456789"), decimals = 0;
        double percent;

        if (len < 2 || s[len - 1] != '%' || digits == 0)
                return -EINVAL;
        if (s[digits] == '.') {
                decimals = strspn(s + digits + 1, "0123456789");
                if (decimals == 0 || decimals > 2)
                        return -EINVAL;
                decimals++;
        }
        if (digits + decimals != len - 1 || digits > 7)
                return -EINVAL;
        percent = strtod(s, NULL);
        if (!(percent > 0) || percent > CONFINEMENT_CPU_PERCENT_MAX)
                return -ERANGE;
        *ret = (uint64_t)llround(percent * 10000);
        return 0;
}

int confinement_parse_cpu_quota(json_object *v, const char *path, void *dst, struct config_problems *p) {
        uint64_t usec;

        if (!json_object_is_type(v, json_type_string) || confinement_parse_percent(json_object_get_string(v), &usec) < 0) {
                problems_add(p, PROBLEM_ERROR, path,
                             "expected a percentage of one CPU above 0%% and at most %d%%, such as \"50%%\" or \"200%%\" (two CPUs)",
                             CONFINEMENT_CPU_PERCENT_MAX);
                return -EINVAL;
        }
        *(uint64_t *)dst = usec;
        return 0;
}

/* User and group names as useradd takes them: a letter or '_' first (so never a number),
 * then letters, digits, '_', '-' and '.', at most 32. */
static bool name_valid(const char *s) {
        size_t len = strlen(s);

        return len > 0 && len <= NAME_MAX_LEN && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_') &&
               strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") == len;
}

int confinement_parse_name(json_object *v, const char *path, void *dst, struct config_problems *p) {
        char **name = dst;

        if (!json_object_is_type(v, json_type_string) || !name_valid(json_object_get_string(v))) {
                problems_add(p, PROBLEM_ERROR, path,
                             "expected a name: 1-%d letters, digits, '_', '-' and '.', starting with a letter or '_'", NAME_MAX_LEN);
                return -EINVAL;
        }
        free(*name);
        *name = strdup(json_object_get_string(v));
        return *name ? 0 : -ENOMEM;
}

/* A relative, normalized path of plain components; systemd also refuses "private", where
 * it keeps DynamicUser='s directories. */
static bool state_directory_valid(const char *s) {
        size_t len = strlen(s);

        if (len == 0 || len > STATE_DIRECTORY_MAX || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./") != len)
                return false;
        if (strncmp(s, "private", 7) == 0 && (s[7] == '/' || !s[7]))
                return false;
        for (const char *c = s;; c++) {
                size_t n = strcspn(c, "/");

                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                c += n;
                if (!*c)
                        return true;
        }
}

int confinement_parse_state_directory(json_object *v, const char *path, void *dst, struct config_problems *p) {
        char **dir = dst;
        const char *s;

        if (json_object_is_type(v, json_type_boolean)) {
                free(*dir);
                *dir = json_object_get_boolean(v) ? strdup("") : NULL;
                return !json_object_get_boolean(v) || *dir ? 0 : -ENOMEM;
        }
        s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        if (!s || !state_directory_valid(s)) {
                problems_add(p, PROBLEM_ERROR, path,
                             "expected true, false or a relative path such as \"mcpvisor/memory\" (letters, digits, '_', '-', '.', "
                             "no \".\" or \"..\" components, not \"private\")");
                return -EINVAL;
        }
        free(*dir);
        *dir = strdup(s);
        return *dir ? 0 : -ENOMEM;
}

int confinement_finish(struct confinement *c, json_object *entry, const char *server, const char *path,
                       struct config_problems *p) {
        char item[600];

        c->keys = 0;
        for (int k = 0; k < CONFINEMENT_KEY_COUNT; k++)
                if (json_object_object_get_ex(entry, confinement_key_names[k], NULL))
                        c->keys |= 1u << k;
        if (!c->state_directory || *c->state_directory)
                return 0;
        free(c->state_directory);
        if (asprintf(&c->state_directory, STATE_DIRECTORY_PARENT "/%s", server) < 0) {
                c->state_directory = NULL;
                return -ENOMEM;
        }
        if (state_directory_valid(c->state_directory))
                return 0;
        snprintf(item, sizeof item, "%s.stateDirectory", path);
        problems_add(p, PROBLEM_ERROR, item, "a server named '%s' cannot have a directory of its name: give one, such as \"mcpvisor/state\"",
                     server);
        return -EINVAL;
}

const char *confinement_first_key(const struct confinement *c) {
        for (int k = 0; k < CONFINEMENT_KEY_COUNT; k++)
                if (c->keys & (1u << k))
                        return confinement_key_names[k];
        return NULL;
}

/* What the unit would be given; which keys said so does not matter ("network": true is
 * the same as no "network"). */
bool confinement_equal(const struct confinement *a, const struct confinement *b) {
        return a->sandbox == b->sandbox && text_strv_equal(a->read_write_paths, b->read_write_paths) &&
               text_strv_equal(a->read_only_paths, b->read_only_paths) && a->network == b->network &&
               a->memory_max == b->memory_max && a->tasks_max == b->tasks_max && a->cpu_quota_usec == b->cpu_quota_usec &&
               text_equal(a->user, b->user) && text_equal(a->group, b->group) && a->dynamic_user == b->dynamic_user &&
               text_equal(a->state_directory, b->state_directory);
}

int confinement_check_manager(const struct confinement *c, enum manager_kind kind, char **error) {
        const char *key = c->user ? "user" : c->group ? "group" : c->dynamic_user ? "dynamicUser" : NULL;

        if (kind == MANAGER_SYSTEM || !key)
                return 0;
        if (asprintf(error, "%s needs the system service manager; this mcpvisord's servers are units of a user manager "
                            "(its own, or an unprivileged mcpvisord's user's), which runs them as that user (remove %s, "
                            "or run mcpvisord as root)", key, key) < 0)
                *error = NULL;
        return -EPERM;
}
