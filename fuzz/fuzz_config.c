/* Fuzz target "config": the configuration loader (config.c, server-config.c, settings.c).
 *
 * The first byte picks a mode:
 *   0  the rest is the text of one document, given to config_parse();
 *   1  structural: the rest is a list of edits (set or delete a member, with a value of a
 *      chosen JSON type) applied to a valid configuration that uses every setting, which
 *      is then written out and parsed, so the validators see well-formed JSON with wrong
 *      types, ranges and names far more often than random text would give;
 *   2  files: the rest, split at 0xff bytes, is the main file and drop-ins in mcpvisor.d/,
 *      read by config_load() (with a missing main file, a directory named like a drop-in,
 *      or mcpvisor.d being a file, chosen by a flags byte), then by config_load_for_check()
 *      (--check-config's read) too.
 *
 * Invariants: nothing crashes or leaks (also on every error path); errors are reported,
 * never aborted on: a failed load has at least one error; every problem has a path and a
 * message and the error count matches; a configuration that loads holds only valid values
 * (names, commands, ranges, NULL-terminated lists, unique servers, each with the JSON path
 * it was read at, roots that are local file:// URIs, each once, of a server offered roots,
 * tool and prompt filters (an empty exclude list excluding nothing), access rules with an action and only
 * profiles that exist, profiles with unique names, an audit mode, a launcher resolved
 * for every server, confinement values systemd takes, and none for a server the exec
 * launcher runs);
 * a server's settings equal themselves after server_config_take(); text json-c reads as an
 * object that json_find_duplicates() cannot walk through is refused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "audit.h"
#include "config.h"
#include "fuzz-input.h"
#include "json-duplicates.h"
#include "names.h"
#include "scratch.h"
#include "server-config.h"
#include "settings.h"

/* ---- invariants ---- */

static void check_problems(const struct config_problems *p) {
        size_t errors = 0;

        for (size_t i = 0; i < p->count; i++) {
                const struct config_problem *q = &p->items[i];
                fuzz_check(q->path != NULL, "problem %zu has no path", i);
                fuzz_check(q->message != NULL && *q->message, "problem %zu at '%s' has no message", i, q->path);
                fuzz_check(q->severity == PROBLEM_ERROR || q->severity == PROBLEM_WARNING, "severity");
                errors += q->severity == PROBLEM_ERROR;
        }
        fuzz_check(errors == p->errors, "%zu error items, errors says %zu", errors, p->errors);
}

static void check_in_range(double v, double lo, double hi, const char *what) {
        fuzz_check(isfinite(v) && v >= lo && v <= hi, "%s = %g outside [%g, %g]", what, v, lo, hi);
}

/* Local file:// URIs, each once, and only for a server offered roots. */
static void check_roots(const struct server_config *s) {
        fuzz_check(s->roots.n == 0 || s->roots.items, "roots of %s", s->name);
        fuzz_check(s->roots.n == 0 || (s->client_capabilities & (1u << CLIENT_CAP_ROOTS)), "%s has roots but is not offered them",
                   s->name);
        for (size_t k = 0; k < s->roots.n; k++) {
                char why[160];

                fuzz_check(s->roots.items[k].uri && !root_uri_problem(s->roots.items[k].uri, why, sizeof why), "root %zu of %s",
                           k, s->name);
                for (size_t j = 0; j < k; j++)
                        fuzz_check(strcmp(s->roots.items[j].uri, s->roots.items[k].uri) != 0, "root %s twice",
                                   s->roots.items[k].uri);
        }
}

static void check_globs(char *const *globs, const char *what, const char *server) {
        for (; globs && *globs; globs++)
                fuzz_check(strlen(*globs) < SIZE_MAX, "%s of %s is NULL-terminated", what, server);
}

/* Each filter is absent, or a list of patterns (empty ones allowed, as Gemini CLI reads
 * them); an empty exclude list excludes nothing. */
