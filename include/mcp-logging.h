/* MCP logging between clients and servers. The MCP levels are the syslog levels:
 *   - logging/setLevel sets a client's level (info until it does), which governs what that
 *     client receives; each server that declares logging is asked for the most verbose
 *     level some initialized client that may hear from it (client_sees_server()) gets,
 *     decided again once per loop iteration after clients came, went or changed level, a
 *     reload, or the server's new run became ready; a server no such client hears from
 *     any more goes back to info;
 *   - a server's notifications/message goes to the journal under the server's name at the
 *     matching priority, at most MCP_LOGGING_RATE_BURST an interval per server (what is
 *     dropped is told in one line, as for stderr: rate-limit.h), and to every client whose
 *     level admits it, with the server's name leading "logger". */
#pragma once

#include <stdbool.h>

struct client;
struct daemon;
struct server;
struct jsonrpc_msg;

#define MCP_LEVEL_COUNT 8

/* How many clients get each level: the most verbose one held, and the buckets that sort
 * the clients by level when the servers' levels are decided. */
struct mcp_levels {
        unsigned clients[MCP_LEVEL_COUNT];
};

void mcp_levels_add(struct mcp_levels *l, int level);
void mcp_levels_remove(struct mcp_levels *l, int level);
/* The most verbose level a client gets; -1 with none. */
int mcp_levels_most_verbose(const struct mcp_levels *l);

#define MCP_LOGGING_RATE_INTERVAL_USEC (10 * 1000000ull)
#define MCP_LOGGING_RATE_BURST 1000

/* A client that never set a level gets messages up to this one. */
#define MCP_LOGGING_DEFAULT_LEVEL 6 /* info */

/* "warning" -> 4; -1 if not an MCP level. */
int mcp_level_from_string(const char *level);
const char *mcp_level_to_string(int level);

/* A server's notifications/message. */
void mcp_logging_forward(struct daemon *d, struct server *s, struct jsonrpc_msg *m);
/* A server became ready: give it the level the clients want. */
void mcp_logging_server_ready(struct daemon *d, struct server *s);
/* Who hears from which server may have changed (a reload): levels to decide again. */
void mcp_logging_changed(struct daemon *d);
/* After each loop iteration: the servers' levels decided again if something changed. */
void mcp_logging_settle(struct daemon *d);
/* A client initialized or left (client_free() calls it for any client): the servers'
 * level may change. */
void mcp_logging_client_operating(struct client *c);
void mcp_logging_client_gone(struct client *c);
/* c asked for level (logging/setLevel, method-set-level.c): what it receives from now on;
 * the servers' levels are decided again. */
void mcp_logging_client_level(struct client *c, int level);
