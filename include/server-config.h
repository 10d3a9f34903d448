/* One entry of "mcpServers": how to run a downstream MCP server and supervise it. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "confinement.h"
#include "item-filter.h"
#include "remote-config.h"
#include "roots.h"

struct config_problems;

enum restart_policy { RESTART_ON_FAILURE, RESTART_ALWAYS, RESTART_NEVER };

/* How a server is run: "auto" is systemd when the daemon runs under a service manager it
 * can reach, else exec; "systemd" a transient unit of that manager (confined, limited,
 * accounted: confinement.h); "exec" today's spawn, a child of the daemon. */
enum launcher { LAUNCHER_AUTO, LAUNCHER_SYSTEMD, LAUNCHER_EXEC };
/* A server's "launcher" before the configuration was read whole: the daemon's, whatever
 * "mcpvisor.launcher" says (config.c resolves it). */
#define LAUNCHER_UNSET (-1)

extern const char *const launcher_names[]; /* "auto", "systemd", "exec", NULL */

/* Whom a server's process serves: one for every client ("shared"), one for each user
 * that connects ("per-user"), or one for each MCP connection or HTTP session
 * ("per-client"). An instanced entry is run by its pool (pool.h). */
enum server_instances { INSTANCES_SHARED, INSTANCES_PER_USER, INSTANCES_PER_CLIENT };

extern const char *const server_instances_names[]; /* "shared", "per-user", "per-client", NULL */

/* Which era of MCP a server is spoken to in: "auto" probes with server/discover at each
 * start (an answer: modern; an error or silence within probeTimeout: legacy, initialize);
 * "legacy" sends initialize at once; "modern" sends server/discover and nothing else. */
enum server_protocol { SERVER_PROTOCOL_AUTO, SERVER_PROTOCOL_LEGACY, SERVER_PROTOCOL_MODERN };

extern const char *const server_protocol_names[]; /* "auto", "legacy", "modern", NULL */

/* What a server may ask of the client, each advertised to it in initialize only when
 * configured ("clientCapabilities"); see upcall.h for how they are routed. */
enum client_capability {
        CLIENT_CAP_ROOTS,
        CLIENT_CAP_SAMPLING,
        CLIENT_CAP_ELICITATION,
        CLIENT_CAP_COUNT,
};

#define CLIENT_CAPS_ALL ((1u << CLIENT_CAP_COUNT) - 1)

/* "roots", "sampling", "elicitation": the capability's key in initialize. */
extern const char *const client_capability_names[CLIENT_CAP_COUNT];
/* The enum client_capability of such a key; -1 for another. */
int client_capability_of(const char *name);

struct env_var {
        char *name;
        char *value;       /* literal value, or NULL */
        char *credential;  /* systemd credential id to read the value from, or NULL */
};

struct server_config {
        char *name;
        char *command;
        char **args;            /* NULL-terminated, without the command */
        struct env_var *env;
        size_t n_env;
        char *cwd;
        bool disabled;
        int restart;            /* enum restart_policy */
        double start_timeout;   /* seconds for spawn + initialize + lists */
        int protocol;           /* enum server_protocol */
        double probe_timeout;   /* seconds the server/discover probe waits ("auto") */
        double stop_timeout;    /* grace after closing stdin */
        double kill_timeout;    /* grace after SIGTERM */
        double health_interval; /* MCP ping period; 0 = off */
        double health_timeout;
        unsigned health_failures;
        double request_timeout; /* 0 = off */
        double restart_delay;     /* first delay before a restart; doubles per quick exit */
        double restart_delay_max; /* cap of that delay */
        unsigned start_limit_burst;   /* more starts than this within ... */
        double start_limit_interval;  /* ... this many seconds: the server is failed */
        char *prefix;           /* tool/prompt name prefix; NULL = the name, "" = none */
        unsigned client_capabilities; /* bits of enum client_capability */
        unsigned max_catalog_items; /* tools, prompts, resources, templates each: the first this many are served */
        struct roots roots;     /* answered to its roots/list; none: its caller's (upcall.h) */
        struct item_filter filter; /* which of its tools and prompts are offered */
        int launcher;           /* enum launcher, once loaded; LAUNCHER_UNSET while being parsed */
        struct confinement confinement; /* sandbox, limits, user, state: the systemd launcher's */
        struct remote_config remote;    /* a server reached by URL (remote.url set): no program */
        int instances;          /* enum server_instances */
        double instance_idle;   /* per-user: seconds after its user's last client left before it stops */
        unsigned max_instances; /* instances and spares at most */
        unsigned spare_instances; /* kept started and initialized, owned by nobody yet */
        unsigned refs;          /* references beyond the first (server_config_ref()); pool instances share it */
        /* Where the entry was read, for problems found after loading; not settings. */
        char *file;             /* NULL when parsed from text */
        char *json_path;        /* "mcpServers.github" */
};

#define SERVER_NAME_MAX 64
#define SERVER_DEFAULT_INSTANCE_IDLE 300
#define SERVER_DEFAULT_MAX_INSTANCES 64
#define SERVER_MAX_INSTANCES_MAX 4096
/* "maxCatalogItems": a server offering more of one kind (100k tools cost ~300 MB) is cut. */
#define SERVER_DEFAULT_MAX_CATALOG_ITEMS 10000

/* Names become journal identifiers and tool-name prefixes: 1-64 of A-Z a-z 0-9 _ - . */
bool server_name_valid(const char *name);

/* Validates one entry. On success fills ret (owned by the caller) and returns 0; on an
 * error the problems say why and -EINVAL is returned: the caller skips this server. */
int server_config_parse(const char *name, json_object *entry, const char *path, struct server_config *ret,
                        struct config_problems *p);
void server_config_done(struct server_config *s);

/* Moves *src to the heap (src is left empty); NULL when out of memory (src untouched). */
struct server_config *server_config_take(struct server_config *src);
/* Drops one reference: the settings are freed with the last. */
void server_config_free(struct server_config *s);
/* One more reference to s (the instances of a pool share its settings); returns s. */
struct server_config *server_config_ref(struct server_config *s);
/* Same settings (wherever they were read): a reload keeps such a server running undisturbed. */
bool server_config_equal(const struct server_config *a, const struct server_config *b);
/* Whether s may run with launcher (the one a start chose, or the configuration's): the
 * exec launcher cannot confine, so an entry giving any confinement key needs systemd.
 * 0, or -EINVAL with *error (malloc'd) naming the first such key. */
int server_config_check_launcher(const struct server_config *s, int launcher, char **error);
/* The same for the configuration: an error at each confinement key s gave (in the file
 * it was read from), for a server whose launcher is "exec", its own or, when
 * daemon_default, the daemon's "launcher". Returns how many. */
size_t server_config_refuse_confinement(const struct server_config *s, bool daemon_default, struct config_problems *p);
/* next differs from current only in what changes while the server runs: its tool and
 * prompt filters (the registry's view of it), and its roots when both have some (it was
 * offered roots.listChanged at its initialize, so a reload can tell it instead of
 * restarting it; the first roots, or the removal of the last, change what it was offered:
 * a restart). */
bool server_config_changes_live(const struct server_config *current, const struct server_config *next);
