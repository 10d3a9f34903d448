/* MCP logging between clients and servers. The MCP levels are the syslog levels:
 *   - logging/setLevel sets a client's level (info until it does); each server that
 *     declares logging is set to the most verbose level any connected client gets, and
 *     clients are filtered one by one;
 *   - a server's notifications/message goes to the journal under the server's name at the
 *     matching priority, and to every client whose level admits it, with the server's name
 *     leading "logger". */
#pragma once

#include <stdbool.h>

struct daemon;
struct server;
struct jsonrpc_msg;

/* A client that never set a level gets messages up to this one. */
#define MCP_LOGGING_DEFAULT_LEVEL 6 /* info */

/* "warning" -> 4; -1 if not an MCP level. */
int mcp_level_from_string(const char *level);
const char *mcp_level_to_string(int level);

/* A server's notifications/message. */
void mcp_logging_forward(struct daemon *d, struct server *s, struct jsonrpc_msg *m);
/* A server became ready: give it the level the clients want. */
void mcp_logging_server_ready(struct daemon *d, struct server *s);
/* A client initialized, changed its level or left: the servers' level may change. */
void mcp_logging_clients_changed(struct daemon *d);
