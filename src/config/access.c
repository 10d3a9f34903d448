/* Access rules and profiles; see access.h. */
#include "access.h"

#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"
#include "settings.h"

static const char *const actions[] = { "allow", "deny", NULL };
static const char *const target_keys[_ACCESS_KIND_MAX] = { "servers", "tools", "prompts", "resources" };

/* ---- users and groups ---- */

static bool all_digits(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

/* A name's uid or gid on this host, from a buffer of size bytes; -ERANGE when too small. */
static int lookup_name(const char *name, bool group, char *buf, size_t size, unsigned *ret) {
        int r;

        if (group) {
                struct group grp, *found = NULL;

                r = getgrnam_r(name, &grp, buf, size, &found);
                if (found)
                        *ret = grp.gr_gid;
        } else {
                struct passwd pw, *found = NULL;

                r = getpwnam_r(name, &pw, buf, size, &found);
                if (found)
                        *ret = pw.pw_uid;
        }
        return r > 0 ? -r : 0;
}

/* A name's uid or gid; *ret is left alone when there is none. A group of many members
 * needs more than the usual buffer. */
static int resolve_name(const char *name, bool group, unsigned *ret) {
        for (size_t size = 16384; size <= 16u << 20; size *= 4) {
                _cleanup_free_ char *buf = malloc(size);
                int r;

                if (!buf)
                        return -ENOMEM;
                r = lookup_name(name, group, buf, size, ret);
                if (r != -ERANGE)
                        return r;
        }
        return -ERANGE;
}

static int parse_id(json_object *item, const char *path, bool group, unsigned *ret, struct config_problems *p) {
        const char *what = group ? "group" : "user";
        const char *s;
        int r;

        if (json_object_is_type(item, json_type_int)) {
                int64_t n = json_object_get_int64(item);

                if (n < 0 || n >= (int64_t)UINT32_MAX) {
                        problems_add(p, PROBLEM_ERROR, path, "expected a %s name or a %cid from 0 to %u", what,
                                     group ? 'g' : 'u', UINT32_MAX - 1);
                        return -EINVAL;
                }
                *ret = (unsigned)n;
                return 0;
        }
        if (!json_object_is_type(item, json_type_string) || settings_string_cut(item, path, p) ||
            !*(s = json_object_get_string(item))) {
                problems_add(p, PROBLEM_ERROR, path, "expected a %s name or a number", what);
                return -EINVAL;
        }
        if (all_digits(s) && strlen(s) < 11 && strtoull(s, NULL, 10) < UINT32_MAX) {
                *ret = (unsigned)strtoull(s, NULL, 10);
                return 0;
        }
        *ret = UINT32_MAX;
        r = resolve_name(s, group, ret);
        if (r < 0) {
                problems_add(p, PROBLEM_ERROR, path, "cannot look up the %s \"%s\": %s", what, s, strerror(-r));
                return -EINVAL;
        }
        if (*ret == UINT32_MAX) {
                /* A typo must not quietly match nobody: a deny rule would then protect nothing. */
                problems_add(p, PROBLEM_ERROR, path, "no %s named \"%s\" on this host (a number names one yet to be created)",
                             what, s);
                return -EINVAL;
        }
        return 0;
}

int access_parse_id(json_object *item, const char *path, bool group, unsigned *ret, struct config_problems *p) {
        return parse_id(item, path, group, ret, p);
}

static int parse_user_id(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                         struct config_problems *p) {
        return parse_id(v, path, false, (unsigned *)list + n, p);
}

static int parse_group_id(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                          struct config_problems *p) {
        return parse_id(v, path, true, (unsigned *)list + n, p);
}

static const struct settings_list user_list = SETTINGS_LIST(struct access_ids, ids, n, parse_user_id, NULL, true,
        "expected a non-empty array of user names or numbers (leave the key out to match everyone)");
static const struct settings_list group_list = SETTINGS_LIST(struct access_ids, ids, n, parse_group_id, NULL, true,
        "expected a non-empty array of group names or numbers (leave the key out to match everyone)");

static int parse_ids(json_object *v, const char *path, struct access_ids *ids, const struct settings_list *how,
                     struct config_problems *p) {
        ids->given = true;
        return settings_parse_list(how, v, path, ids, NULL, p);
}

static int parse_users(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return parse_ids(v, path, dst, &user_list, p);
}

static int parse_groups(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return parse_ids(v, path, dst, &group_list, p);
}

/* ---- rules ---- */

#define RULE_FIELD(key, type, field) { key, type, offsetof(struct access_rule, field), 0, 0, NULL, NULL, NULL }

static const struct setting rule_settings[] = {
        { "users", SETTING_CUSTOM, offsetof(struct access_rule, users), 0, 0, NULL, parse_users, NULL },
        { "groups", SETTING_CUSTOM, offsetof(struct access_rule, groups), 0, 0, NULL, parse_groups, NULL },
        RULE_FIELD("profiles", SETTING_STRINGS, profiles),
        RULE_FIELD("servers", SETTING_STRINGS, targets[ACCESS_SERVER]),
        RULE_FIELD("tools", SETTING_STRINGS, targets[ACCESS_TOOL]),
        RULE_FIELD("prompts", SETTING_STRINGS, targets[ACCESS_PROMPT]),
        RULE_FIELD("resources", SETTING_STRINGS, targets[ACCESS_RESOURCE]),
        { "action", SETTING_CHOICE, offsetof(struct access_rule, action), 0, 0, actions, NULL, NULL },
};

static void targets_done(char **targets[_ACCESS_KIND_MAX]) {
        for (size_t k = 0; k < _ACCESS_KIND_MAX; k++)
                strv_free(targets[k]);
}

static void rule_done(void *item) {
        struct access_rule *r = item;

        free(r->users.ids);
        free(r->groups.ids);
        strv_free(r->profiles);
        targets_done(r->targets);
}

/* An empty list or glob matches nothing: almost surely a mistake, which for a deny rule
 * would protect nothing. */
static size_t check_globs(char **globs, const char *path, const char *key, struct config_problems *p) {
        if (!globs)
                return 0;
        if (!globs[0]) {
                problems_add(p, PROBLEM_ERROR, path, "\"%s\" is empty and would match nothing (leave the key out to match everything)", key);
                return 1;
        }
        for (size_t i = 0; globs[i]; i++)
                if (!*globs[i]) {
                        problems_add(p, PROBLEM_ERROR, path, "\"%s\"[%zu] is an empty pattern", key, i);
                        return 1;
                }
        return 0;
}

static size_t check_targets(char **const targets[_ACCESS_KIND_MAX], const char *path, struct config_problems *p) {
        size_t n = 0;

        for (size_t k = 0; k < _ACCESS_KIND_MAX; k++)
                n += check_globs(targets[k], path, target_keys[k], p);
        return n;
}

/* Item n of a list of rules. */
static int parse_rule(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                      struct config_problems *p) {
        struct access_rule *rule = (struct access_rule *)list + n;
        size_t bad;

        *rule = (struct access_rule){ .action = -1 };
        if (!json_object_is_type(v, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, path, "expected a rule object such as {\"users\": [\"alice\"], \"servers\": [\"github\"], \"action\": \"allow\"}");
                return -EINVAL;
        }
        bad = settings_apply(rule_settings, ARRAY_SIZE(rule_settings), v, path, rule, p);
        bad += check_targets(rule->targets, path, p) + check_globs(rule->profiles, path, "profiles", p);
        if (rule->action < 0 && !json_object_object_get_ex(v, "action", NULL)) {
                problems_add(p, PROBLEM_ERROR, path, "missing \"action\": \"allow\" or \"deny\"");
                bad++;
        }
        return bad ? -EINVAL : 0;
}

static const struct settings_list rule_list = SETTINGS_LIST(struct access_policy, rules, n_rules, parse_rule, rule_done,
        false, "expected an array of rules");

static int parse_rules(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return settings_parse_list(&rule_list, v, path, dst, NULL, p);
}

static const struct setting access_settings[] = {
        { "default", SETTING_CHOICE, offsetof(struct access_policy, default_action), 0, 0, actions, NULL, NULL },
        { "rules", SETTING_CUSTOM, 0, 0, 0, NULL, parse_rules, NULL },
};

int access_parse(json_object *v, const char *path, void *dst, struct config_problems *p) {
        struct access_policy *a = dst;

        if (!json_object_is_type(v, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an object: {\"default\": \"allow\", \"rules\": [...]}");
                return -EINVAL;
        }
        /* A later file's "access" replaces the earlier one whole: half of each (its rules
         * with the other's default) would be a policy nobody wrote. */
        settings_list_done(&rule_list, a);
        a->default_action = ACCESS_RULE_ALLOW;
        return settings_apply(access_settings, ARRAY_SIZE(access_settings), v, path, a, p) ? -EINVAL : 0;
}

/* ---- profiles ---- */

static const struct setting profile_settings[] = {
        { "servers", SETTING_STRINGS, offsetof(struct access_profile, targets[ACCESS_SERVER]), 0, 0, NULL, NULL, NULL },
        { "tools", SETTING_STRINGS, offsetof(struct access_profile, targets[ACCESS_TOOL]), 0, 0, NULL, NULL, NULL },
        { "prompts", SETTING_STRINGS, offsetof(struct access_profile, targets[ACCESS_PROMPT]), 0, 0, NULL, NULL, NULL },
        { "resources", SETTING_STRINGS, offsetof(struct access_profile, targets[ACCESS_RESOURCE]), 0, 0, NULL, NULL, NULL },
};

static void profile_done(void *item) {
        struct access_profile *prof = item;

        free(prof->name);
        targets_done(prof->targets);
}

/* Profile names travel in argv, the environment and _meta: keep them plain. */
static const char *profile_name_problem(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 64 || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") != n)
                return "a profile's name is 1-64 characters of A-Z a-z 0-9 _ - .";
        return NULL;
}

static int parse_profile(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                         struct config_problems *p) {
        struct access_profile *prof = (struct access_profile *)list + n;
        size_t bad;

        if (!json_object_is_type(v, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an object such as {\"servers\": [\"search\"], \"tools\": [\"search__*\"]}");
                return -EINVAL;
        }
        bad = settings_apply(profile_settings, ARRAY_SIZE(profile_settings), v, path, prof, p);
        bad += check_targets(prof->targets, path, p);
        return bad ? -EINVAL : 0;
}

static const struct settings_list profile_list = SETTINGS_LIST_BY_NAME(struct access_policy, profiles, n_profiles,
                                                                       struct access_profile, profile_name_problem,
                                                                       parse_profile, profile_done,
                                                                       "expected an object of profiles by name");

int access_profiles_parse(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return settings_parse_list(&profile_list, v, path, dst, NULL, p);
}

const struct access_profile *access_profile_find(const struct access_policy *a, const char *name) {
        for (size_t i = 0; name && i < a->n_profiles; i++)
                if (strcmp(a->profiles[i].name, name) == 0)
                        return &a->profiles[i];
        return NULL;
}

size_t access_policy_check(const struct access_policy *a, struct config_problems *p) {
        size_t n = 0;

        for (size_t i = 0; i < a->n_rules; i++)
                for (char **s = a->rules[i].profiles; s && *s; s++)
                        if (!access_profile_find(a, *s)) {
                                char path[64];

                                snprintf(path, sizeof path, "mcpvisor.access.rules[%zu].profiles", i);
                                problems_add(p, PROBLEM_ERROR, path, "no profile named \"%s\" in mcpvisor.profiles", *s);
                                n++;
                        }
        return n;
}

void access_policy_done(struct access_policy *a) {
        settings_list_done(&rule_list, a);
        settings_list_done(&profile_list, a);
        *a = (struct access_policy){};
}

/* ---- decisions ---- */

static bool ids_match(const struct access_ids *ids, unsigned id) {
        for (size_t i = 0; i < ids->n; i++)
                if (ids->ids[i] == id)
                        return true;
        return false;
}

static bool groups_match(const struct access_ids *ids, const struct access_who *who) {
        if (ids_match(ids, who->gid))
                return true;
        for (size_t i = 0; i < who->n_groups; i++)
                if (ids_match(ids, who->groups[i]))
                        return true;
        return false;
}

static bool globs_match(char *const *globs, const char *s) {
        for (; *globs; globs++)
                if (fnmatch(*globs, s, 0) == 0)
                        return true;
        return false;
}

static bool strv_has(char *const *strv, const char *s) {
        for (; s && *strv; strv++)
                if (strcmp(*strv, s) == 0)
                        return true;
        return false;
}

static bool principal_matches(const struct access_rule *r, const struct access_who *who) {
        return (!r->users.given || ids_match(&r->users, who->uid)) && (!r->groups.given || groups_match(&r->groups, who)) &&
               (!r->profiles || strv_has(r->profiles, who->profile));
}

static bool has_items(char **const targets[_ACCESS_KIND_MAX]) {
        return targets[ACCESS_TOOL] || targets[ACCESS_PROMPT] || targets[ACCESS_RESOURCE];
}

static bool rule_targets_match(char **const targets[_ACCESS_KIND_MAX], const struct access_target *t) {
        if (targets[ACCESS_SERVER] && !globs_match(targets[ACCESS_SERVER], t->server))
                return false;
        if (!has_items(targets))
                return true;
        return t->kind != ACCESS_SERVER && targets[t->kind] && globs_match(targets[t->kind], t->name);
}

static bool in_profile(const struct access_profile *prof, const struct access_target *t) {
        if (!prof)
                return false;
        if (prof->targets[ACCESS_SERVER] && !globs_match(prof->targets[ACCESS_SERVER], t->server))
                return false;
        return t->kind == ACCESS_SERVER || !prof->targets[t->kind] || globs_match(prof->targets[t->kind], t->name);
}

static bool class_has(const struct access_class *c, size_t i) {
        return i / 64 < c->words && (c->rules[i / 64] >> (i % 64) & 1);
}

struct access_decision access_decide_class(const struct access_policy *a, const struct access_class *c,
                                           const struct access_target *t) {
        /* Outside the profile is outside this connection's world: not found, whatever the rules. */
        if (c->profile && !in_profile(access_profile_find(a, c->profile), t))
                return (struct access_decision){ ACCESS_NOT_FOUND, ACCESS_BY_PROFILE };
        for (size_t i = 0; i < a->n_rules; i++)
                if (class_has(c, i) && rule_targets_match(a->rules[i].targets, t))
                        return (struct access_decision){
                                a->rules[i].action == ACCESS_RULE_DENY ? ACCESS_DENY : ACCESS_ALLOW, (int)i };
        return (struct access_decision){ a->default_action == ACCESS_RULE_DENY ? ACCESS_DENY : ACCESS_ALLOW,
                                         ACCESS_BY_DEFAULT };
}

struct access_decision access_decide(const struct access_policy *a, const struct access_who *who,
                                     const struct access_target *t) {
        struct access_class c = {};
        struct access_decision d;

        if (access_class_of(a, who, &c) < 0)
                return (struct access_decision){ ACCESS_DENY, ACCESS_BY_DEFAULT }; /* out of memory: refuse */
        d = access_decide_class(a, &c, t);
        access_class_done(&c);
        return d;
}

int access_class_of(const struct access_policy *a, const struct access_who *who, struct access_class *ret) {
        struct access_class c = { .words = (a->n_rules + 63) / 64 };

        c.rules = calloc(c.words ? c.words : 1, sizeof *c.rules);
        if (!c.rules)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_rules; i++)
                if (principal_matches(&a->rules[i], who))
                        c.rules[i / 64] |= (uint64_t)1 << (i % 64);
        if (who->profile && !(c.profile = strdup(who->profile))) {
                free(c.rules);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

void access_class_done(struct access_class *c) {
        free(c->rules);
        free(c->profile);
        *c = (struct access_class){};
}

bool access_class_equal(const struct access_class *x, const struct access_class *y) {
        if (x->words != y->words || (x->words && memcmp(x->rules, y->rules, x->words * sizeof *x->rules) != 0))
                return false;
        return x->profile == y->profile || (x->profile && y->profile && strcmp(x->profile, y->profile) == 0);
}

int access_class_copy(struct access_class *dst, const struct access_class *src) {
        struct access_class c = { .words = src->words };

        c.rules = calloc(c.words ? c.words : 1, sizeof *c.rules);
        if (!c.rules)
                return -ENOMEM;
        if (c.words)
                memcpy(c.rules, src->rules, c.words * sizeof *c.rules);
        if (src->profile && !(c.profile = strdup(src->profile))) {
                free(c.rules);
                return -ENOMEM;
        }
        *dst = c;
        return 0;
}

bool access_policy_open(const struct access_policy *a) {
        return a->n_rules == 0 && a->default_action == ACCESS_RULE_ALLOW && a->n_profiles == 0;
}

const char *access_verdict_to_string(enum access_verdict v) {
        static const char *const names[] = { "allow", "deny", "not found" };

        return v < ARRAY_SIZE(names) ? names[v] : "?";
}
