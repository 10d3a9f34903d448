/* Method lookup; the handlers live in method-*.c. */
#include "methods.h"

#include <string.h>

#include "client.h"
#include "jsonrpc.h"
#include "macro.h"

static const struct method *const requests[] = {
        &method_initialize,
        &method_ping,
        &method_discover,
        &method_tools_list,
        &method_prompts_list,
        &method_resources_list,
        &method_templates_list,
        &method_tools_call,
        &method_prompts_get,
        &method_resources_read,
        &method_completion_complete,
        &method_logging_set_level,
        &method_resources_subscribe,
        &method_resources_unsubscribe,
        &control_status,
        &control_clients,
        &control_start,
        &control_stop,
        &control_restart,
        &control_reload,
        &control_access_query,
        &control_logs,
};

static const struct method *const notifications[] = {
        &notification_initialized,
        &notification_cancelled,
        &notification_progress,
        &notification_roots_list_changed,
        &notification_mcpvisor_profile,
};

static unsigned role_flag(enum listen_role role) {
        return role == LISTEN_CONTROL ? METHOD_CONTROL : METHOD_MCP;
}

static const struct method *find(const struct method *const *table, size_t n, enum listen_role role,
                                 const char *name) {
        for (size_t i = 0; i < n; i++)
                if ((table[i]->flags & role_flag(role)) && strcmp(table[i]->name, name) == 0)
                        return table[i];
        return NULL;
}

const struct method *methods_find_request(enum listen_role role, const char *name) {
        return find(requests, ARRAY_SIZE(requests), role, name);
}

const struct method *methods_find_notification(enum listen_role role, const char *name) {
        return find(notifications, ARRAY_SIZE(notifications), role, name);
}

bool method_params_object(struct client *c, struct jsonrpc_msg *m, bool optional) {
        if (!m->params && optional)
                return true;
        if (json_object_is_type(m->params, json_type_object))
                return true;
        if (m->kind == JSONRPC_REQUEST)
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   m->params ? "Invalid params: expected an object" : "Invalid params: params are required",
                                   NULL);
        return false;
}
