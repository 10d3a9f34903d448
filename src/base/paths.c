/* Default socket locations. */
#include "paths.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *path_socket_in(const char *runtime_dir, const char *name) {
        char *p;

        if (!runtime_dir || runtime_dir[0] != '/') {
                errno = ENOENT; /* no per-user runtime directory: the caller must name a path */
                return NULL;
        }
        if (asprintf(&p, "%s/mcpvisor/%s", runtime_dir, name) < 0)
                return NULL;
        return p;
}

char *path_default_socket(const char *name) {
        if (geteuid() == 0)
                return path_socket_in(PATH_SYSTEM_RUNTIME_DIR, name);
        return path_socket_in(getenv("XDG_RUNTIME_DIR"), name);
}

/* lstat, not access(): a socket we may not connect to still exists, and saying "permission
 * denied" on it is more useful than falling back to a path where nothing listens. */
static bool exists(const char *path) {
        struct stat st;

        return path && lstat(path, &st) == 0;
}

char *path_pick_socket(const char *name, enum path_scope scope, uid_t euid, const char *xdg_runtime_dir,
                       const char *system_runtime_dir) {
        char *user, *system;

        if (scope == PATH_SCOPE_SYSTEM || (scope == PATH_SCOPE_AUTO && euid == 0))
                return path_socket_in(system_runtime_dir, name);
        user = path_socket_in(xdg_runtime_dir, name);
        if (scope == PATH_SCOPE_USER || exists(user))
                return user;
        system = path_socket_in(system_runtime_dir, name);
        if (exists(system) || !user) {
                /* Without XDG_RUNTIME_DIR the system path is the only one left to name. */
                free(user);
                return system;
        }
        free(system);
        return user;
}

char *path_client_socket(const char *name, enum path_scope scope) {
        return path_pick_socket(name, scope, geteuid(), secure_getenv("XDG_RUNTIME_DIR"), PATH_SYSTEM_RUNTIME_DIR);
}

char *path_config_for(uid_t euid, const char *xdg_config_home, const char *home) {
        char *path = NULL;
        int r;

        if (euid == 0)
                return strdup(PATH_DEFAULT_CONFIG);
        if (xdg_config_home && xdg_config_home[0] == '/')
                r = asprintf(&path, "%s/mcpvisor/mcpvisor.json", xdg_config_home);
        else if (home && home[0] == '/')
                r = asprintf(&path, "%s/.config/mcpvisor/mcpvisor.json", home);
        else {
                errno = ENOENT;
                return NULL;
        }
        return r < 0 ? NULL : path;
}

char *path_default_config(void) {
        return path_config_for(geteuid(), getenv("XDG_CONFIG_HOME"), getenv("HOME"));
}

char *path_control_beside(const char *mcp_path) {
        const char *base = strrchr(mcp_path, '/');
        size_t dir_len = base ? (size_t)(base - mcp_path) + 1 : 0, stem_len;
        char *p;

        base = mcp_path + dir_len;
        if (strcmp(base, "mcp.sock") == 0)
                return asprintf(&p, "%.*scontrol.sock", (int)dir_len, mcp_path) < 0 ? NULL : p;
        stem_len = strlen(base);
        if (stem_len > 5 && strcmp(base + stem_len - 5, ".sock") == 0)
                stem_len -= 5;
        return asprintf(&p, "%.*s%.*s.control.sock", (int)dir_len, mcp_path, (int)stem_len, base) < 0 ? NULL : p;
}

char *path_state_for(uid_t euid, const char *state_directory, const char *xdg_state_home, const char *home) {
        char *p = NULL;

        if (state_directory && state_directory[0] == '/') {
                /* systemd gives one path per StateDirectory= entry, separated by ':' */
                p = strndup(state_directory, strcspn(state_directory, ":"));
        } else if (euid == 0) {
                p = strdup("/var/lib/mcpvisor");
        } else if (xdg_state_home && xdg_state_home[0] == '/') {
                if (asprintf(&p, "%s/mcpvisor", xdg_state_home) < 0)
                        p = NULL;
        } else if (home && home[0] == '/') {
                if (asprintf(&p, "%s/.local/state/mcpvisor", home) < 0)
                        p = NULL;
        } else {
                errno = ENOENT;
        }
        return p;
}

char *path_state_directory(void) {
        return path_state_for(geteuid(), getenv("STATE_DIRECTORY"), getenv("XDG_STATE_HOME"), getenv("HOME"));
}
