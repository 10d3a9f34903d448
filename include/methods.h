/* The table of methods a client may call, one file per method (method-*.c). */
#pragma once

#include <stdbool.h>

#include <json-c/json.h>

#include "catalog.h"
#include "listen.h"

struct client;
struct server;
struct jsonrpc_msg;

enum method_flags {
        METHOD_BEFORE_INIT = 1 << 0,   /* allowed before initialize */
        METHOD_MCP = 1 << 1,           /* served on the MCP socket */
        METHOD_CONTROL = 1 << 2,       /* served on the control socket */
};

struct method {
        const char *name;
        unsigned flags;
        /* Requests: must answer exactly once, now or later. Notifications: no answer. */
        void (*handle)(struct client *c, struct jsonrpc_msg *m);
};

const struct method *methods_find_request(enum listen_role role, const char *name);
const struct method *methods_find_notification(enum listen_role role, const char *name);

extern const struct method method_initialize;
extern const struct method method_ping;
extern const struct method method_discover;
extern const struct method method_tools_list;
extern const struct method method_prompts_list;
extern const struct method method_resources_list;
extern const struct method method_templates_list;
extern const struct method method_tools_call;
extern const struct method method_prompts_get;
extern const struct method method_resources_read;
extern const struct method method_completion_complete;
extern const struct method method_logging_set_level;
extern const struct method method_resources_subscribe;
extern const struct method method_resources_unsubscribe;
extern const struct method control_status;
extern const struct method control_clients;
extern const struct method control_start;
extern const struct method control_stop;
extern const struct method control_restart;
extern const struct method control_reload;
/* The answer to a control client's "reload" (reload.c): r and outcome (consumed, may be NULL)
 * as the reload left them, -ESHUTDOWN when the daemon is stopping. */
void control_reload_answer(struct client *c, json_object *id, int r, json_object *outcome);
extern const struct method control_access_query;
extern const struct method control_logs;
/* The error for a control command naming no configured server (control-server.c). */
void control_reply_unknown_server(struct client *c, struct jsonrpc_msg *m, const char *name);
/* Where the daemon's log goes, as the status answer says it (control-status.c). */
struct logger;
json_object *control_log_object(const struct logger *lg);
extern const struct method notification_initialized;
extern const struct method notification_cancelled;
extern const struct method notification_progress;
extern const struct method notification_roots_list_changed;
extern const struct method notification_mcpvisor_profile;

/* Params as an object, or an error answered to the client (and false). NULL params
 * become an empty object when optional. */
bool method_params_object(struct client *c, struct jsonrpc_msg *m, bool optional);
/* The string params[key] of request m (params an object), or NULL when the client was
 * answered that it is required. */
const char *method_string_param(struct client *c, struct jsonrpc_msg *m, const char *key);

/* Forwards request m to server s with params (consumed; NULL for none), or answers at once
 * why s cannot take it (method-forward.c). ask says what the request is about, for the
 * access decision every message to a server passes (client_access_pass()): a method that
 * names no tool, prompt or URI is ACCESS_ABOUT_SERVER, decided by the server's own rule. A
 * method reaches a server this way (requests) or through client_access_notify()
 * (notifications), never through child.h itself. */
struct access_ask;
void method_send_to(struct client *c, struct jsonrpc_msg *m, struct server *s, const struct access_ask *ask,
                    json_object *params);

/* Methods the daemon does not know (method-passthrough.c): they go to the server when
 * exactly one is configured, the only case where their route is clear, as its own rule
 * allows. */
void method_passthrough_request(struct client *c, struct jsonrpc_msg *m);
void method_passthrough_notification(struct client *c, struct jsonrpc_msg *m);