static void check_filter(const struct server_config *s) {
        for (size_t k = 0; k < ITEM_FILTER_KINDS; k++) {
                check_globs(s->filter.include[k], "an include filter", s->name);
                check_globs(s->filter.exclude[k], "an exclude filter", s->name);
                if (!s->filter.include[k] && s->filter.exclude[k] && !s->filter.exclude[k][0])
                        fuzz_check(item_filter_offers(&s->filter, (enum catalog_kind)k, "any_name"),
                                   "an empty exclude list of %s excludes a name", s->name);
        }
}

/* Rules with an action and only profiles that exist; profiles named, each once. */
static void check_access(const struct access_policy *a) {
        fuzz_check(a->default_action == ACCESS_RULE_ALLOW || a->default_action == ACCESS_RULE_DENY, "access default");
        fuzz_check(a->n_rules == 0 || a->rules, "rules");
        for (size_t i = 0; i < a->n_rules; i++) {
                const struct access_rule *r = &a->rules[i];

                fuzz_check(r->action == ACCESS_RULE_ALLOW || r->action == ACCESS_RULE_DENY, "rule %zu's action", i);
                fuzz_check(!r->users.given || (r->users.n > 0 && r->users.ids), "rule %zu's users: none", i);
                fuzz_check(!r->groups.given || (r->groups.n > 0 && r->groups.ids), "rule %zu's groups: none", i);
                for (char **p = r->profiles; p && *p; p++)
                        fuzz_check(access_profile_find(a, *p) != NULL, "rule %zu names profile %s, which does not exist", i, *p);
                for (size_t k = 0; k < _ACCESS_KIND_MAX; k++)
                        check_globs(r->targets[k], "a rule's targets", "the policy");
        }
        fuzz_check(a->n_profiles == 0 || a->profiles, "profiles");
        for (size_t i = 0; i < a->n_profiles; i++) {
                fuzz_check(a->profiles[i].name && *a->profiles[i].name, "profile %zu has no name", i);
                fuzz_check(access_profile_find(a, a->profiles[i].name) == &a->profiles[i], "profile %s twice",
                           a->profiles[i].name);
        }
}

/* Paths absolute, limits in range, names and a state directory systemd takes; an exec
 * server gave no confinement key. */
/* A "." or ".." component (a name such as "ba.." is a plain one). */
static bool has_dot_component(const char *path) {
        for (const char *c = path;; c++) {
                size_t n = strcspn(c, "/");

                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return true;
                c += n;
                if (!*c)
                        return false;
        }
}

static void check_confinement(const struct server_config *s) {
        const struct confinement *k = &s->confinement;

        fuzz_check(s->launcher >= LAUNCHER_AUTO && s->launcher <= LAUNCHER_EXEC, "launcher %d of %s", s->launcher, s->name);
        fuzz_check(s->launcher != LAUNCHER_EXEC || k->keys == 0, "%s runs with exec and gave %s", s->name,
                   confinement_first_key(k) ? confinement_first_key(k) : "?");
        fuzz_check(k->sandbox >= SANDBOX_STRICT && k->sandbox <= SANDBOX_NONE, "sandbox %d", k->sandbox);
        for (char **p = k->read_write_paths; p && *p; p++)
                fuzz_check(**p == '/' && !strstr(*p, "/../"), "readWritePaths %s", *p);
        for (char **p = k->read_only_paths; p && *p; p++)
                fuzz_check(**p == '/' && !strstr(*p, "/./"), "readOnlyPaths %s", *p);
        fuzz_check(k->tasks_max <= CONFINEMENT_TASKS_MAX, "tasksMax %u", k->tasks_max);
        fuzz_check(k->cpu_quota_usec <= (uint64_t)CONFINEMENT_CPU_PERCENT_MAX * 10000, "cpuQuota %" PRIu64, k->cpu_quota_usec);
        fuzz_check(!k->user || (*k->user && strlen(k->user) <= 32 && !strchr(k->user, '/')), "user");
        fuzz_check(!k->group || (*k->group && strlen(k->group) <= 32 && !strchr(k->group, '/')), "group");
        fuzz_check(!k->state_directory ||
                           (*k->state_directory && k->state_directory[0] != '/' && !has_dot_component(k->state_directory) &&
                            strncmp(k->state_directory, "private", 7) != 0),
                   "stateDirectory %s", k->state_directory);
}

