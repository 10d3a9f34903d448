/* A server's confinement settings: the sandbox preset, the paths it may write or only
 * read, its network, its limits (memory, tasks, CPU), whom it runs as and its state
 * directory. They are given to systemd as the properties of the server's transient
 * unit (unit-properties.h), so they need the systemd launcher; this module parses and
 * checks the values, compares them, and says which keys an entry gave. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

struct config_problems;

/* "sandbox": index into confinement_sandbox_names. */
enum sandbox {
        SANDBOX_STRICT,
        SANDBOX_BASIC,
        SANDBOX_NONE,
};

/* The service manager a unit would be started by: the one that runs the daemon. */
enum manager_kind {
        MANAGER_SYSTEM,
        MANAGER_USER,
};

extern const char *const confinement_sandbox_names[]; /* NULL-terminated, for SETTING_CHOICE */

/* "basic" confines and still runs npm servers through npx unchanged: /usr, /boot and /etc
 * read-only but $HOME (npm's cache) writable, W^X memory allowed (V8's JIT), the network. */
#define CONFINEMENT_DEFAULT_SANDBOX SANDBOX_BASIC

/* "memoryMax": "infinity" */
#define CONFINEMENT_INFINITY UINT64_MAX
#define CONFINEMENT_TASKS_MAX 4194304 /* the kernel's highest pid_max */
/* "cpuQuota" at most this many percent (10000 CPUs) */
#define CONFINEMENT_CPU_PERCENT_MAX 1000000

/* The keys, in the order the bits of struct confinement's keys follow. */
enum confinement_key {
        CONFINEMENT_KEY_SANDBOX,
        CONFINEMENT_KEY_READ_WRITE_PATHS,
        CONFINEMENT_KEY_READ_ONLY_PATHS,
        CONFINEMENT_KEY_NETWORK,
        CONFINEMENT_KEY_MEMORY_MAX,
        CONFINEMENT_KEY_TASKS_MAX,
        CONFINEMENT_KEY_CPU_QUOTA,
        CONFINEMENT_KEY_USER,
        CONFINEMENT_KEY_GROUP,
        CONFINEMENT_KEY_DYNAMIC_USER,
        CONFINEMENT_KEY_STATE_DIRECTORY,
        CONFINEMENT_KEY_COUNT,
};

extern const char *const confinement_key_names[CONFINEMENT_KEY_COUNT];

struct confinement {
        int sandbox;              /* enum sandbox */
        char **read_write_paths;  /* NULL-terminated absolute paths, or NULL */
        char **read_only_paths;
        bool network;             /* false: PrivateNetwork=yes and AF_UNIX only */
        uint64_t memory_max;      /* bytes; 0: no limit given; CONFINEMENT_INFINITY: "infinity" */
        unsigned tasks_max;       /* 0: no limit given */
        uint64_t cpu_quota_usec;  /* CPU time per second of wall time, in usec (100% = 1000000); 0: none */
        char *user;               /* User=, Group=: names, or NULL */
        char *group;
        bool dynamic_user;
        char *state_directory;    /* relative to /var/lib (system) or $XDG_CONFIG_HOME (user), or NULL */
        unsigned keys;            /* bits of enum confinement_key: the keys the entry gave */
};

void confinement_init(struct confinement *c);
void confinement_done(struct confinement *c);

/* Parsers for the settings table (settings.h's SETTING_CUSTOM): each adds a problem at
 * path and returns -EINVAL on a bad value. dst points at the field named. */
int confinement_parse_paths(json_object *v, const char *path, void *dst, struct config_problems *p);    /* char *** */
int confinement_parse_memory(json_object *v, const char *path, void *dst, struct config_problems *p);   /* uint64_t */
int confinement_parse_cpu_quota(json_object *v, const char *path, void *dst, struct config_problems *p); /* uint64_t */
int confinement_parse_name(json_object *v, const char *path, void *dst, struct config_problems *p);     /* char ** */
/* true: "" until confinement_finish() names it after the server; a string: a relative path. */
int confinement_parse_state_directory(json_object *v, const char *path, void *dst, struct config_problems *p);

/* Sizes as systemd writes them: a whole number of bytes, optionally with a fraction and
 * one of K, M, G, T (powers of 1024), or "infinity". 0 on success. */
int confinement_parse_size(const char *s, uint64_t *ret);
/* "50%", "200%", "12.5%": the CPU time per second it allows, in usec. */
int confinement_parse_percent(const char *s, uint64_t *ret);

/* After the table was applied to entry (the server's JSON object): records which keys it
 * gave and names the state directory "true" asked for ("mcpvisor/servers/NAME"). Adds a
 * problem and returns -EINVAL when no such directory can be named after the server. */
int confinement_finish(struct confinement *c, json_object *entry, const char *server, const char *path,
                       struct config_problems *p);

/* The name of the first key the entry gave, or NULL when it gave none (then the server
 * runs the same with any launcher). */
const char *confinement_first_key(const struct confinement *c);

bool confinement_equal(const struct confinement *a, const struct confinement *b);

/* Whether the service manager can honour c: User=, Group= and DynamicUser= need the
 * system manager (a user manager runs everything as its own user). 0, or -EPERM with
 * *error (malloc'd) saying what to change. Checked when a server starts, as only then is
 * the manager known. */
int confinement_check_manager(const struct confinement *c, enum manager_kind kind, char **error);
