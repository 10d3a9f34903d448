/* Validation of one "mcpServers" entry; see server-config.h. */
#include "server-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "config.h"
#include "macro.h"
#include "settings.h"
#include "text.h"

static const char *const restart_choices[] = { "on-failure", "always", "never", NULL };

const char *const launcher_names[] = { "auto", "systemd", "exec", NULL };

const char *const server_instances_names[] = { "shared", "per-user", "per-client", NULL };

const char *const server_protocol_names[] = { "auto", "legacy", "modern", NULL };

const char *const client_capability_names[CLIENT_CAP_COUNT] = {
        [CLIENT_CAP_ROOTS] = "roots",
        [CLIENT_CAP_SAMPLING] = "sampling",
        [CLIENT_CAP_ELICITATION] = "elicitation",
};

bool server_name_valid(const char *name) {
        size_t len = strlen(name);

        if (len == 0 || len > SERVER_NAME_MAX)
                return false;
        return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") == len;
}

static const char *env_name_problem(const char *name) {
        if (*name && !strchr(name, '=') && strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(name) &&
            !(name[0] >= '0' && name[0] <= '9'))
                return NULL;
        return "not a valid environment variable name";
}

/* Item n of env, a variable's value: a string, or {"credential": "id"} naming a systemd
 * credential (its name is checked and kept by settings_parse_list()). */
static int parse_env_value(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                           struct config_problems *p) {
        struct env_var *e = (struct env_var *)list + n;
        char item[640]; /* path is at most 600 */
        json_object *cred;

        snprintf(item, sizeof item, "%s.credential", path);
        if (settings_string_cut(v, path, p) ||
            (json_object_object_get_ex(v, "credential", &cred) && settings_string_cut(cred, item, p)))
                return -EINVAL;
        if (json_object_is_type(v, json_type_string)) {
                e->value = strdup(json_object_get_string(v));
                return 0;
        }
        if (json_object_is_type(v, json_type_object) && json_object_object_length(v) == 1 &&
            json_object_object_get_ex(v, "credential", &cred) && json_object_is_type(cred, json_type_string) &&
            json_object_get_string_len(cred) > 0 && !strchr(json_object_get_string(cred), '/')) {
                e->credential = strdup(json_object_get_string(cred));
                return 0;
        }
        problems_add(p, PROBLEM_ERROR, path, "expected a string or {\"credential\": \"NAME\"}");
        return -EINVAL;
}

static void env_var_done(void *item) {
        struct env_var *e = item;

        free(e->name);
        free(e->value);
        free(e->credential);
}

static const struct settings_list env_list = SETTINGS_LIST_BY_NAME(struct server_config, env, n_env, struct env_var,
                                                                   env_name_problem, parse_env_value, env_var_done,
                                                                   "expected an object of NAME: value");

static int parse_env(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return settings_parse_list(&env_list, v, path, (char *)dst - offsetof(struct server_config, env), NULL, p);
}

int client_capability_of(const char *name) {
        for (int i = 0; i < CLIENT_CAP_COUNT; i++)
                if (strcmp(name, client_capability_names[i]) == 0)
                        return i;
        return -1;
}

/* An array of capability names, each at most once. */
static int parse_client_capabilities(json_object *v, const char *path, void *dst, struct config_problems *p) {
        unsigned *bits = dst;
        size_t n;

        if (!json_object_is_type(v, json_type_array)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an array of \"roots\", \"sampling\", \"elicitation\"");
                return -EINVAL;
        }
        *bits = 0;
        n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
                json_object *item = json_object_array_get_idx(v, i);
                int bit = json_object_is_type(item, json_type_string) ? client_capability_of(json_object_get_string(item)) : -1;

                if (bit < 0) {
                        problems_add(p, PROBLEM_ERROR, path, "item %zu: expected \"roots\", \"sampling\" or \"elicitation\"", i);
                        return -EINVAL;
                }
                *bits |= 1u << bit;
        }
        return 0;
}