static void check_server(const struct config *c, size_t i) {
        const struct server_config *s = &c->servers[i];
        struct server_config copy = *s;
        struct server_config *taken;

        fuzz_check(s->name && server_name_valid(s->name), "server %zu has an invalid name", i);
        fuzz_check(s->json_path && strlen(s->json_path) > strlen(s->name) + 1 &&
                           strcmp(s->json_path + strlen(s->json_path) - strlen(s->name), s->name) == 0,
                   "server %s was read at %s", s->name, s->json_path ? s->json_path : "(null)");
        fuzz_check(config_find_server(c, s->name) == s, "server names are unique: %s", s->name);
        fuzz_check(s->remote.url || (s->command && *s->command), "server %s has no command", s->name);
        fuzz_check(!s->remote.url || (!s->command && !s->args && !s->n_env && !s->cwd && !s->confinement.keys),
                   "server %s has a url and a program", s->name);
        fuzz_check(!s->remote.insecure || remote_url_loopback(s->remote.url), "insecure %s off the loopback", s->name);
        for (char **a = s->args; a && *a; a++)
                fuzz_check(strlen(*a) < SIZE_MAX, "args are NULL-terminated");
        for (size_t k = 0; k < s->n_env; k++) {
                const struct env_var *e = &s->env[k];
                fuzz_check(e->name && *e->name && !strchr(e->name, '='), "env name of %s", s->name);
                fuzz_check(!e->value != !e->credential, "env %s: exactly one of value and credential", e->name);
                fuzz_check(!e->credential || (*e->credential && !strchr(e->credential, '/')), "credential id");
        }
        fuzz_check(!s->cwd || s->cwd[0] == '/', "cwd is absolute");
        fuzz_check(s->restart >= RESTART_ON_FAILURE && s->restart <= RESTART_NEVER, "restart policy %d", s->restart);
        check_in_range(s->start_timeout, 0.1, 3600, "startTimeout");
        check_in_range(s->stop_timeout, 0, 3600, "stopTimeout");
        check_in_range(s->kill_timeout, 0, 3600, "killTimeout");
        check_in_range(s->health_interval, 0, 86400, "healthInterval");
        check_in_range(s->health_timeout, 0.1, 3600, "healthTimeout");
        check_in_range(s->health_failures, 1, 100, "healthFailures");
        check_in_range(s->request_timeout, 0, 86400, "requestTimeout");
        check_in_range(s->restart_delay, 0, 3600, "restartDelay");
        check_in_range(s->restart_delay_max, 0, 86400, "restartDelayMax");
        check_in_range(s->start_limit_interval, 0, 86400, "startLimitInterval");
        fuzz_check((s->client_capabilities & ~CLIENT_CAPS_ALL) == 0, "client capabilities");
        check_roots(s);
        check_filter(s);
        check_confinement(s);

        /* Moving the settings to the heap keeps them equal, as a reload's comparison needs. */
        taken = server_config_take(&copy);
        fuzz_check(taken != NULL, "out of memory");
        fuzz_check(server_config_equal(taken, s) && server_config_equal(s, taken), "settings equal themselves");
        fuzz_check(!server_config_changes_live(s, taken), "a reload of the same settings changes nothing live");
        free(taken); /* a shallow copy: the config still owns the fields */
}

static void check_config(const struct config *c) {
        fuzz_check(!c->socket_path || c->socket_path[0] == '/', "socket is absolute");
        fuzz_check(!c->control_socket_path || c->control_socket_path[0] == '/', "controlSocket is absolute");
        fuzz_check(c->socket_mode >= 0 && c->socket_mode <= 0777, "socketMode %o", c->socket_mode);
        fuzz_check(c->log_level >= -1 && c->log_level <= 7, "logLevel %d", c->log_level);
        check_in_range((double)c->max_message_size, 1024, 1u << 30, "maxMessageSize");
        check_in_range((double)c->client_output_limit, 4096, 1u << 30, "clientOutputLimit");
        check_in_range(c->shutdown_timeout, 0.1, 3600, "shutdownTimeout");
        check_in_range(c->list_wait, 0, 600, "listWait");
        check_in_range(c->idle_exit, 0, 86400 * 7, "idleExit");
        fuzz_check(!c->tool_name_separator || name_separator_valid(c->tool_name_separator), "separator");
        fuzz_check(c->audit >= AUDIT_MODE_OFF && c->audit <= AUDIT_MODE_CALLS, "audit %d", c->audit);
        fuzz_check(c->launcher >= LAUNCHER_AUTO && c->launcher <= LAUNCHER_EXEC, "launcher %d", c->launcher);
        check_access(&c->access);
        fuzz_check(c->n_servers == 0 || c->servers, "servers");
        for (size_t i = 0; i < c->n_servers; i++)
                check_server(c, i);
}

