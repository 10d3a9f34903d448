/* What a server process starts with: a clean environment built from scratch, and the
 * program path resolved against that environment's PATH (not the daemon's). Pure apart
 * from reading credential files and stat()ing PATH entries. */
#pragma once

#include <stdbool.h>

#include <stdint.h>

#include "server-config.h"

struct run_as;

/* Names the daemon passes on from its own environment; everything else, NOTIFY_SOCKET,
 * LISTEN_*, WATCHDOG_*, JOURNAL_STREAM and CREDENTIALS_DIRECTORY above all, stays ours. */
#define ENVIRONMENT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Set in every server's environment. Inherited by whatever the server starts, it lets the
 * daemon attribute processes that escaped the server's process group. */
#define ENV_SERVER "MCPVISOR_SERVER"
#define ENV_INSTANCE "MCPVISOR_INSTANCE"
/* The daemon's own MCP socket path: a new daemon that takes over the path ends whatever a
 * dead one left running (see reaper_end_predecessors). */
#define ENV_DAEMON "MCPVISOR_DAEMON"

/* Builds a NULL-terminated "NAME=value" array in *ret: PATH, HOME, LANG, LC_*, TZ from
 * daemon_env, then, for a run as another user (as, run-as.h; NULL: the daemon's own),
 * that user's HOME, USER and LOGNAME, then the configured env (credentials read from
 * credentials_dir, which may be NULL; see credential.h), then MCPVISOR_SERVER,
 * MCPVISOR_INSTANCE and, unless daemon_id is NULL, MCPVISOR_DAEMON. On failure *error says
 * what to fix. */
int environment_build(const struct server_config *s, char *const *daemon_env, const char *daemon_id,
                      uint64_t instance, const char *credentials_dir, const struct run_as *as, char ***ret,
                      char **error);

/* The same for a transient unit's Environment= property, which every local user can read
 * (systemctl show, the bus): the values read from credentials are left out (the unit
 * gets them through LoadCredential= and mcpvisor-exec-credentials, see
 * unit-properties.h), and so is the daemon's HOME (the service manager sets the unit
 * user's own, with USER and LOGNAME, from User=). Reads no file. */
int environment_build_public(const struct server_config *s, char *const *daemon_env, const char *daemon_id,
                             uint64_t instance, char ***ret);

/* The value of name in a NULL-terminated environment, or NULL. */
const char *environment_get(char *const *env, const char *name);

/* A command without '/' is looked up in path_list (colon-separated); one with '/' is used
 * as it is (relative to the server's cwd). -ENOENT or -EACCES when nothing runnable found. */
int environment_find_program(const char *command, const char *path_list, char **ret);

/* Its env.PATH is a credential: only the service knows the value, --check-config does not. */
bool environment_path_is_credential(const struct server_config *s);
/* The PATH the server will get: its env.PATH, else the daemon's, else the default. */
const char *environment_server_path(const struct server_config *s, char *const *daemon_env);

/* s's program as a start runs it: a command without '/' found in path_list, one with '/'
 * present (relative to s->cwd) and executable. On failure (-ENOENT, -EACCES, ...) *error
 * says what to fix, in the words the daemon logs when the start fails. */
int environment_find_server_program(const struct server_config *s, const char *path_list, char **ret, char **error);

/* s->cwd, when set, is a directory; else -EINVAL and *error says why. */
int environment_check_cwd(const struct server_config *s, char **error);