/* Keys of other MCP clients' entries (Cline, Roo Code, Gemini CLI, VS Code, Cursor), so
 * that an entry copied from them loads, or says plainly what it would lose. */
#define NOTED(key, note) { key, SETTING_NOTED, 0, 0, 0, NULL, NULL, note }
#define REFUSED(key, note) { key, SETTING_REFUSED, 0, 0, 0, NULL, NULL, note }
#define APPROVAL_IGNORED "ignored: mcpvisor approves nothing itself; the agent connected to mcpvisor asks you about tool calls"
#define FILTER(key, field) { key, SETTING_STRINGS, offsetof(struct server_config, filter.field), 0, 0, NULL, NULL, NULL }
#define WATCH_IGNORED "ignored: mcpvisor does not watch files; restart the server with mcpvisorctl restart NAME"
#define SECONDS(key, field, lo, hi) { key, SETTING_SECONDS, offsetof(struct server_config, field), lo, hi, NULL, NULL, NULL }
#define CONFINED(key, type, field, parse) { key, type, offsetof(struct server_config, confinement.field), 0, 0, NULL, parse, NULL }

static const struct setting server_settings[] = {
        { "command", SETTING_STRING, offsetof(struct server_config, command), 0, 0, NULL, NULL, NULL },
        { "args", SETTING_STRINGS, offsetof(struct server_config, args), 0, 0, NULL, NULL, NULL },
        { "env", SETTING_CUSTOM, offsetof(struct server_config, env), 0, 0, NULL, parse_env, NULL },
        { "cwd", SETTING_PATH, offsetof(struct server_config, cwd), 0, 0, NULL, NULL, NULL },
        { "disabled", SETTING_BOOL, offsetof(struct server_config, disabled), 0, 0, NULL, NULL, NULL },
        { "restart", SETTING_CHOICE, offsetof(struct server_config, restart), 0, 0, restart_choices, NULL, NULL },
        SECONDS("startTimeout", start_timeout, 0.1, 3600),
        { "protocol", SETTING_CHOICE, offsetof(struct server_config, protocol), 0, 0, server_protocol_names, NULL, NULL },
        SECONDS("probeTimeout", probe_timeout, 0.1, 3600),
        SECONDS("stopTimeout", stop_timeout, 0, 3600),
        SECONDS("killTimeout", kill_timeout, 0, 3600),
        SECONDS("healthInterval", health_interval, 0, 86400),
        SECONDS("healthTimeout", health_timeout, 0.1, 3600),
        { "healthFailures", SETTING_COUNT, offsetof(struct server_config, health_failures), 1, 100, NULL, NULL, NULL },
        SECONDS("requestTimeout", request_timeout, 0, 86400),
        SECONDS("restartDelay", restart_delay, 0, 3600),
        SECONDS("restartDelayMax", restart_delay_max, 0, 86400),
        { "startLimitBurst", SETTING_COUNT, offsetof(struct server_config, start_limit_burst), 0, BACKOFF_BURST_MAX, NULL, NULL, NULL },
        SECONDS("startLimitInterval", start_limit_interval, 0, 86400),
        { "maxCatalogItems", SETTING_COUNT, offsetof(struct server_config, max_catalog_items), 1, 1000000, NULL, NULL, NULL },
        { "prefix", SETTING_STRING, offsetof(struct server_config, prefix), 0, 0, NULL, NULL, NULL },
        { "clientCapabilities", SETTING_CUSTOM, offsetof(struct server_config, client_capabilities), 0, 0, NULL,
          parse_client_capabilities, NULL },
        { "roots", SETTING_CUSTOM, offsetof(struct server_config, roots), 0, 0, NULL, roots_parse, NULL },
        FILTER("includeTools", include[CATALOG_TOOLS]),
        FILTER("excludeTools", exclude[CATALOG_TOOLS]),
        FILTER("includePrompts", include[CATALOG_PROMPTS]),
        FILTER("excludePrompts", exclude[CATALOG_PROMPTS]),
        { "launcher", SETTING_CHOICE, offsetof(struct server_config, launcher), 0, 0, launcher_names, NULL, NULL },
        { "sandbox", SETTING_CHOICE, offsetof(struct server_config, confinement.sandbox), 0, 0, confinement_sandbox_names,
          NULL, NULL },
        CONFINED("readWritePaths", SETTING_CUSTOM, read_write_paths, confinement_parse_paths),
        CONFINED("readOnlyPaths", SETTING_CUSTOM, read_only_paths, confinement_parse_paths),
        CONFINED("network", SETTING_BOOL, network, NULL),
        CONFINED("memoryMax", SETTING_CUSTOM, memory_max, confinement_parse_memory),
        { "tasksMax", SETTING_COUNT, offsetof(struct server_config, confinement.tasks_max), 1, CONFINEMENT_TASKS_MAX, NULL,
          NULL, NULL },
        CONFINED("cpuQuota", SETTING_CUSTOM, cpu_quota_usec, confinement_parse_cpu_quota),
        CONFINED("user", SETTING_CUSTOM, user, confinement_parse_name),
        CONFINED("group", SETTING_CUSTOM, group, confinement_parse_name),
        CONFINED("dynamicUser", SETTING_BOOL, dynamic_user, NULL),
        CONFINED("stateDirectory", SETTING_CUSTOM, state_directory, confinement_parse_state_directory),
        /* A server reached by URL (remote-config.h). */
        { "url", SETTING_STRING, offsetof(struct server_config, remote.url), 0, 0, NULL, NULL, NULL },
        { "type", SETTING_CUSTOM, offsetof(struct server_config, remote.type), 0, 0, NULL, remote_parse_type, NULL },
        { "headers", SETTING_CUSTOM, offsetof(struct server_config, remote), 0, 0, NULL, remote_parse_headers, NULL },
        { "proxy", SETTING_STRING, offsetof(struct server_config, remote.proxy), 0, 0, NULL, NULL, NULL },
        { "caFile", SETTING_PATH, offsetof(struct server_config, remote.ca_file), 0, 0, NULL, NULL, NULL },
        { "insecure", SETTING_BOOL, offsetof(struct server_config, remote.insecure), 0, 0, NULL, NULL, NULL },
        SECONDS("connectTimeout", remote.connect_timeout, 0.1, 3600),
        { "maxConnections", SETTING_COUNT, offsetof(struct server_config, remote.max_connections), 1,
          REMOTE_MAX_CONNECTIONS_MAX, NULL, NULL, NULL },
        { "auth", SETTING_CHOICE, offsetof(struct server_config, remote.auth), 0, 0, remote_auth_names, NULL, NULL },
        { "scopes", SETTING_STRINGS, offsetof(struct server_config, remote.scopes), 0, 0, NULL, NULL, NULL },
        { "clientId", SETTING_STRING, offsetof(struct server_config, remote.client_id), 0, 0, NULL, NULL, NULL },
        { "clientMetadataUrl", SETTING_STRING, offsetof(struct server_config, remote.client_metadata_url), 0, 0, NULL, NULL,
          NULL },
        { "clientSecret", SETTING_CUSTOM, offsetof(struct server_config, remote.client_secret), 0, 0, NULL,
          remote_parse_client_secret, NULL },
        /* Instances per user or per client (pool.h). */
        { "instances", SETTING_CHOICE, offsetof(struct server_config, instances), 0, 0, server_instances_names, NULL, NULL },
        SECONDS("instanceIdle", instance_idle, 0, 86400),
        { "maxInstances", SETTING_COUNT, offsetof(struct server_config, max_instances), 1, SERVER_MAX_INSTANCES_MAX, NULL,
          NULL, NULL },
        { "spareInstances", SETTING_COUNT, offsetof(struct server_config, spare_instances), 0, SERVER_MAX_INSTANCES_MAX,
          NULL, NULL, NULL },
        /* Written by other MCP clients' configs. */
        { "description", SETTING_IGNORED, 0, 0, 0, NULL, NULL, NULL },
        NOTED("autoApprove", APPROVAL_IGNORED),
        NOTED("alwaysAllow", APPROVAL_IGNORED),
        NOTED("trust", APPROVAL_IGNORED),
        NOTED("timeout", "ignored (its unit differs between clients): mcpvisor's limit per request is \"requestTimeout\", in seconds"),
        NOTED("disabledTools", "not applied: list the tools to hide in \"excludeTools\" (globs such as \"delete_*\" work too)"),
        NOTED("watchPaths", WATCH_IGNORED),
        NOTED("dev", WATCH_IGNORED),
        /* The variables would be lost without a word, and the server would start without them. */
        REFUSED("envFile", "not supported: put the variables in \"env\", and secrets as {\"credential\": \"NAME\"} (systemd credentials)"),
};