static void check_outcome(int r, struct config *c, struct config_problems *p) {
        check_problems(p);
        if (r < 0) {
                fuzz_check(p->errors > 0, "a failed load (%d) reports at least one error", r);
                return;
        }
        fuzz_check(r == 0, "config returned %d", r);
        check_config(c);
        config_done(c);
}

/* --check-config's read of the same files: every file read whatever the others hold, its
 * problems well formed, an error for a failure, its config valid when it succeeds and
 * filled (to be freed) on every return but -ENOMEM. */
static void check_for_check(const char *path) {
        struct config_problems problems = { 0 };
        struct config c;
        int r = config_load_for_check(path, &c, &problems);

        check_problems(&problems);
        fuzz_check(r <= 0, "the check returned %d", r);
        if (r < 0)
                fuzz_check(problems.errors > 0, "a failed check (%d) reports at least one error", r);
        if (r == 0)
                check_config(&c);
        if (r != -ENOMEM)
                config_done(&c);
        problems_done(&problems);
}

/* ---- mode 0: text ---- */

static void no_duplicate(const struct json_duplicate *d, void *userdata) {
}

/* Whether json-c reads text as an object that the duplicate finder cannot walk through
 * (json-c takes NaN, Infinity and "1."; JSON and the finder do not). */
static bool unwalkable_object(const char *text, size_t len) {
        json_tokener *tok = json_tokener_new();
        json_object *o;
        size_t end;
        bool unwalkable = false;

        fuzz_check(tok != NULL, "out of memory");
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        o = json_tokener_parse_ex(tok, text, (int)len);
        /* json-c stops at a NUL byte as if the text ended there (config.c refuses what follows) */
        end = json_tokener_get_parse_end(tok);
        if (!o && json_tokener_get_error(tok) == json_tokener_continue)
                o = json_tokener_parse_ex(tok, " ", 1);
        if (json_object_is_type(o, json_type_object))
                unwalkable = json_find_duplicates(text, end, JSON_TOKENER_DEFAULT_DEPTH, no_duplicate, NULL, NULL) == -EINVAL;
        json_object_put(o);
        json_tokener_free(tok);
        return unwalkable;
}

/* The two readers agree: what the duplicate finder cannot walk, the configuration refuses
 * (a repeated name after it would go unseen). */
static void parse_text(const char *text, size_t len) {
        struct config_problems problems = { 0 };
        struct config c;
        int r = config_parse(text, len, &c, &problems);

        check_outcome(r, &c, &problems);
        problems_done(&problems);
        if (r == 0)
                fuzz_check(!unwalkable_object(text, len), "json-c reads what the duplicate finder cannot walk, and the "
                                                          "configuration took it");
}

/* ---- mode 1: structural edits of a valid configuration ---- */

