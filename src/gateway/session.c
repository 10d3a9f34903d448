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
#include "request-meta.h"
#include "server-config.h"
#include "upcall.h"
#include "protocol.h"
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
        s->client_caps = client_caps_of(caps);
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

int session_begin_stateless(struct session *s, const char *protocol_version, json_object *info) {
        if (s->phase != SESSION_NEW)
                return -EALREADY;
        s->protocol_version = protocol_version;
        s->client_name = info_text(info, "name");
        s->client_version = info_text(info, "version");
        s->phase = SESSION_STATELESS;
        return 0;
}

bool session_stateless(const struct session *s) {
        return s->phase == SESSION_STATELESS;
}

unsigned session_request_caps(const struct session *s, json_object *params) {
        struct request_meta meta;
        unsigned caps;

        if (!session_stateless(s))
                return s->client_caps;
        caps = request_meta_read(params, &meta) == REQUEST_MODERN ? request_meta_caps(&meta) : 0;
        request_meta_done(&meta);
        return caps;
}

int session_request_log_level(const struct session *s, json_object *params) {
        struct request_meta meta;
        int level;

        if (!session_stateless(s))
                return s->log_level;
        level = request_meta_read(params, &meta) == REQUEST_MODERN ? meta.log_level : -1;
        request_meta_done(&meta);
        return level;
}

const char *session_era_name(const struct session *s) {
        switch (s->phase) {
        case SESSION_NEW:
                return NULL;
        case SESSION_INITIALIZING:
        case SESSION_OPERATING:
                return "legacy";
        case SESSION_STATELESS:
                return "modern";
        }
        return NULL;
}

/* The era m is served in, in *ret; false when m was answered instead (its _meta refused).
 * A session opened with initialize keeps its era whatever a request's _meta says (the
 * specification: initialize selects legacy semantics for the connection), and so does the
 * control socket, which has no session; before either, a request that names a modern
 * version in its _meta makes the connection a modern one, whose every request must. */
static bool era_of(struct client *c, struct jsonrpc_msg *m, enum method_era *ret) {
        enum session_phase phase = c->session.phase;
        struct request_meta meta;

        *ret = phase == SESSION_STATELESS ? METHOD_ERA_STATELESS : METHOD_ERA_INITIALIZE;
        if (c->role != LISTEN_MCP || m->kind != JSONRPC_REQUEST || (phase != SESSION_NEW && phase != SESSION_STATELESS))
                return true;
        switch (request_meta_read(m->params, &meta)) {
        case REQUEST_LEGACY:
                if (phase == SESSION_NEW)
                        return true;
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: _meta \"" META_PROTOCOL_VERSION "\" is required (this connection "
                                   "speaks " MCP_MODERN_VERSION ", with no initialize)",
                                   NULL);
                return false;
        case REQUEST_REFUSED:
                client_reply_error(c, m->id, meta.code, meta.message, meta.data);
                meta.data = NULL; /* taken by the error */
                return false;
        case REQUEST_MODERN:
                if (phase == SESSION_NEW ? !method_open_stateless(c, m, &meta) : !method_stateless_profile_kept(c, m))
                        return false;
                *ret = METHOD_ERA_STATELESS;
                return true;
        }
        return true;
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
        enum method_era era;
        char msg[256];

        if (!era_of(c, m, &era))
                return;
        switch (methods_dispatch(c->role, era, c->session.phase, m->kind, m->method, &method)) {
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