static void init_defaults(struct server_config *s) {
        *s = (struct server_config){
                .restart = RESTART_ON_FAILURE,
                .start_timeout = 30,
                .protocol = SERVER_PROTOCOL_AUTO,
                .probe_timeout = 5,
                .stop_timeout = 3,
                .kill_timeout = 3,
                .health_interval = 30,
                .health_timeout = 5,
                .health_failures = 3,
                .restart_delay = 1,
                .restart_delay_max = 60,
                .start_limit_burst = 5,
                .start_limit_interval = 60,
                .client_capabilities = CLIENT_CAPS_ALL,
                .max_catalog_items = SERVER_DEFAULT_MAX_CATALOG_ITEMS,
                .launcher = LAUNCHER_UNSET,
                .instances = INSTANCES_SHARED,
                .instance_idle = SERVER_DEFAULT_INSTANCE_IDLE,
                .max_instances = SERVER_DEFAULT_MAX_INSTANCES,
        };
        confinement_init(&s->confinement);
        remote_config_init(&s->remote);
}

void server_config_done(struct server_config *s) {
        free(s->name);
        free(s->command);
        strv_free(s->args);
        settings_list_done(&env_list, s);
        free(s->cwd);
        free(s->prefix);
        roots_done(&s->roots);
        item_filter_done(&s->filter);
        confinement_done(&s->confinement);
        remote_config_done(&s->remote);
        free(s->file);
        free(s->json_path);
        init_defaults(s);
}