static const char base_config[] =
        "{\"mcpvisor\": {\"socket\": \"/run/mcp.sock\", \"controlSocket\": \"/run/control.sock\", \"socketMode\": \"0660\","
        " \"logLevel\": \"info\", \"maxMessageSize\": 1048576, \"clientOutputLimit\": 65536, \"shutdownTimeout\": 10,"
        " \"toolNameSeparator\": \"__\", \"listWait\": 5, \"listPageSize\": 100, \"idleExit\": 0, \"controlGroup\": \"adm\","
        " \"access\": {\"default\": \"allow\", \"rules\": [{\"users\": [\"root\", 0], \"groups\": [\"root\", 0],"
        " \"profiles\": [\"p\"], \"servers\": [\"a\"], \"tools\": [\"a__*\"], \"prompts\": [\"x?\"],"
        " \"resources\": [\"file:///*\"], \"action\": \"deny\"}, {\"action\": \"allow\"}]},"
        " \"profiles\": {\"p\": {\"servers\": [\"a\"], \"tools\": [\"a__get_*\"], \"resources\": [\"*\"]}},"
        " \"audit\": \"denied\", \"launcher\": \"auto\"},"
        " \"mcpServers\": {"
        "  \"a\": {\"command\": \"/bin/a\", \"args\": [\"-v\", \"x\"], \"env\": {\"K\": \"v\", \"C\": {\"credential\": \"c\"}},"
        "   \"cwd\": \"/\", \"disabled\": false, \"restart\": \"always\", \"startTimeout\": 5, \"stopTimeout\": 1,"
        "   \"killTimeout\": 1, \"healthInterval\": 30, \"healthTimeout\": 5, \"healthFailures\": 3, \"requestTimeout\": 60,"
        "   \"restartDelay\": 1, \"restartDelayMax\": 60, \"startLimitBurst\": 5, \"startLimitInterval\": 60,"
        "   \"prefix\": \"p\", \"clientCapabilities\": [\"roots\", \"sampling\"], \"type\": \"stdio\","
        "   \"roots\": [{\"uri\": \"file:///srv/a\", \"name\": \"a\"}, \"file://localhost/b%20c\", \"/srv/d e\"],"
        "   \"includeTools\": [\"get_*\", \"list_*\"], \"excludeTools\": [\"get_secret\"], \"includePrompts\": [\"p*\"],"
        "   \"excludePrompts\": [\"[ab]\"], \"launcher\": \"systemd\", \"sandbox\": \"strict\","
        "   \"readWritePaths\": [\"/srv/a\"], \"readOnlyPaths\": [\"/srv/b\"], \"network\": false, \"memoryMax\": \"256M\","
        "   \"tasksMax\": 64, \"cpuQuota\": \"50%\", \"user\": \"nobody\", \"group\": \"nogroup\", \"dynamicUser\": false,"
        "   \"stateDirectory\": true},"
        "  \"b.c-d_e\": {\"command\": \"b\"}}}";

static const char *const known_keys[] = {
        "mcpvisor", "mcpServers", "socket", "controlSocket", "socketMode", "logLevel", "maxMessageSize",
        "clientOutputLimit", "shutdownTimeout", "toolNameSeparator", "listWait", "listPageSize", "idleExit",
        "controlGroup", "command", "args", "env", "cwd", "disabled", "restart", "startTimeout", "stopTimeout",
        "killTimeout", "healthInterval", "healthTimeout", "healthFailures", "requestTimeout", "restartDelay",
        "restartDelayMax", "startLimitBurst", "startLimitInterval", "prefix", "clientCapabilities", "type", "url",
        "credential", "roots", "uri", "name", "a", "b.c-d_e", "K", "", "1BAD", "A=B", "x y",
        /* other clients' keys, and typos */
        "servers", "inputs", "globalShortcut", "description", "autoApprove", "alwaysAllow", "trust", "timeout",
        "includeTools", "excludeTools", "disabledTools", "watchPaths", "dev", "envFile", "httpUrl", "serverUrl",
        "arg", "mcpservers", "PATH",
        /* access rules, profiles, audit and the tool and prompt filters */
        "access", "default", "rules", "users", "groups", "profiles", "servers", "tools", "prompts", "resources",
        "action", "audit", "includePrompts", "excludePrompts", "p", "root", "nobody",
        /* the launcher and confinement */
        "launcher", "sandbox", "readWritePaths", "readOnlyPaths", "network", "memoryMax", "tasksMax", "cpuQuota",
        "user", "group", "dynamicUser", "stateDirectory",
};

