/* A request's era and per-request fields; see request-meta.h. */
#include "request-meta.h"

#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "mcp-logging.h"
#include "protocol.h"
#include "server-config.h"

static json_object *meta_of(json_object *params) {
        json_object *meta;

        if (!json_object_is_type(params, json_type_object) || !json_object_object_get_ex(params, "_meta", &meta) ||
            !json_object_is_type(meta, json_type_object))
                return NULL;
        return meta;
}

bool request_meta_present(json_object *params) {
        json_object *meta = meta_of(params);

        return meta && json_object_object_get_ex(meta, META_PROTOCOL_VERSION, NULL);
}

static enum request_era refuse(struct request_meta *m, int code, json_object *data, const char *message) {
        m->code = code;
        snprintf(m->message, sizeof m->message, "%s", message);
        m->data = data;
        return REQUEST_REFUSED;
}

/* The specification's UnsupportedProtocolVersionError: what we speak, and what was asked. */
static enum request_era unsupported(struct request_meta *m, const char *requested) {
        json_object *data = json_object_new_object();

        json_object_object_add(data, "supported", protocol_all_versions_json());
        json_object_object_add(data, "requested", json_object_new_string(requested));
        char message[160];

        /* A legacy version is served too, but only in a session opened with initialize. */
        if (protocol_version_supported(requested))
                snprintf(message, sizeof message,
                         "Unsupported protocol version: %.40s is served after initialize; per-request _meta takes "
                         MCP_MODERN_VERSION, requested);
        else
                snprintf(message, sizeof message, "Unsupported protocol version: %.40s", requested);
        return refuse(m, MCP_ERROR_UNSUPPORTED_VERSION, data, message);
}

enum request_era request_meta_read(json_object *params, struct request_meta *ret) {
        json_object *meta = meta_of(params), *version, *level;

        *ret = (struct request_meta){ .log_level = -1 };
        if (!meta || !json_object_object_get_ex(meta, META_PROTOCOL_VERSION, &version))
                return REQUEST_LEGACY;
        if (!json_object_is_type(version, json_type_string))
                return refuse(ret, JSONRPC_INVALID_PARAMS, NULL,
                              "Invalid params: _meta \"" META_PROTOCOL_VERSION "\" must be a string");
        ret->version = protocol_modern_version(json_object_get_string(version));
        if (!ret->version)
                return unsupported(ret, json_object_get_string(version));
        if (!json_object_object_get_ex(meta, META_CLIENT_CAPABILITIES, &ret->capabilities) ||
            !json_object_is_type(ret->capabilities, json_type_object))
                return refuse(ret, JSONRPC_INVALID_PARAMS, NULL,
                              "Invalid params: _meta \"" META_CLIENT_CAPABILITIES "\" (an object) is required");
        if (json_object_object_get_ex(meta, META_CLIENT_INFO, &ret->info) && !json_object_is_type(ret->info, json_type_object))
                ret->info = NULL; /* for display only: a malformed one is not worth a refusal */
        if (json_object_object_get_ex(meta, META_LOG_LEVEL, &level) &&
            (ret->log_level = mcp_level_from_string(json_object_get_string(level))) < 0)
                return refuse(ret, JSONRPC_INVALID_PARAMS, NULL,
                              "Invalid params: _meta \"" META_LOG_LEVEL "\" must be a level (\"debug\" ... \"emergency\")");
        return REQUEST_MODERN;
}

unsigned client_caps_of(json_object *caps) {
        json_object *elicitation;
        unsigned bits = 0;

        for (int i = 0; caps && i < CLIENT_CAP_COUNT; i++)
                if (json_object_object_get_ex(caps, client_capability_names[i], NULL))
                        bits |= 1u << i;
        if (json_object_object_get_ex(caps, client_capability_names[CLIENT_CAP_ELICITATION], &elicitation) &&
            json_object_object_get_ex(elicitation, "url", NULL))
                bits |= CLIENT_CAP_URL_ELICITATION;
        return bits;
}

unsigned request_meta_caps(const struct request_meta *m) {
        return client_caps_of(m->capabilities);
}

void request_meta_done(struct request_meta *m) {
        json_object_put(m->data);
        m->data = NULL;
}
