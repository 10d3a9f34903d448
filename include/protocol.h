/* MCP protocol versions this daemon speaks: the legacy era's (a session opened with
 * initialize) and the modern one's (each request names its version in its _meta). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#define MCP_LATEST_VERSION "2025-11-25"

/* The modern era's version (2026-07-28): no initialize, no session. */
#define MCP_MODERN_VERSION "2026-07-28"

/* The modern era's per-request _meta members (basic/index: "_meta"). */
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* The specification's own error codes (-32020 to -32099 are its to define). */
enum {
        MCP_ERROR_HEADER_MISMATCH = -32020,
        MCP_ERROR_MISSING_CAPABILITY = -32021,
        MCP_ERROR_UNSUPPORTED_VERSION = -32022,
};

/* The legacy era's, newest first. NULL-terminated. */
extern const char *const mcp_supported_versions[];
/* The modern era's, newest first. NULL-terminated. */
extern const char *const mcp_modern_versions[];

/* A legacy version (one initialize negotiates). */
bool protocol_version_supported(const char *version);
/* A modern version, as a request's _meta names it; the static string, or NULL. */
const char *protocol_modern_version(const char *version);
/* Either era's. */
bool protocol_any_version_supported(const char *version);

/* The version to answer an initialize with: the client's own if we support it,
 * else our latest. Returns a static string. */
const char *protocol_negotiate(const char *requested);

/* ["2025-11-25", ...], for error data. */
json_object *protocol_versions_json(void);
/* Both eras' versions, newest first: server/discover's supportedVersions and the
 * "supported" of an unsupported version's error. */
json_object *protocol_all_versions_json(void);
