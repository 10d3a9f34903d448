/* Who may use the control socket (control-access.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct principal;

/* The JSON-RPC error code a refused peer gets before the connection closes. */
#define CONTROL_PERMISSION_DENIED (-32001)

/* True for root, the daemon's user and members of control_group (may be NULL); else why
 * says so, for the peer. */
bool control_access_allowed(const char *control_group, const struct principal *peer, char *why, size_t size);
