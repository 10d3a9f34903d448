/* Method lookup; the handlers live in method-*.c. */
#include "methods.h"

#include <stdio.h>
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
        &method_subscriptions_listen,
        &control_status,
        &control_clients,
        &control_start,
        &control_stop,
        &control_restart,
        &control_reload,
        &control_access_query,
        &control_logs,
        &control_disconnect,
        &control_login,
        &control_login_finish,
        &control_logout,
        &control_client_metadata,
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

const struct method *const *methods_table(enum jsonrpc_kind kind, size_t *ret_n) {
        if (kind == JSONRPC_REQUEST) {
                *ret_n = ARRAY_SIZE(requests);
                return requests;
        }
        *ret_n = kind == JSONRPC_NOTIFICATION ? ARRAY_SIZE(notifications) : 0;
        return notifications;
}

/* A client of the initialize era on the MCP socket before its initialize: only what needs
 * no session is open to it. */
static bool before_session(enum listen_role role, enum method_era era, enum session_phase phase) {
        return role == LISTEN_MCP && era == METHOD_ERA_INITIALIZE && phase == SESSION_NEW;
}

enum method_action method_action_of(const struct method *method, enum listen_role role, enum method_era era,
                                    enum session_phase phase) {
        bool in_era = method && (method->eras & era);

        if (before_session(role, era, phase) && !(in_era && (method->flags & METHOD_BEFORE_INIT)))
                return METHOD_TOO_EARLY;
        if (in_era)
                return METHOD_HANDLE;
        if (method && !(method->flags & METHOD_PASSTHROUGH))
                return METHOD_NOT_FOUND;
        return role == LISTEN_MCP ? METHOD_PASS : METHOD_NOT_FOUND;
}

enum method_action methods_dispatch(enum listen_role role, enum method_era era, enum session_phase phase,
                                    enum jsonrpc_kind kind, const char *name, const struct method **ret) {
        *ret = kind == JSONRPC_REQUEST ? methods_find_request(role, name) : methods_find_notification(role, name);
        return method_action_of(*ret, role, era, phase);
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

const char *method_string_param(struct client *c, struct jsonrpc_msg *m, const char *key) {
        json_object *v;
        char message[128];

        if (!method_params_object(c, m, false))
                return NULL;
        if (!json_object_object_get_ex(m->params, key, &v) || !json_object_is_type(v, json_type_string)) {
                snprintf(message, sizeof message, "Invalid params: \"%s\" (a string) is required", key);
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message, NULL);
                return NULL;
        }
        return json_object_get_string(v);
}
