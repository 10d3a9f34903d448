/* "access" on the control socket, for mcpvisorctl access: what a user (and a profile) would
 * see, decided by the policy as a connection of that user's would be (access.h): each
 * configured server and each tool, prompt, resource and template the registry lists, with
 * its verdict and what decided it: a rule's number (1-based, as people count the rules of
 * the file), "default" or "profile". The user is resolved here as the daemon resolved the
 * rules' names: uid, primary gid and supplementary groups from the user database. A
 * connection's own groups come from the kernel (SO_PEERGROUPS) and may differ from the
 * database until that user logs in again. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "config.h"
#include "daemon-handle.h"
#include "pool.h"
#include "jsonrpc.h"
#include "methods.h"
#include "registry.h"
#include "supervisor.h"
#include "user-db.h"
#include "view.h"

/* Who the query is about, resolved. */
struct query_user {
        char *name;
        uid_t uid;
        gid_t gid;
        gid_t *groups; /* as the group database has them, the primary one among them */
        size_t n_groups;
};

static void query_user_done(struct query_user *u) {
        free(u->name);
        free(u->groups);
}

static bool all_digits(const char *s) {
        return *s && strspn(s, "0123456789") == strlen(s);
}

/* The user's passwd entry by name or by uid ("1000" or 1000); -ENOENT when there is none. */
static int lookup_user(json_object *v, struct query_user *u) {
        struct passwd pw, *found = NULL;
        const char *s = json_object_get_string(v);
        char buf[16384];
        unsigned long n;

        if (all_digits(s)) {
                errno = 0;
                n = strtoul(s, NULL, 10);
                if (errno || n >= UINT32_MAX)
                        return -ENOENT;
                (void)getpwuid_r((uid_t)n, &pw, buf, sizeof buf, &found);
        } else
                (void)getpwnam_r(s, &pw, buf, sizeof buf, &found);
        if (!found)
                return -ENOENT;
        *u = (struct query_user){ .name = strdup(pw.pw_name), .uid = pw.pw_uid, .gid = pw.pw_gid };
        return u->name ? 0 : -ENOMEM;
}

static json_object *decided_by(int by) {
        if (by == ACCESS_BY_DEFAULT)
                return json_object_new_string("default");
        if (by == ACCESS_BY_PROFILE)
                return json_object_new_string("profile");
        return json_object_new_int(by + 1);
}

static json_object *row(const char *name, const char *server, struct access_decision d) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "name", jsonrpc_text(name));
        if (server)
                json_object_object_add(o, "server", json_object_new_string(server));
        json_object_object_add(o, "verdict", json_object_new_string(access_verdict_to_string(d.verdict)));
        json_object_object_add(o, "rule", decided_by(d.by));
        return o;
}

/* One row per entry of the registry's list of kind. */
static json_object *items(struct daemon *d, const struct access_class *c, enum catalog_kind kind) {
        const struct registry_list *l = registry_list(daemon_registry(d), kind);
        json_object *list = json_object_new_array_ext((int)(l->n ? l->n : 1));

        for (size_t i = 0; i < l->n; i++) {
                const struct registry_entry *e = &l->entries[i];
                const char *key = e->key; /* what rules match: its exposed name, URI or template */
                struct access_target t = { view_access_kind(kind), e->server->config->name, key };

                json_object_array_add(list, row(key, t.server, access_decide_class(&daemon_config(d)->access, c, &t)));
        }
        return list;
}

/* The first of server's items (in the rows built) that is allowed, or NULL. */
static json_object *allowed_item(json_object *const lists[CATALOG_KIND_COUNT], const char *server) {
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                for (size_t i = 0; i < json_object_array_length(lists[k]); i++) {
                        json_object *r = json_object_array_get_idx(lists[k], i), *s, *v;

                        if (json_object_object_get_ex(r, "server", &s) && strcmp(json_object_get_string(s), server) == 0 &&
                            json_object_object_get_ex(r, "verdict", &v) && strcmp(json_object_get_string(v), "allow") == 0)
                                return r;
                }
        return NULL;
}

/* A server denied as a whole is visible still when any of its items is allowed (view.h):
 * its row says so, and which item's rule let it through. */
static json_object *servers(struct daemon *d, const struct access_class *c, json_object *const lists[CATALOG_KIND_COUNT]) {
        const struct supervisor *sv = daemon_supervisor(d);
        const struct access_policy *policy = &daemon_config(d)->access;
        json_object *list = json_object_new_array();

        for (size_t i = 0; i < sv->n_servers; i++) {
                const char *name = sv->servers[i]->config->name;
                struct access_target t = { ACCESS_SERVER, name, NULL };
                struct access_decision dec = access_decide_class(policy, c, &t);
                json_object *item, *r;

                if (sv->servers[i]->removed || sv->servers[i]->owner.kind != OWNER_NONE) /* instances: below */
                        continue;
                item = dec.verdict == ACCESS_DENY ? allowed_item(lists, name) : NULL;
                r = row(name, NULL, dec);
                if (item) {
                        json_object_object_add(r, "verdict", json_object_new_string("allow"));
                        json_object_object_add(r, "rule", json_object_get(json_object_object_get(item, "rule")));
                        json_object_object_add(r, "throughItem", json_object_get(json_object_object_get(item, "name")));
                }
                json_object_array_add(list, r);
        }
        /* A server run as instances, as a whole (its items are each client's own). */
        for (size_t i = 0; i < sv->n_pools; i++) {
                const char *name = pool_name(sv->pools[i]);
                struct access_target t = { ACCESS_SERVER, name, NULL };
                json_object *r = row(name, NULL, access_decide_class(policy, c, &t));

                json_object_object_add(r, "instances",
                                       json_object_new_string(server_instances_names[sv->pools[i]->config->instances]));
                json_object_array_add(list, r);
        }
        return list;
}

