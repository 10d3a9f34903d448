/* MCP protocol version negotiation; see protocol.h. */
#include "protocol.h"

#include <string.h>

const char *const mcp_supported_versions[] = {
        "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

const char *const mcp_modern_versions[] = {
        MCP_MODERN_VERSION, NULL,
};

bool protocol_version_supported(const char *version) {
        for (const char *const *v = mcp_supported_versions; version && *v; v++)
                if (strcmp(*v, version) == 0)
                        return true;
        return false;
}

const char *protocol_modern_version(const char *version) {
        for (const char *const *v = mcp_modern_versions; version && *v; v++)
                if (strcmp(*v, version) == 0)
                        return *v;
        return NULL;
}

bool protocol_any_version_supported(const char *version) {
        return protocol_version_supported(version) || protocol_modern_version(version);
}

const char *protocol_negotiate(const char *requested) {
        for (const char *const *v = mcp_supported_versions; requested && *v; v++)
                if (strcmp(*v, requested) == 0)
                        return *v;
        return MCP_LATEST_VERSION;
}

json_object *protocol_versions_json(void) {
        json_object *a = json_object_new_array();

        for (const char *const *v = mcp_supported_versions; *v; v++)
                json_object_array_add(a, json_object_new_string(*v));
        return a;
}

json_object *protocol_all_versions_json(void) {
        json_object *a = json_object_new_array();

        for (const char *const *v = mcp_modern_versions; *v; v++)
                json_object_array_add(a, json_object_new_string(*v));
        for (const char *const *v = mcp_supported_versions; *v; v++)
                json_object_array_add(a, json_object_new_string(*v));
        return a;
}
