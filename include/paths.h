/* Default locations, shared by the daemon and mcpvisorctl. */
#pragma once

#include <sys/types.h>

#define PATH_DEFAULT_CONFIG "/etc/mcpvisor/mcpvisor.json"

/* The configuration file read without --config: PATH_DEFAULT_CONFIG as root (the system
 * manager), $XDG_CONFIG_HOME/mcpvisor/mcpvisor.json (else ~/.config/...) for everyone
 * else (the user manager). The environment is passed in for tests. Malloc'd, or NULL with
 * errno (ENOENT: neither XDG_CONFIG_HOME nor HOME is an absolute path). */
char *path_config_for(uid_t euid, const char *xdg_config_home, const char *home);
/* path_config_for() with this process's euid and environment. */
char *path_default_config(void);
/* The system manager's runtime directory: the units' sockets live in its mcpvisor/. */
#define PATH_SYSTEM_RUNTIME_DIR "/run"

/* Which service manager's daemon a client means. */
enum path_scope {
        PATH_SCOPE_AUTO,   /* root: the system's; others: the user's if it is there, else the system's */
        PATH_SCOPE_SYSTEM, /* /run/mcpvisor/ */
        PATH_SCOPE_USER,   /* $XDG_RUNTIME_DIR/mcpvisor/ */
};

/* The socket paths the units use: /run/mcpvisor/ for root (the system manager),
 * $XDG_RUNTIME_DIR/mcpvisor/ for everyone else (the user manager).
 * name is "mcp.sock" or "control.sock". Returns a malloc'd path, or NULL with errno
 * (ENOENT: not root and no usable XDG_RUNTIME_DIR). */
char *path_default_socket(const char *name);

/* name inside runtime_dir/mcpvisor/; runtime_dir must be absolute (else NULL, errno ENOENT:
 * a relative XDG_RUNTIME_DIR is unusable, as the XDG spec says). Malloc'd, or NULL with errno. */
char *path_socket_in(const char *runtime_dir, const char *name);

/* The socket a client should connect to: the daemon's default for scope, where
 * PATH_SCOPE_AUTO as uid 0 means the system manager's, and otherwise the user manager's if
 * that socket exists, else the system manager's if that one exists (a member of the
 * daemon's group talking to the system service), else the user manager's again (so that
 * the error names the path the user most likely meant; without XDG_RUNTIME_DIR the system
 * manager's). The environment is passed in, so that the choice can be tested: euid,
 * xdg_runtime_dir (may be NULL), system_runtime_dir (PATH_SYSTEM_RUNTIME_DIR outside tests).
 * Malloc'd, or NULL with errno (ENOENT: PATH_SCOPE_USER and XDG_RUNTIME_DIR is unset or
 * relative). */
char *path_pick_socket(const char *name, enum path_scope scope, uid_t euid, const char *xdg_runtime_dir,
                       const char *system_runtime_dir);

/* path_pick_socket() with this process's euid, $XDG_RUNTIME_DIR and /run. */
char *path_client_socket(const char *name, enum path_scope scope);

/* The control socket of a daemon whose MCP socket is mcp_path but whose control socket was
 * not named: beside it, in the same directory, so that daemons run with --socket in
 * directories of their own never share one, and a client given the MCP socket finds the
 * control socket too. DIR/mcp.sock's is DIR/control.sock (the units' pair), DIR/NAME.sock's
 * DIR/NAME.control.sock, DIR/NAME's DIR/NAME.control.sock. Malloc'd, or NULL (ENOMEM). */
char *path_control_beside(const char *mcp_path);

/* The daemon's state directory, where it keeps what outlives it (the sign-in tokens):
 * $STATE_DIRECTORY (systemd's StateDirectory=; the first of a list), else /var/lib/mcpvisor
 * as root, else $XDG_STATE_HOME/mcpvisor (else ~/.local/state/mcpvisor). The environment is
 * passed in for tests. Malloc'd, or NULL with errno (ENOENT: none of them is absolute). */
char *path_state_for(uid_t euid, const char *state_directory, const char *xdg_state_home, const char *home);
/* path_state_for() with this process's euid and environment. */
char *path_state_directory(void);