static json_object *report(struct daemon *d, const struct query_user *u, const struct access_class *c) {
        static const char *const keys[CATALOG_KIND_COUNT] = { "tools", "prompts", "resources", "resourceTemplates" };
        const struct access_policy *policy = &daemon_config(d)->access;
        json_object *o = json_object_new_object(), *groups = json_object_new_array(), *lists[CATALOG_KIND_COUNT];

        for (size_t i = 0; i < u->n_groups; i++)
                json_object_array_add(groups, json_object_new_int64(u->groups[i]));
        json_object_object_add(o, "user", json_object_new_string(u->name));
        json_object_object_add(o, "uid", json_object_new_int64(u->uid));
        json_object_object_add(o, "gid", json_object_new_int64(u->gid));
        json_object_object_add(o, "groups", groups);
        json_object_object_add(o, "profile", c->profile ? json_object_new_string(c->profile) : NULL);
        json_object_object_add(o, "rules", json_object_new_int64((int64_t)policy->n_rules));
        json_object_object_add(o, "default",
                               json_object_new_string(policy->default_action == ACCESS_RULE_DENY ? "deny" : "allow"));
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                lists[k] = items(d, c, k);
        json_object_object_add(o, "servers", servers(d, c, lists));
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                json_object_object_add(o, keys[k], lists[k]);
        return o;
}

/* "unknown profile 'x'; the profiles are: a, b" (or "no profiles are configured"). */
static void reply_unknown_profile(struct client *c, struct jsonrpc_msg *m, const char *name) {
        const struct access_policy *a = &daemon_config(c->daemon)->access;
        char message[1024];
        size_t used = (size_t)snprintf(message, sizeof message, "unknown profile '%s'; ", name);

        if (a->n_profiles == 0)
                snprintf(message + used, sizeof message - used, "no profiles are configured");
        else
                used += (size_t)snprintf(message + used, sizeof message - used, "the profiles are:");
        for (size_t i = 0; i < a->n_profiles && used < sizeof message; i++)
                used += (size_t)snprintf(message + used, sizeof message - used, "%s %s", i ? "," : "", a->profiles[i].name);
        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
}

/* The user and profile params, checked; false after answering why not. */
static bool read_params(struct client *c, struct jsonrpc_msg *m, json_object **user, const char **profile) {
        json_object *p = NULL;

        if (!method_params_object(c, m, false))
                return false;
        if (!json_object_object_get_ex(m->params, "user", user) ||
            !(json_object_is_type(*user, json_type_string) || json_object_is_type(*user, json_type_int))) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: \"user\" (a name or a uid) is required", NULL);
                return false;
        }
        if (json_object_object_get_ex(m->params, "profile", &p) && !json_object_is_type(p, json_type_string) &&
            !json_object_is_type(p, json_type_null)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"profile\" must be a string", NULL);
                return false;
        }
        *profile = p && json_object_is_type(p, json_type_string) ? json_object_get_string(p) : NULL;
        if (*profile && !access_profile_find(&daemon_config(c->daemon)->access, *profile)) {
                reply_unknown_profile(c, m, *profile);
                return false;
        }
        return true;
}

static void access_query(struct client *c, struct jsonrpc_msg *m) {
        struct query_user u = {};
        struct access_class cls = {};
        json_object *user;
        const char *profile;
        char message[300];
        int r;

        if (!read_params(c, m, &user, &profile))
                return;
        r = lookup_user(user, &u);
        if (r == 0)
                r = user_db_groups(u.name, u.gid, &u.groups, &u.n_groups);
        if (r == 0)
                r = access_class_of(&daemon_config(c->daemon)->access,
                                    &(struct access_who){ u.uid, u.gid, u.groups, u.n_groups, profile }, &cls);
        if (r == -ENOENT)
                snprintf(message, sizeof message, "unknown user '%.200s': no such user on this host",
                         json_object_get_string(user));
        else if (r < 0)
                snprintf(message, sizeof message, "cannot resolve user '%.200s': %s", json_object_get_string(user),
                         strerror(-r));
        if (r < 0)
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
        else
                client_reply_result(c, m->id, report(c->daemon, &u, &cls));
        access_class_done(&cls);
        query_user_done(&u);
}

const struct method control_access_query = CONTROL_METHOD("access", access_query);
