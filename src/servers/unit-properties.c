/* A server's transient unit as data; see unit-properties.h. */
#include "unit-properties.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "environment.h"
#include "macro.h"
#include "names.h"
#include "run-as.h"
#include "settings.h"
#include "text.h"
#include "time-util.h"
#include "utf8.h"

/* One property of a preset: a string, a boolean or number (number), or a list. */
struct preset_property {
        const char *name;
        enum unit_property_type type;
        const char *string;
        uint64_t number;
        const char *const *list;
};

static const char *const system_service_calls[] = { "@system-service", NULL };
static const char *const native_architecture[] = { "native", NULL };
static const char *const unix_only[] = { "AF_UNIX", NULL };

/* What "strict" and "basic" share. No MemoryDenyWriteExecute=: V8's JIT needs W^X memory,
 * so it would stop every node server. */
#define SHARED_PRESET                                                                                   \
        { "PrivateTmp", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                            \
        { "PrivateDevices", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                        \
        { "NoNewPrivileges", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                       \
        { "CapabilityBoundingSet", UNIT_PROPERTY_U64, NULL, 0, NULL },                                  \
        { "AmbientCapabilities", UNIT_PROPERTY_U64, NULL, 0, NULL },                                    \
        { "RestrictSUIDSGID", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                      \
        { "ProtectKernelTunables", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                 \
        { "ProtectKernelModules", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                  \
        { "ProtectKernelLogs", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                     \
        { "ProtectControlGroups", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                  \
        { "LockPersonality", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                       \
        { "RestrictRealtime", UNIT_PROPERTY_BOOL, NULL, 1, NULL },                                      \
        { "SystemCallFilter", UNIT_PROPERTY_LIST, NULL, 1, system_service_calls },                      \
        { "SystemCallArchitectures", UNIT_PROPERTY_STRV, NULL, 0, native_architecture },                \
        { "UMask", UNIT_PROPERTY_U32, NULL, 0077, NULL }

static const struct preset_property strict_preset[] = {
        { "ProtectSystem", UNIT_PROPERTY_STRING, "strict", 0, NULL },
        { "ProtectHome", UNIT_PROPERTY_STRING, "read-only", 0, NULL },
        SHARED_PRESET,
};

/* $HOME stays writable (npm's cache is ~/.npm), /usr, /boot, /efi and /etc do not. */
static const struct preset_property basic_preset[] = {
        { "ProtectSystem", UNIT_PROPERTY_STRING, "full", 0, NULL },
        SHARED_PRESET,
};

int unit_name(const char *server, const char *daemon_id, uint64_t run, char **ret) {
        int r;

        /* Server names are unit-name characters already (server-config.h): no escaping. */
        if (!server_name_valid(server))
                return -EINVAL;
        if (daemon_id)
                r = asprintf(ret, UNIT_PREFIX "%s@%08" PRIx32 "-%" PRIu64 ".service", server, name_hash(daemon_id), run);
        else
                r = asprintf(ret, UNIT_PREFIX "%s@%" PRIu64 ".service", server, run);
        return r < 0 ? -ENOMEM : 0;
}

void unit_properties_done(struct unit_properties *p) {
        for (size_t i = 0; i < p->n; i++) {
                free(p->items[i].string);
                strv_free(p->items[i].strv);
        }
        free(p->items);
        free(p->unit);
        *p = (struct unit_properties){ 0 };
}

const struct unit_property *unit_properties_find(const struct unit_properties *p, const char *name) {
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->items[i].name, name) == 0)
                        return &p->items[i];
        return NULL;
}

static struct unit_property *add(struct unit_properties *p, const char *name, enum unit_property_type type) {
        if (p->n == p->allocated) {
                size_t allocated = p->allocated ? p->allocated * 2 : 48;
                struct unit_property *items = realloc(p->items, allocated * sizeof *items);

                if (!items)
                        return NULL;
                p->items = items;
                p->allocated = allocated;
        }
        p->items[p->n] = (struct unit_property){ .name = name, .type = type, .fd = -1 };
        return &p->items[p->n++];
}

static int add_string(struct unit_properties *p, const char *name, const char *value) {
        struct unit_property *u = add(p, name, UNIT_PROPERTY_STRING);

        if (!u || !(u->string = strdup(value)))
                return -ENOMEM;
        return 0;
}

static int add_bool(struct unit_properties *p, const char *name, bool value) {
        struct unit_property *u = add(p, name, UNIT_PROPERTY_BOOL);

        if (!u)
                return -ENOMEM;
        u->flag = value;
        return 0;
}

static int add_number(struct unit_properties *p, const char *name, enum unit_property_type type, uint64_t value) {
        struct unit_property *u = add(p, name, type);

        if (!u)
                return -ENOMEM;
        u->number = value;
        return 0;
}

static char **strv_dup(const char *const *strv) {
        size_t n = 0;
        char **copy;

        while (strv && strv[n])
                n++;
        copy = calloc(n + 1, sizeof *copy);
        for (size_t i = 0; copy && i < n; i++)
                if (!(copy[i] = strdup(strv[i]))) {
                        strv_free(copy);
                        return NULL;
                }
        return copy;
}

/* STRV, LIST or PAIRS; takes strv (freed on failure). */
static int add_strv_owned(struct unit_properties *p, const char *name, enum unit_property_type type, bool flag, char **strv) {
        struct unit_property *u = strv ? add(p, name, type) : NULL;

        if (!u) {
                strv_free(strv);
                return -ENOMEM;
        }
        u->strv = strv;
        u->flag = flag;
        return 0;
}

static int add_strv(struct unit_properties *p, const char *name, enum unit_property_type type, bool flag,
                    const char *const *strv) {
        return add_strv_owned(p, name, type, flag, strv_dup(strv));
}

/* ---- how it runs ---- */

/* A server starts when the daemon asks, long after boot: the default dependencies
 * (Requires= and After= sysinit.target, After= basic.target) only make the manager load
 * and order each unit against targets reached long ago, and a stop of sysinit.target
 * would stop the servers behind the daemon's back. What a server needs of them is kept:
 * stopped before shutdown.target. */
static int add_dependencies(struct unit_properties *p) {
        static const char *const shutdown[] = { "shutdown.target", NULL };
        int r;

        if ((r = add_bool(p, "DefaultDependencies", false)) < 0 ||
            (r = add_strv(p, "Conflicts", UNIT_PROPERTY_STRV, false, shutdown)) < 0)
                return r;
        return add_strv(p, "Before", UNIT_PROPERTY_STRV, false, shutdown);
}

/* Its cwd; else, for another user's run, that user's home, "-" so that a home that is not
 * there leaves it in "/" instead of failing the start (as the exec launcher does). */
static int add_working_directory(struct unit_properties *p, const struct unit_input *in) {
        _cleanup_free_ char *home = NULL;

        if (in->server->cwd)
                return add_string(p, "WorkingDirectory", in->server->cwd);
        if (!in->run_as)
                return 0;
        if (asprintf(&home, "-%s", in->run_as->home) < 0)
                return -ENOMEM;
        return add_string(p, "WorkingDirectory", home);
}

static int add_service(struct unit_properties *p, const struct unit_input *in) {
        const struct server_config *s = in->server;
        _cleanup_free_ char *description = NULL;
        /* killTimeout 0 means SIGKILL at once; a zero TimeoutStopUSec= means the same to the
         * manager, but "infinity" in a unit file: 1 usec says it either way. */
        uint64_t stop_usec = usec_from_seconds(s->kill_timeout);
        int r;

        if (asprintf(&description, "MCP server %s (mcpvisor)", s->name) < 0)
                return -ENOMEM;
        if ((r = add_string(p, "Description", description)) < 0 || (r = add_string(p, "Type", "exec")) < 0 ||
            (r = add_string(p, "Slice", in->manager == MANAGER_SYSTEM ? UNIT_SLICE_SYSTEM : UNIT_SLICE_USER)) < 0 ||
            (r = add_string(p, "CollectMode", "inactive-or-failed")) < 0 ||
            (r = add_string(p, "KillMode", "control-group")) < 0 ||
            (r = add_number(p, "TimeoutStopUSec", UNIT_PROPERTY_U64, stop_usec ? stop_usec : 1)) < 0 ||
            (r = add_bool(p, "SendSIGKILL", true)) < 0 || (r = add_string(p, "SyslogIdentifier", s->name)) < 0 ||
            (r = add_dependencies(p)) < 0)
                return r;
        if (in->add_ref && (r = add_bool(p, "AddRef", true)) < 0)
                return r;
        return add_working_directory(p, in);
}

static int add_stdio(struct unit_properties *p, const struct unit_input *in) {
        static const char *const names[3] = { "StandardInputFileDescriptor", "StandardOutputFileDescriptor",
                                              "StandardErrorFileDescriptor" };

        for (int i = 0; i < 3; i++) {
                struct unit_property *u;

                if (in->stdio[i] < 0)
                        continue;
                if (!(u = add(p, names[i], UNIT_PROPERTY_FD)))
                        return -ENOMEM;
                u->fd = in->stdio[i];
        }
        return 0;
}

/* ---- what it runs, with which environment ---- */

static size_t count_credentials(const struct server_config *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_env; i++)
                n += s->env[i].credential != NULL;
        return n;
}

static bool credential_listed(char *const *pairs, size_t n, const char *id) {
        for (size_t i = 0; i < n; i += 2)
                if (strcmp(pairs[i], id) == 0)
                        return true;
        return false;
}

/* LoadCredential= ID:PATH, each ID once, PATH in the daemon's own directory. */
static int add_credentials(struct unit_properties *p, const struct unit_input *in, char **error) {
        const struct server_config *s = in->server;
        char **pairs = calloc(2 * count_credentials(s) + 1, sizeof *pairs);
        size_t n = 0;

        if (!pairs)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_env; i++) {
                const struct env_var *e = &s->env[i];

                if (!e->credential || credential_listed(pairs, n, e->credential))
                        continue;
                if (!in->credentials_dir) {
                        text_error(error, "env %s needs credential '%s', but the daemon has no credentials "
                                         "(add LoadCredential=%s:/path/to/secret to mcpvisor.service)",
                                  e->name, e->credential, e->credential);
                        strv_free(pairs);
                        return -EINVAL;
                }
                if (!(pairs[n] = strdup(e->credential)) || asprintf(&pairs[n + 1], "%s/%s", in->credentials_dir, e->credential) < 0) {
                        pairs[n + 1] = NULL;
                        strv_free(pairs);
                        return -ENOMEM;
                }
                n += 2;
        }
        return add_strv_owned(p, "LoadCredential", UNIT_PROPERTY_PAIRS, false, pairs);
}

static size_t strv_length(char *const *strv) {
        size_t n = 0;

        while (strv && strv[n])
                n++;
        return n;
}

/* [helper VAR=ID ... --] program args: argv[0] is the command as written, as with exec,
 * unless the helper runs first. */
static char **exec_argv(const struct unit_input *in, const char *program) {
        const struct server_config *s = in->server;
        size_t n_creds = count_credentials(s), n = 0;
        char **argv = calloc(n_creds + strv_length(s->args) + 4, sizeof *argv);
        bool ok = argv != NULL;

        if (ok && n_creds > 0) {
                ok = (argv[n++] = strdup(UNIT_CREDENTIAL_HELPER)) != NULL;
                for (size_t i = 0; ok && i < s->n_env; i++)
                        if (s->env[i].credential)
                                ok = asprintf(&argv[n++], "%s=%s", s->env[i].name, s->env[i].credential) >= 0;
                ok = ok && (argv[n++] = strdup("--")) != NULL;
        }
        ok = ok && (argv[n++] = strdup(n_creds > 0 ? program : s->command)) != NULL;
        for (size_t i = 0; ok && s->args && s->args[i]; i++)
                ok = (argv[n++] = strdup(s->args[i])) != NULL;
        if (!ok && argv)
                argv[n ? n - 1 : 0] = NULL; /* a failed asprintf leaves its slot undefined */
        if (!ok) {
                strv_free(argv);
                return NULL;
        }
        return argv;
}

static int add_exec_start(struct unit_properties *p, const struct unit_input *in, char **error) {
        const struct server_config *s = in->server;
        _cleanup_free_ char *program = NULL;
        struct unit_property *u;
        bool helper = count_credentials(s) > 0;

        if (in->program[0] != '/' && !s->cwd) {
                text_error(error, "command '%s' is a relative path: give an absolute one, or a cwd it is relative to",
                          in->program);
                return -EINVAL;
        }
        if (in->program[0] == '/')
                program = strdup(in->program);
        else if (asprintf(&program, "%s/%s", s->cwd, in->program) < 0)
                program = NULL;
        if (!program || !(u = add(p, "ExecStartEx", UNIT_PROPERTY_EXEC)))
                return -ENOMEM;
        u->string = strdup(helper ? in->credential_helper : program);
        u->strv = exec_argv(in, program);
        return u->string && u->strv ? 0 : -ENOMEM;
}

/* The manager refuses a value that is not UTF-8, and D-Bus strings must be. */
static int add_environment(struct unit_properties *p, const struct unit_input *in, char **error) {
        char **env = NULL;
        int r = environment_build_public(in->server, in->daemon_env, in->daemon_id, in->run, &env);

        if (r < 0)
                return r;
        for (size_t i = 0; env[i]; i++)
                if (!utf8_valid(env[i], strlen(env[i]))) {
                        text_error(error, "env %.*s: the value is not UTF-8 text, which a unit's Environment= must be",
                                  (int)strcspn(env[i], "="), env[i]);
                        strv_free(env);
                        return -EINVAL;
                }
        return add_strv_owned(p, "Environment", UNIT_PROPERTY_STRV, false, env);
}

/* ---- confinement ---- */

/* Another user's run is that user's alone: an entry that names a user of its own would
 * have it run as someone else. User= alone says who: the manager takes the user's primary
 * group and initgroups() from the same databases run_as_resolve() read. Under a user
 * manager, which runs its own user only (run_as_check() refused any other), nothing. */
static int add_run_as(struct unit_properties *p, const struct unit_input *in, char **error) {
        const struct confinement *c = &in->server->confinement;

        if (c->user || c->group || c->dynamic_user) {
                text_error(error, "cannot run '%s' as user %s: its entry sets %s, which would run it as another",
                           in->server->name, in->run_as->user, c->user ? "user" : c->group ? "group" : "dynamicUser");
                return -EINVAL;
        }
        if (in->manager != MANAGER_SYSTEM)
                return 0;
        return add_string(p, "User", in->run_as->user);
}

static int add_identity(struct unit_properties *p, const struct unit_input *in, char **error) {
        const struct confinement *c = &in->server->confinement;
        const char *user = c->user;
        int r = confinement_check_manager(c, in->manager, error);

        if (r < 0)
                return -EINVAL;
        if (in->run_as)
                return add_run_as(p, in, error);
        if (!user && !c->dynamic_user && in->manager == MANAGER_SYSTEM)
                user = in->default_user;
        if (user && (r = add_string(p, "User", user)) < 0)
                return r;
        if (c->group && (r = add_string(p, "Group", c->group)) < 0)
                return r;
        if (c->dynamic_user && (r = add_bool(p, "DynamicUser", true)) < 0)
                return r;
        return 0;
}

static int add_preset(struct unit_properties *p, const struct preset_property *preset, size_t n) {
        int r = 0;

        for (size_t i = 0; i < n && r == 0; i++) {
                const struct preset_property *q = &preset[i];

                if (q->type == UNIT_PROPERTY_STRING)
                        r = add_string(p, q->name, q->string);
                else if (q->type == UNIT_PROPERTY_BOOL)
                        r = add_bool(p, q->name, q->number != 0);
                else if (q->type == UNIT_PROPERTY_STRV || q->type == UNIT_PROPERTY_LIST)
                        r = add_strv(p, q->name, q->type, q->number != 0, q->list);
                else
                        r = add_number(p, q->name, q->type, q->number);
        }
        return r;
}

/* A user manager may not make mount or network namespaces; in a user namespace of the
 * unit's own (PrivateUsers=) it may (systemd.exec(5), "sandboxing"). */
static bool needs_namespaces(const struct confinement *c) {
        return c->sandbox != SANDBOX_NONE || !c->network || strv_length(c->read_write_paths) > 0 ||
               strv_length(c->read_only_paths) > 0;
}

static int add_sandbox(struct unit_properties *p, const struct unit_input *in) {
        const struct confinement *c = &in->server->confinement;
        int r = 0;

        if (c->sandbox == SANDBOX_STRICT)
                r = add_preset(p, strict_preset, ARRAY_SIZE(strict_preset));
        else if (c->sandbox == SANDBOX_BASIC)
                r = add_preset(p, basic_preset, ARRAY_SIZE(basic_preset));
        if (r == 0 && in->manager == MANAGER_USER && needs_namespaces(c))
                r = add_bool(p, "PrivateUsers", true);
        if (r == 0 && strv_length(c->read_write_paths) > 0)
                r = add_strv(p, "ReadWritePaths", UNIT_PROPERTY_STRV, false, (const char *const *)c->read_write_paths);
        if (r == 0 && strv_length(c->read_only_paths) > 0)
                r = add_strv(p, "ReadOnlyPaths", UNIT_PROPERTY_STRV, false, (const char *const *)c->read_only_paths);
        if (r == 0 && !c->network)
                r = add_bool(p, "PrivateNetwork", true);
        if (r == 0 && !c->network)
                r = add_strv(p, "RestrictAddressFamilies", UNIT_PROPERTY_LIST, true, unix_only);
        return r;
}

static int add_limits(struct unit_properties *p, const struct confinement *c) {
        int r = 0;

        if (c->memory_max)
                r = add_number(p, "MemoryMax", UNIT_PROPERTY_U64, c->memory_max);
        if (r == 0 && c->tasks_max)
                r = add_number(p, "TasksMax", UNIT_PROPERTY_U64, c->tasks_max);
        if (r == 0 && c->cpu_quota_usec)
                r = add_number(p, "CPUQuotaPerSecUSec", UNIT_PROPERTY_U64, c->cpu_quota_usec);
        if (r == 0 && c->state_directory)
                r = add_strv(p, "StateDirectory", UNIT_PROPERTY_STRV, false,
                             (const char *const[]){ c->state_directory, NULL });
        return r;
}

int unit_properties_build(const struct unit_input *in, struct unit_properties *ret, char **error) {
        struct unit_properties p = { 0 };
        int r;

        assert(in->server && in->program);
        if (count_credentials(in->server) > 0 && (!in->credential_helper || in->credential_helper[0] != '/')) {
                text_error(error, "its credentials need " UNIT_CREDENTIAL_HELPER ", which was not found");
                return -EINVAL;
        }
        r = unit_name(in->server->name, in->daemon_id, in->run, &p.unit);
        if (r == 0)
                r = add_service(&p, in);
        if (r == 0)
                r = add_exec_start(&p, in, error);
        if (r == 0)
                r = add_environment(&p, in, error);
        if (r == 0 && count_credentials(in->server) > 0)
                r = add_credentials(&p, in, error);
        if (r == 0)
                r = add_stdio(&p, in);
        if (r == 0)
                r = add_identity(&p, in, error);
        if (r == 0)
                r = add_sandbox(&p, in);
        if (r == 0)
                r = add_limits(&p, &in->server->confinement);
        if (r < 0) {
                unit_properties_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

/* ---- a server's OOM watch, registered by the manager's unit ---- */

/* A oneshot that ends with its command, stopped before shutdown, collected when done; no
 * privilege beyond root's ownership of the file it writes. */
static int add_registrar_service(struct unit_properties *p, const char *server_unit) {
        static const char *const shutdown[] = { "shutdown.target", NULL };
        _cleanup_free_ char *description = NULL;
        int r;

        if (asprintf(&description, "OOM watch of %s (mcpvisor)", server_unit) < 0)
                return -ENOMEM;
        if ((r = add_string(p, "Description", description)) < 0 || (r = add_string(p, "Type", "oneshot")) < 0 ||
            (r = add_string(p, "Slice", UNIT_SLICE_SYSTEM)) < 0 || (r = add_string(p, "CollectMode", "inactive-or-failed")) < 0 ||
            (r = add_bool(p, "DefaultDependencies", false)) < 0 ||
            (r = add_strv(p, "Conflicts", UNIT_PROPERTY_STRV, false, shutdown)) < 0 ||
            (r = add_strv(p, "Before", UNIT_PROPERTY_STRV, false, shutdown)) < 0 ||
            (r = add_bool(p, "NoNewPrivileges", true)) < 0 ||
            (r = add_number(p, "CapabilityBoundingSet", UNIT_PROPERTY_U64, 0)) < 0)
                return r;
        return add_string(p, "StandardOutput", "null");
}

static int add_fd(struct unit_properties *p, const char *name, int fd) {
        struct unit_property *u = add(p, name, UNIT_PROPERTY_FD);

        if (!u)
                return -ENOMEM;
        u->fd = fd;
        return 0;
}

int unit_properties_build_oom_registrar(const char *server_unit, const char *event_control, int efd, int control,
                                        struct unit_properties *ret) {
        /* "$1" is the shell's, never the manager's: the command goes with no-env-expand. */
        const char *const argv[] = { "sh", "-c", "printf '0 2' >\"$1\"", "sh", event_control, NULL };
        size_t len = strlen(server_unit), suffix = strlen(".service");
        struct unit_properties p = { 0 };
        struct unit_property *u;
        int r;

        if (len <= suffix || strcmp(server_unit + len - suffix, ".service") != 0 || !strchr(server_unit, '@') ||
            event_control[0] != '/')
                return -EINVAL;
        if (asprintf(&p.unit, "%.*s-oom.service", (int)(len - suffix), server_unit) < 0)
                return -ENOMEM;
        r = add_registrar_service(&p, server_unit);
        if (r == 0 && !(u = add(&p, "ExecStartEx", UNIT_PROPERTY_EXEC)))
                r = -ENOMEM;
        if (r == 0 && (!(u->string = strdup("/bin/sh")) || !(u->strv = strv_dup(argv))))
                r = -ENOMEM;
        if (r == 0)
                r = add_fd(&p, "StandardInputFileDescriptor", efd);
        if (r == 0)
                r = add_fd(&p, "StandardErrorFileDescriptor", control);
        if (r < 0) {
                unit_properties_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

/* ---- onto the bus ---- */

/* The manager expands $VAR, ${VAR} and $$ in a command's arguments unless told not to
 * (ExecStart=:, "no-env-expand", systemd 243 and later): a server's args reach it exactly
 * as written, as with exec, whatever they hold. Its failure is not ignored. */
static int append_exec(sd_bus_message *m, const struct unit_property *u) {
        static char *const flags[] = { (char *)"no-env-expand", NULL };
        int r;

        if ((r = sd_bus_message_open_container(m, 'a', "(sasas)")) < 0 ||
            (r = sd_bus_message_open_container(m, 'r', "sasas")) < 0 || (r = sd_bus_message_append(m, "s", u->string)) < 0 ||
            (r = sd_bus_message_append_strv(m, u->strv)) < 0 || (r = sd_bus_message_append_strv(m, (char **)flags)) < 0 ||
            (r = sd_bus_message_close_container(m)) < 0)
                return r;
        return sd_bus_message_close_container(m);
}

static int append_list(sd_bus_message *m, const struct unit_property *u) {
        int r;

        if ((r = sd_bus_message_open_container(m, 'r', "bas")) < 0 || (r = sd_bus_message_append(m, "b", (int)u->flag)) < 0 ||
            (r = sd_bus_message_append_strv(m, u->strv)) < 0)
                return r;
        return sd_bus_message_close_container(m);
}

static int append_pairs(sd_bus_message *m, const struct unit_property *u) {
        int r = sd_bus_message_open_container(m, 'a', "(ss)");

        for (size_t i = 0; r >= 0 && u->strv[i]; i += 2)
                r = sd_bus_message_append(m, "(ss)", u->strv[i], u->strv[i + 1]);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

static const char *signature(enum unit_property_type type) {
        static const char *const signatures[] = {
                [UNIT_PROPERTY_STRING] = "s", [UNIT_PROPERTY_BOOL] = "b",        [UNIT_PROPERTY_U32] = "u",
                [UNIT_PROPERTY_U64] = "t",    [UNIT_PROPERTY_STRV] = "as",      [UNIT_PROPERTY_EXEC] = "a(sasas)",
                [UNIT_PROPERTY_LIST] = "(bas)", [UNIT_PROPERTY_PAIRS] = "a(ss)", [UNIT_PROPERTY_FD] = "h",
        };

        return signatures[type];
}

static int append_value(sd_bus_message *m, const struct unit_property *u) {
        switch (u->type) {
        case UNIT_PROPERTY_STRING:
                return sd_bus_message_append(m, "s", u->string);
        case UNIT_PROPERTY_BOOL:
                return sd_bus_message_append(m, "b", (int)u->flag);
        case UNIT_PROPERTY_U32:
                return sd_bus_message_append(m, "u", (uint32_t)u->number);
        case UNIT_PROPERTY_U64:
                return sd_bus_message_append(m, "t", u->number);
        case UNIT_PROPERTY_STRV:
                return sd_bus_message_append_strv(m, u->strv);
        case UNIT_PROPERTY_EXEC:
                return append_exec(m, u);
        case UNIT_PROPERTY_LIST:
                return append_list(m, u);
        case UNIT_PROPERTY_PAIRS:
                return append_pairs(m, u);
        case UNIT_PROPERTY_FD:
                return sd_bus_message_append(m, "h", u->fd);
        }
        return -EINVAL;
}

int unit_properties_append(const struct unit_properties *p, sd_bus_message *m) {
        int r = sd_bus_message_open_container(m, 'a', "(sv)");

        for (size_t i = 0; r >= 0 && i < p->n; i++) {
                const struct unit_property *u = &p->items[i];

                if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 || (r = sd_bus_message_append(m, "s", u->name)) < 0 ||
                    (r = sd_bus_message_open_container(m, 'v', signature(u->type))) < 0 || (r = append_value(m, u)) < 0 ||
                    (r = sd_bus_message_close_container(m)) < 0)
                        break;
                r = sd_bus_message_close_container(m);
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}
