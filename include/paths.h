/* Default locations, shared by the daemon and (later) mcpvisorctl. */
#pragma once

#define PATH_DEFAULT_CONFIG "/etc/mcpvisor/mcpvisor.json"

/* The socket paths the units use: /run/mcpvisor/ for root (the system manager),
 * $XDG_RUNTIME_DIR/mcpvisor/ for everyone else (the user manager).
 * name is "mcp.sock" or "control.sock". Returns a malloc'd path, or NULL with errno. */
char *path_default_socket(const char *name);