/* Gemini CLI says "httpUrl", Windsurf "serverUrl": ours is "url", as most clients write it. */
static int check_url_keys(json_object *entry, const char *path, struct config_problems *p) {
        static const char *const url_keys[] = { "httpUrl", "serverUrl" };
        json_object *v;
        char item[512];

        for (size_t i = 0; i < ARRAY_SIZE(url_keys); i++)
                if (json_object_object_get_ex(entry, url_keys[i], &v)) {
                        snprintf(item, sizeof item, "%s.%s", path, url_keys[i]);
                        problems_add(p, PROBLEM_ERROR, item, "write the server's URL as \"url\"");
                        return -EINVAL;
                }
        return 0;
}

static size_t refuse_confinement(const struct server_config *s, const char *file, const char *path, bool daemon_default,
                                 struct config_problems *p) {
        size_t n = 0;
        char item[600];

        for (int k = 0; k < CONFINEMENT_KEY_COUNT; k++) {
                if (!(s->confinement.keys & (1u << k)))
                        continue;
                snprintf(item, sizeof item, "%s.%s", path, confinement_key_names[k]);
                problems_add_in(p, file, PROBLEM_ERROR, item,
                                "needs the systemd launcher: the exec launcher cannot confine a server, and this server's "
                                "launcher is \"exec\"%s (remove the key, or set \"launcher\" to \"auto\" or \"systemd\")",
                                daemon_default ? " (the daemon's, mcpvisor.launcher)" : "");
                n++;
        }
        return n;
}

size_t server_config_refuse_confinement(const struct server_config *s, bool daemon_default, struct config_problems *p) {
        return refuse_confinement(s, s->file, s->json_path, daemon_default, p);
}

