/* MCP session lifecycle and dispatch; see session.h. */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "methods.h"
#include "server-config.h"
#include "upcall.h"
#include "utf8.h"

void session_init(struct session *s) {
        *s = (struct session){ .phase = SESSION_NEW, .log_level = -1 };
}

void session_done(struct session *s) {
        free(s->client_name);
        free(s->client_version);
        session_init(s);
}

bool session_operating(const struct session *s) {
        return s->phase == SESSION_OPERATING;
}

/* One of clientInfo's strings, made fit to show; NULL when not a string. */
static char *info_text(json_object *info, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(info, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return utf8_display(json_object_get_string(v), (size_t)json_object_get_string_len(v), SESSION_CLIENT_INFO_MAX);
}

int session_initialize(struct session *s, const char *protocol_version, json_object *caps, json_object *info) {
        if (s->phase != SESSION_NEW)
                return -EALREADY;
        s->protocol_version = protocol_version;
        s->client_caps = 0;
        for (int i = 0; i < CLIENT_CAP_COUNT; i++)
                if (json_object_object_get_ex(caps, client_capability_names[i], NULL))
                        s->client_caps |= 1u << i;
        s->client_name = info_text(info, "name");
        s->client_version = info_text(info, "version");
        s->phase = SESSION_INITIALIZING;
        return 0;
}

bool session_begin_operating(struct session *s) {
        if (s->phase != SESSION_INITIALIZING)
                return false;
        s->phase = SESSION_OPERATING;
        return true;
}

/* The era c speaks: every client opens a session with initialize today, and the control
 * socket keeps that era's rules without one. A stateless-era request is to be known by
 * the protocol version its _meta names. */
static enum method_era era_of(const struct client *c, const struct jsonrpc_msg *m) {
        return METHOD_ERA_INITIALIZE;
}

/* A request refused gets the error; a notification takes no answer, so it is only noted. */
static void refuse(struct client *c, const struct jsonrpc_msg *m, int code, const char *message, const char *why) {
        if (m->kind == JSONRPC_REQUEST)
                client_reply_error(c, m->id, code, message, NULL);
        else
                client_log(c, LOG_DEBUG, "ignoring notification %s %s", m->method, why);
}

/* A request or a notification, as the method table says (methods_dispatch()). */
static void dispatch(struct client *c, struct jsonrpc_msg *m) {
        bool request = m->kind == JSONRPC_REQUEST;
        const struct method *method;
        char msg[256];

        switch (methods_dispatch(c->role, era_of(c, m), c->session.phase, m->kind, m->method, &method)) {
        case METHOD_HANDLE:
                method->handle(c, m);
                return;
        case METHOD_PASS:
                if (request)
                        method_passthrough_request(c, m);
                else
                        method_passthrough_notification(c, m);
                return;
        case METHOD_TOO_EARLY:
                snprintf(msg, sizeof msg, "Invalid Request: %.160s before initialize; send initialize first", m->method);
                refuse(c, m, JSONRPC_INVALID_REQUEST, msg, "before initialize");
                return;
        case METHOD_NOT_FOUND:
                snprintf(msg, sizeof msg, "Method not found: %.200s", m->method);
                refuse(c, m, JSONRPC_METHOD_NOT_FOUND, msg, "(not served here)");
                return;
        }
}

void session_handle(struct client *c, struct jsonrpc_msg *m) {
        switch (m->kind) {
        case JSONRPC_REQUEST:
        case JSONRPC_NOTIFICATION:
                dispatch(c, m);
                break;
        case JSONRPC_RESPONSE:
                server_requests_answer(daemon_server_requests(c->daemon), c, m);
                break;
        case JSONRPC_INVALID:
                client_log(c, LOG_DEBUG, "invalid message: %s", m->error_message);
                /* A broken answer's id is ours, not the client's: under it, the error could
                 * pass for the answer to one of the client's own requests. An answer refused
                 * for its text has no m->id: the client is answered under null. */
                if (jsonrpc_is_broken_response(m) || (m->refused_text && jsonrpc_answer_id(m)))
                        server_requests_answer(daemon_server_requests(c->daemon), c, m);
                client_reply_error(c, jsonrpc_is_broken_response(m) ? NULL : m->id, m->error_code, m->error_message,
                                   NULL);
                break;
        }
}
