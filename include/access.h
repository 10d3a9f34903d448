/* Who may see and call what: the daemon's "access" setting (rules, first match wins, as in
 * a firewall or sudoers) and its "profiles" (named, narrower views a connection may choose).
 * access_decide() is the one place that answers, for a principal and a target, allow, deny
 * (the target exists, and the principal may not use it) or not found (outside the chosen
 * profile: the target is not in this connection's world at all).
 *
 * A rule matches principals by "users" (names or uids), "groups" (names or gids, primary or
 * supplementary) and "profiles"; a rule without them matches everyone. It matches targets by
 * "servers" (globs on server names) and, within them, "tools" and "prompts" (globs on exposed
 * names) and "resources" (globs on URIs); a rule without them matches everything. A rule with
 * item globs matches only items of those kinds, never a server as a whole. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct config_problems;

enum access_kind {
        ACCESS_SERVER,   /* a server as a whole: its notifications and requests */
        ACCESS_TOOL,
        ACCESS_PROMPT,
        ACCESS_RESOURCE, /* a resource's URI, or a template's uriTemplate */
        _ACCESS_KIND_MAX,
};

enum access_verdict {
        ACCESS_ALLOW,
        ACCESS_DENY,
        ACCESS_NOT_FOUND,
};

/* What a decision is about. name is the exposed name (or URI); NULL for ACCESS_SERVER. */
struct access_target {
        enum access_kind kind;
        const char *server;
        const char *name;
};

/* Whom it is about: a connection's principal and the profile it chose (NULL: none). */
struct access_who {
        uid_t uid;
        gid_t gid;
        const gid_t *groups;
        size_t n_groups;
        const char *profile;
};

/* One user (group: false) or group as the rules take it: a name of this host or a number;
 * a problem at path otherwise. Also for principals configured elsewhere (HTTP tokens). */
int access_parse_id(json_object *item, const char *path, bool group, unsigned *ret, struct config_problems *p);

/* "action" and "default", as indexes of the choices "allow", "deny". */
#define ACCESS_RULE_ALLOW 0
#define ACCESS_RULE_DENY 1

struct access_ids {
        unsigned *ids; /* uids or gids */
        size_t n;
        bool given;    /* the key is present; absent matches everyone */
};

struct access_rule {
        struct access_ids users;
        struct access_ids groups;
        char **profiles;                 /* NULL: any profile or none */
        char **targets[_ACCESS_KIND_MAX]; /* "servers", "tools", "prompts", "resources"; NULL: absent */
        int action;                      /* ACCESS_RULE_ALLOW or ACCESS_RULE_DENY */
};

/* A profile narrows each kind it names to its globs ("servers" narrows everything), and
 * leaves a kind it does not name as the rules have it. */
struct access_profile {
        char *name;
        char **targets[_ACCESS_KIND_MAX];
};

struct access_policy {
        int default_action;              /* ACCESS_RULE_ALLOW (also when "access" is absent) or _DENY */
        struct access_rule *rules;
        size_t n_rules;
        struct access_profile *profiles;
        size_t n_profiles;
};

/* Which rule or profile decided: rule >= 0 is an index into rules; ACCESS_BY_DEFAULT is the
 * default, ACCESS_BY_PROFILE the chosen profile (which only ever narrows). */
#define ACCESS_BY_DEFAULT (-1)
#define ACCESS_BY_PROFILE (-2)

struct access_decision {
        enum access_verdict verdict;
        int by;
};

/* Settings-table parsers (SETTING_CUSTOM) for "access" and "profiles", into dst, a struct
 * access_policy; each bad key, value and name is a problem at its JSON path. */
int access_parse(json_object *v, const char *path, void *dst, struct config_problems *p);
int access_profiles_parse(json_object *v, const char *path, void *dst, struct config_problems *p);
/* What only both together can check: every profile a rule names exists. Returns the number
 * of problems added. */
size_t access_policy_check(const struct access_policy *a, struct config_problems *p);
void access_policy_done(struct access_policy *a);

/* The profile called name, or NULL. */
const struct access_profile *access_profile_find(const struct access_policy *a, const char *name);

/* The decision for who on target. An unknown who->profile narrows to nothing (not found);
 * initialize refuses unknown profiles before it comes to this. */
struct access_decision access_decide(const struct access_policy *a, const struct access_who *who,
                                     const struct access_target *t);

/* What of the policy depends on who a connection is: the rules whose principal fields match
 * it, and its profile. Connections of one class see the same (view.h); it is computed once,
 * when the connection chooses its profile, and again when the policy changes. */
struct access_class {
        uint64_t *rules;   /* bit i: rule i matches the principal */
        size_t words;
        char *profile;     /* NULL: none */
};

int access_class_of(const struct access_policy *a, const struct access_who *who, struct access_class *ret);
void access_class_done(struct access_class *c);
bool access_class_equal(const struct access_class *x, const struct access_class *y);
int access_class_copy(struct access_class *dst, const struct access_class *src);
/* access_decide() for a connection of class c. */
struct access_decision access_decide_class(const struct access_policy *a, const struct access_class *c,
                                           const struct access_target *t);
/* True when the policy lets every class see everything (no rules, default allow, no
 * profile in use): the common case, that needs no views at all. */
bool access_policy_open(const struct access_policy *a);

/* "allow", "deny", "not found". */
const char *access_verdict_to_string(enum access_verdict v);