int server_config_check_launcher(const struct server_config *s, int launcher, char **error) {
        const char *key = confinement_first_key(&s->confinement);

        if (launcher != LAUNCHER_EXEC || !key)
                return 0;
        if (asprintf(error, "%s needs the systemd launcher, but this server is run by the exec launcher", key) < 0)
                *error = NULL;
        return -EINVAL;
}

/* The first key of an entry that only a program has, besides "command"; NULL if none. */
static const char *process_key(const struct server_config *s) {
        return s->args ? "args" : s->n_env ? "env" : s->cwd ? "cwd" : s->launcher != LAUNCHER_UNSET ? "launcher"
                                                                                               : confinement_first_key(&s->confinement);
}

/* What the settings of an entry must be together. */
static size_t check_entry(const struct server_config *s, const char *path, struct config_problems *p) {
        char item[512];

        if (remote_config_check(&s->remote, path, s->command != NULL, process_key(s), p) > 0)
                return 1;
        if (s->launcher == LAUNCHER_EXEC && s->confinement.keys)
                return refuse_confinement(s, p->file, path, false, p);
        if (item_filter_check(&s->filter, path, p) > 0)
                return 1;
        if (!s->remote.url && (!s->command || !*s->command)) {
                snprintf(item, sizeof item, "%s.command", path);
                problems_add(p, PROBLEM_ERROR, item, "missing: the program to run");
                return 1;
        }
        if (s->spare_instances > s->max_instances) {
                snprintf(item, sizeof item, "%s.spareInstances", path);
                problems_add(p, PROBLEM_ERROR, item, "more spares (%u) than maxInstances (%u) allows", s->spare_instances,
                             s->max_instances);
                return 1;
        }
        if (s->instances == INSTANCES_SHARED && s->spare_instances > 0) {
                snprintf(item, sizeof item, "%s.spareInstances", path);
                problems_add(p, PROBLEM_ERROR, item,
                             "spares are instances: set \"instances\" to \"per-client\" or \"per-user\", or remove the key");
                return 1;
        }
        if (s->roots.n > 0 && !(s->client_capabilities & (1u << CLIENT_CAP_ROOTS))) {
                snprintf(item, sizeof item, "%s.roots", path);
                problems_add(p, PROBLEM_ERROR, item,
                             "the server is not offered roots: add \"roots\" to its clientCapabilities, or remove its roots");
                return 1;
        }
        return 0;
}

/* Other clients expand ${VAR}, ${input:id} or ${workspaceFolder}; a server that gets
 * those characters as they are will not work as its author meant. */
static void warn_unexpanded(const char *value, const char *path, const char *suffix, struct config_problems *p) {
        char item[512];

        if (!value || !strstr(value, "${"))
                return;
        snprintf(item, sizeof item, "%s%s", path, suffix);
        problems_add(p, PROBLEM_WARNING, item,
                     "\"${\" is not expanded: the server gets these characters as written (no variables or VS Code inputs)");
}

static void check_unexpanded(const struct server_config *s, const char *path, struct config_problems *p) {
        char suffix[300];

        warn_unexpanded(s->command, path, ".command", p);
        for (size_t i = 0; s->args && s->args[i]; i++) {
                snprintf(suffix, sizeof suffix, ".args[%zu]", i);
                warn_unexpanded(s->args[i], path, suffix, p);
        }
        for (size_t i = 0; i < s->n_env; i++) {
                snprintf(suffix, sizeof suffix, ".env.%s", s->env[i].name);
                warn_unexpanded(s->env[i].value, path, suffix, p);
        }
        warn_unexpanded(s->cwd, path, ".cwd", p);
}

/* Where the entry was read: problems found after loading (the program missing) name it. */
static int set_origin(struct server_config *s, const char *name, const char *path, const struct config_problems *p) {
        s->name = strdup(name);
        s->json_path = strdup(path);
        s->file = p->file ? strdup(p->file) : NULL;
        return s->name && s->json_path && (s->file || !p->file) ? 0 : -ENOMEM;
}

