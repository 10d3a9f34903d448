/* The table of methods a client may call, one file per method (method-*.c). */
#pragma once

#include <stdbool.h>

#include <json-c/json.h>

#include "jsonrpc.h"
#include "listen.h"
#include "session.h"

struct client;
struct daemon;
struct server;
struct jsonrpc_msg;

enum method_flags {
        METHOD_BEFORE_INIT = 1 << 0,   /* allowed before initialize: needs no initialized session */
        METHOD_MCP = 1 << 1,           /* served on the MCP socket */
        METHOD_CONTROL = 1 << 2,       /* served on the control socket */
        METHOD_PASSTHROUGH = 1 << 3,   /* outside its eras it goes as unknown methods go, unchanged to
                                        * a server (reach METHOD_REACH_SERVER); without it, it is refused
                                        * there: the daemon maps what it names or answers it itself */
};

/* The protocol eras a method exists in (a set of bits). A client of the initialize era
 * (2025-11-25 and earlier) opens a session with initialize; one of the stateless era
 * (2026-07-28) names its version in each request's _meta and has no session. */
enum method_era {
        METHOD_ERA_INITIALIZE = 1 << 0,
        METHOD_ERA_STATELESS = 1 << 1,
        METHOD_ERAS_ALL = METHOD_ERA_INITIALIZE | METHOD_ERA_STATELESS,
};

/* Which server, and so which instance of it once a server may run one instance per client
 * or per user, a method's message reaches. */
enum method_reach {
        METHOD_REACH_DAEMON,   /* none: the daemon answers from its own state */
        METHOD_REACH_SERVER,   /* a server as a whole, judged on its own access rule (as unknown methods go) */
        METHOD_REACH_ITEM,     /* the server of the tool, prompt or URI it names, in the caller's instance */
        METHOD_REACH_REQUEST,  /* the instance a request in flight went to, or came from (cancel, progress) */
        METHOD_REACH_HEARD,    /* every server instance the caller hears from (its log level) */
        _METHOD_REACH_MAX,
};

struct method {
        const char *name;
        unsigned flags;
        unsigned eras;             /* enum method_era bits */
        enum method_reach reach;
        /* Requests: must answer exactly once, now or later. Notifications: no answer. */
        void (*handle)(struct client *c, struct jsonrpc_msg *m);
};

/* A method of the MCP socket alone, which a client of the initialize era may call only once
 * its session is open, in the eras and reaching the server its entry says. */
#define MCP_METHOD(name_, eras_, reach_, handle_)                                                \
        {                                                                                        \
                .name = (name_), .flags = METHOD_MCP, .eras = (eras_), .reach = (reach_),        \
                .handle = (handle_),                                                             \
        }

/* A command of the control socket (control-*.c): served there alone, in every era and with
 * no session to open first, and answered by the daemon from its own state. */
#define CONTROL_METHOD(name_, handle_)                                                           \
        {                                                                                        \
                .name = (name_), .flags = METHOD_CONTROL | METHOD_BEFORE_INIT,                   \
                .eras = METHOD_ERAS_ALL, .reach = METHOD_REACH_DAEMON, .handle = (handle_),      \
        }

/* What the dispatcher (session.c) does with a message, decided from the table alone. */
enum method_action {
        METHOD_HANDLE,       /* the method's handle() */
        METHOD_PASS,         /* unknown to the daemon here: method_passthrough_*() */
        METHOD_TOO_EARLY,    /* needs an initialized session the client has not opened */
        METHOD_NOT_FOUND,    /* the daemon's own method outside its eras, or none on this socket */
};

/* The action for message name of kind (a request or a notification) from a client on role
 * speaking era, its session at phase, and the method found (NULL for none) in *ret:
 *   - a client of the initialize era on the MCP socket that has not sent initialize may
 *     use only the methods marked METHOD_BEFORE_INIT (the control socket has no session to
 *     open, a stateless-era client none at all);
 *   - a method of the table in the client's era is handled;
 *   - one outside its eras goes as an unknown one when marked METHOD_PASSTHROUGH, else is
 *     not found: a request gets -32601, a notification is ignored;
 *   - an unknown one passes through on the MCP socket (method-passthrough.c) and is not
 *     found on the control socket. */
enum method_action methods_dispatch(enum listen_role role, enum method_era era, enum session_phase phase,
                                    enum jsonrpc_kind kind, const char *name, const struct method **ret);
/* The same for method (NULL: not in the table), the rule methods_dispatch() applies. */
enum method_action method_action_of(const struct method *method, enum listen_role role, enum method_era era,
                                    enum session_phase phase);
/* The tables (requests, notifications), for checks of their coherence. */
const struct method *const *methods_table(enum jsonrpc_kind kind, size_t *ret_n);

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
extern const struct method method_subscriptions_listen;
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
extern const struct method control_disconnect;
extern const struct method control_login;
extern const struct method control_login_finish;
extern const struct method control_logout;
extern const struct method control_client_metadata;
/* A control connection ended: its sign-ins under way end with it (control-login.c). */
void control_login_client_gone(struct daemon *d, struct client *c);
/* server (uid's token: OAUTH_SHARED a shared one's) starts again after a sign-in or a
 * sign-out: a shared one restarts, a per-user one's instance of uid stops. */
void control_login_start_again(struct daemon *d, const char *server, uid_t uid, const char *detail);
/* The server a control command's "name" names (control-server.c), or NULL once the client
 * was told why there is none: no name, or no such server (with the names it could use). */
struct server *control_named_server(struct client *c, struct jsonrpc_msg *m);
/* Where the daemon's log goes, as the status answer says it (control-status.c). */
struct logger;
json_object *control_log_object(const struct logger *lg);
extern const struct method notification_initialized;
extern const struct method notification_cancelled;
extern const struct method notification_progress;
extern const struct method notification_roots_list_changed;
extern const struct method notification_mcpvisor_profile;

/* The daemon as both eras describe it (method-initialize.c): its serverInfo, its
 * capabilities (the same in both eras), and the instructions of the servers c sees (NULL:
 * none), under their names. */
json_object *method_server_info(void);
json_object *method_server_capabilities(void);
json_object *method_instructions(struct client *c);
/* The first request m of a modern-era connection (its _meta read into meta) opens it, in
 * the profile m's _meta "mcpvisor/profile" chooses or the one it was asked to start in;
 * false when c was answered why not. */
struct request_meta;
bool method_open_stateless(struct client *c, struct jsonrpc_msg *m, const struct request_meta *meta);
/* A later request m of a modern-era connection: true unless its _meta chooses another
 * profile than the connection's (the class of a client is one), when c was answered why. */
bool method_stateless_profile_kept(struct client *c, struct jsonrpc_msg *m);

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
 * (notifications), never through server-conn.h itself. */
struct access_ask;
void method_send_to(struct client *c, struct jsonrpc_msg *m, struct server *s, const struct access_ask *ask,
                    json_object *params);

/* Methods the daemon does not know (method-passthrough.c): they go to the server when
 * exactly one is configured, the only case where their route is clear, as its own rule
 * allows. */
void method_passthrough_request(struct client *c, struct jsonrpc_msg *m);
void method_passthrough_notification(struct client *c, struct jsonrpc_msg *m);

