/* MCP logging between clients and servers. The MCP levels are the syslog levels:
 *   - logging/setLevel sets a client's level (info until it does); each server that
 *     declares logging is set to the most verbose level any connected client gets, and
 *     clients are filtered one by one;
 *   - a server's notifications/message goes to the journal under the server's name at the
 *     matching priority, and to every client whose level admits it, with the server's name
 *     leading "logger". */
#pragma once

#include <stdbool.h>

struct client;
struct daemon;
struct server;
struct jsonrpc_msg;

#define MCP_LEVEL_COUNT 8

/* How many initialized clients get each level, so that the most verbose one is found
 * without walking the clients. */
struct mcp_levels {
        unsigned clients[MCP_LEVEL_COUNT];
};

void mcp_levels_add(struct mcp_levels *l, int level);
void mcp_levels_remove(struct mcp_levels *l, int level);
/* The most verbose level a client gets; -1 with none. */
int mcp_levels_most_verbose(const struct mcp_levels *l);

/* A client that never set a level gets messages up to this one. */
#define MCP_LOGGING_DEFAULT_LEVEL 6 /* info */

/* "warning" -> 4; -1 if not an MCP level. */
int mcp_level_from_string(const char *level);
const char *mcp_level_to_string(int level);

/* A server's notifications/message. */
void mcp_logging_forward(struct daemon *d, struct server *s, struct jsonrpc_msg *m);
/* A server became ready: give it the level the clients want. */
void mcp_logging_server_ready(struct daemon *d, struct server *s);
/* A client initialized or left (client_free() calls it for any client): the servers'
 * level may change. logging/setLevel is handled here. */
void mcp_logging_client_operating(struct client *c);
void mcp_logging_client_gone(struct client *c);