int server_config_parse(const char *name, json_object *entry, const char *path, struct server_config *ret,
                        struct config_problems *p) {
        struct server_config s;
        size_t errors;

        init_defaults(&s);
        if (!server_name_valid(name)) {
                problems_add(p, PROBLEM_ERROR, path,
                             "server names are 1-%d characters of letters, digits, '_', '-' and '.' (they prefix tool names and name journal records)",
                             SERVER_NAME_MAX);
                return -EINVAL;
        }
        if (json_object_is_type(entry, json_type_object) && check_url_keys(entry, path, p) < 0)
                return -EINVAL;
        errors = settings_apply(server_settings, ARRAY_SIZE(server_settings), entry, path, &s, p);
        if (errors == 0 && confinement_finish(&s.confinement, entry, name, path, p) < 0)
                errors++;
        if (errors == 0)
                errors += check_entry(&s, path, p);
        if (errors > 0 || set_origin(&s, name, path, p) < 0) {
                server_config_done(&s);
                return -EINVAL;
        }
        check_unexpanded(&s, path, p);
        if (s.remote.url && !(s.remote.shown_url = remote_url_shown(s.remote.url))) {
                server_config_done(&s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

struct server_config *server_config_take(struct server_config *src) {
        struct server_config *s = malloc(sizeof *s);

        if (!s)
                return NULL;
        *s = *src;
        init_defaults(src);
        return s;
}

struct server_config *server_config_ref(struct server_config *s) {
        s->refs++;
        return s;
}

void server_config_free(struct server_config *s) {
        if (!s)
                return;
        if (s->refs > 0) {
                s->refs--;
                return;
        }
        server_config_done(s);
        free(s);
}

static bool env_equal(const struct server_config *a, const struct server_config *b) {
        if (a->n_env != b->n_env)
                return false;
        for (size_t i = 0; i < a->n_env; i++)
                if (!text_equal(a->env[i].name, b->env[i].name) || !text_equal(a->env[i].value, b->env[i].value) ||
                    !text_equal(a->env[i].credential, b->env[i].credential))
                        return false;
        return true;
}

/* Everything but the roots and the filters: a change of launcher or confinement needs a
 * new unit, so a restart. */
static bool settings_equal(const struct server_config *a, const struct server_config *b) {
        return text_equal(a->name, b->name) && text_equal(a->command, b->command) && text_strv_equal(a->args, b->args) &&
               env_equal(a, b) && text_equal(a->cwd, b->cwd) && text_equal(a->prefix, b->prefix) &&
               a->disabled == b->disabled && a->restart == b->restart && a->start_timeout == b->start_timeout &&
               a->protocol == b->protocol && a->probe_timeout == b->probe_timeout &&
               a->stop_timeout == b->stop_timeout && a->kill_timeout == b->kill_timeout &&
               a->health_interval == b->health_interval && a->health_timeout == b->health_timeout &&
               a->health_failures == b->health_failures && a->request_timeout == b->request_timeout &&
               a->restart_delay == b->restart_delay && a->restart_delay_max == b->restart_delay_max &&
               a->start_limit_burst == b->start_limit_burst && a->start_limit_interval == b->start_limit_interval &&
               a->client_capabilities == b->client_capabilities && a->max_catalog_items == b->max_catalog_items &&
               a->launcher == b->launcher && confinement_equal(&a->confinement, &b->confinement) &&
               remote_config_equal(&a->remote, &b->remote) && a->instances == b->instances &&
               a->instance_idle == b->instance_idle && a->max_instances == b->max_instances &&
               a->spare_instances == b->spare_instances;
}

bool server_config_equal(const struct server_config *a, const struct server_config *b) {
        return settings_equal(a, b) && roots_equal(&a->roots, &b->roots) && item_filter_equal(&a->filter, &b->filter);
}

bool server_config_changes_live(const struct server_config *current, const struct server_config *next) {
        return settings_equal(current, next) && !server_config_equal(current, next) &&
               (roots_equal(&current->roots, &next->roots) || (current->roots.n > 0 && next->roots.n > 0));
}