static const char *const some_strings[] = {
        "", "0660", "0777", "0999", "777", "08", "debug", "err", "warn", "7", "8", "stdio", "sse", "/abs", "rel",
        "a b", "__", ".", "123456789", "on-failure", "always", "never", "roots", "sampling", "elicitation", "x/y",
        "-", "/", "a.b", "file:///srv/a", "file://localhost/b%20c", "file://host/x", "file:///x?y", "/srv/d e",
        "file:///%zz", "file:/x",
        "allow", "deny", "off", "denied", "calls", "*", "?", "[", "[!a]", "a__*", "get_*", "root", "no-such-user",
        "0", "4294967295", "-1",
        "auto", "systemd", "exec", "strict", "basic", "none", "256M", "1.5G", "0M", "1g", "infinity", "50%", "0%",
        "12.5%", "200", "private", "mcpvisor/state", "a/../b", "..", "_mcp", "1000", "/srv/..", "/srv/./x",
};

static const double some_numbers[] = {
        0, -0.0, 0.05, 0.1, 1, 1.5, 3, 59.999, 100, 101, 1023, 1024, 4095, 4096, 3600, 3600.0001, 86400, 604800,
        604801, 1073741824, 1073741825, 4294967295.0, 4294967296.0, 1e300, -1, -1e300, 9007199254740993.0,
};

static json_object *make_value(struct fuzz_input *in, int depth);

static json_object *make_array(struct fuzz_input *in, int depth) {
        json_object *a = json_object_new_array();
        unsigned n = take_choice(in, 4);

        for (unsigned i = 0; i < n; i++)
                json_object_array_add(a, make_value(in, depth + 1));
        return a;
}

static json_object *make_object(struct fuzz_input *in, int depth) {
        json_object *o = json_object_new_object();
        unsigned n = take_choice(in, 3);

        for (unsigned i = 0; i < n; i++)
                json_object_object_add(o, known_keys[take_choice(in, ARRAY_LEN(known_keys))], make_value(in, depth + 1));
        return o;
}

static json_object *make_value(struct fuzz_input *in, int depth) {
        unsigned type = take_choice(in, depth > 3 ? 7 : 9);
        char *s;
        json_object *v;

        switch (type) {
        case 0:
                return NULL; /* JSON null */
        case 1:
                return json_object_new_boolean(take_u8(in) & 1);
        case 2:
                return json_object_new_int64((int64_t)(int32_t)take_u32(in) * (take_u8(in) & 1 ? 1 : 1000003));
        case 3:
                return json_object_new_double(some_numbers[take_choice(in, ARRAY_LEN(some_numbers))]);
        case 4:
                return json_object_new_string(some_strings[take_choice(in, ARRAY_LEN(some_strings))]);
        case 5:
        case 6:
                s = take_string(in, 80);
                v = json_object_new_string(s);
                free(s);
                return v;
        case 7:
                return make_array(in, depth);
        default:
                return make_object(in, depth);
        }
}

/* The objects an edit can land in: the root, each section, each server, its env and args. */
static size_t collect_containers(json_object *o, json_object **out, size_t n, size_t max) {
        if (n >= max || !(json_object_is_type(o, json_type_object) || json_object_is_type(o, json_type_array)))
                return n;
        out[n++] = o;
        if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, k, v) {
                        (void)k;
                        n = collect_containers(v, out, n, max);
                }
        } else {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        n = collect_containers(json_object_array_get_idx(o, i), out, n, max);
        }
        return n;
}

static void apply_edit(json_object *root, struct fuzz_input *in) {
        json_object *containers[64];
        size_t n = collect_containers(root, containers, 0, ARRAY_LEN(containers));
        json_object *target = containers[take_choice(in, (unsigned)n)];
        unsigned op = take_choice(in, 4);
        char *key = NULL;
        const char *k;

        if (json_object_is_type(target, json_type_array)) {
                size_t len = json_object_array_length(target);
                if (op == 0 && len > 0)
                        json_object_array_del_idx(target, take_choice(in, (unsigned)len), 1);
                else if (op == 1 && len > 0)
                        json_object_array_put_idx(target, take_choice(in, (unsigned)len), make_value(in, 0));
                else
                        json_object_array_add(target, make_value(in, 0));
                return;
        }
        if (op == 3) {
                key = take_string(in, 70);
                k = key;
        } else
                k = known_keys[take_choice(in, ARRAY_LEN(known_keys))];
        if (op == 0)
                json_object_object_del(target, k);
        else
                json_object_object_add(target, k, make_value(in, 0));
        free(key);
}

