/* MCP protocol versions this daemon speaks (the legacy, initialize-based era). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#define MCP_LATEST_VERSION "2025-11-25"

/* Newest first. NULL-terminated. */
extern const char *const mcp_supported_versions[];

bool protocol_version_supported(const char *version);

/* The version to answer an initialize with: the client's own if we support it,
 * else our latest. Returns a static string. */
const char *protocol_negotiate(const char *requested);

/* ["2025-11-25", ...], for error data. */
json_object *protocol_versions_json(void);