static void parse_edited(struct fuzz_input *in) {
        json_object *root = json_tokener_parse(base_config);
        const char *text;

        fuzz_check(root != NULL, "the base configuration parses");
        while (!input_empty(in))
                apply_edit(root, in);
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
        parse_text(text, strlen(text));
        json_object_put(root);
}

/* ---- mode 2: a main file and drop-ins ---- */

struct config_dir {
        char path[64];
        char main_file[96];
        char dropins[96];
};

static struct config_dir dir;

static void remove_dir(void) {
        if (dir.path[0])
                scratch_remove(dir.path);
}

/* One scratch directory per process, emptied for every input. */
static void reset_dir(void) {
        if (!dir.path[0]) {
                fuzz_check(scratch_make("mcpvisor-fuzz-config", dir.path, sizeof dir.path), "mkdtemp: %s",
                           strerror(errno));
                snprintf(dir.main_file, sizeof dir.main_file, "%s/mcpvisor.json", dir.path);
                snprintf(dir.dropins, sizeof dir.dropins, "%s/mcpvisor.d", dir.path);
                atexit(remove_dir);
        }
        remove(dir.main_file);
        scratch_remove(dir.dropins);
}

static void write_file(const char *path, const uint8_t *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        fuzz_check(fd >= 0, "cannot write %s: %s", path, strerror(errno));
        fuzz_check(write(fd, data, len) == (ssize_t)len, "short write");
        close(fd);
}

enum {
        FILES_NO_MAIN = 1 << 0,      /* the main file does not exist */
        FILES_MISSING_OK = 1 << 1,   /* ... which is fine (the default path) */
        FILES_DIR_DROPIN = 1 << 2,   /* mcpvisor.d/zz.json is a directory */
        FILES_DROPINS_FILE = 1 << 3, /* mcpvisor.d is a file */
};

static void load_files(struct fuzz_input *in) {
        uint8_t flags = take_u8(in);
        struct config_problems problems = { 0 };
        const uint8_t *part = in->data, *end = in->data + in->size;
        unsigned index = 0;
        struct config c;
        int r;

        reset_dir();
        if (flags & FILES_DROPINS_FILE)
                write_file(dir.dropins, (const uint8_t *)"{}", 2);
        else
                fuzz_check(mkdir(dir.dropins, 0700) == 0, "mkdir: %s", strerror(errno));
        while (part <= end) {
                const uint8_t *cut = memchr(part, 0xff, (size_t)(end - part));
                size_t len = (size_t)((cut ? cut : end) - part);
                char path[160];

                if (index == 0) {
                        if (!(flags & FILES_NO_MAIN))
                                write_file(dir.main_file, part, len);
                } else if (!(flags & FILES_DROPINS_FILE)) {
                        /* Odd ones are not .json: they must be ignored. */
                        snprintf(path, sizeof path, "%s/%02u-part%s", dir.dropins, index, index % 4 == 3 ? ".conf" : ".json");
                        write_file(path, part, len);
                }
                index++;
                if (!cut)
                        break;
                part = cut + 1;
        }
        if ((flags & FILES_DIR_DROPIN) && !(flags & FILES_DROPINS_FILE)) {
                char path[160];
                snprintf(path, sizeof path, "%s/zz.json", dir.dropins);
                fuzz_check(mkdir(path, 0700) == 0, "mkdir: %s", strerror(errno));
        }
        r = config_load(dir.main_file, flags & FILES_MISSING_OK, &c, &problems);
        check_outcome(r, &c, &problems);
        problems_done(&problems);
        check_for_check(dir.main_file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { data, size };

        switch (take_u8(&in) % 3) {
        case 0:
                parse_text((const char *)in.data, in.size);
                break;
        case 1:
                parse_edited(&in);
                break;
        default:
                load_files(&in);
                break;
        }
        return 0;
}
