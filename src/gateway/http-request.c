/* The checks of one request; see http-request.h. */
#include "http-request.h"

#include <string.h>
#include <strings.h>

#include "client-http.h"
#include "http-config.h"
#include "protocol.h"

const struct http_token *http_request_bearer(const struct http_config *h, const char *auth) {
        if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
                return NULL;
        auth += 7;
        while (*auth == ' ')
                auth++;
        return http_token_find(h, auth, strlen(auth));
}

bool http_request_is_json(const char *content_type) {
        return content_type && strncasecmp(content_type, "application/json", 16) == 0 &&
               (content_type[16] == '\0' || content_type[16] == ';' || content_type[16] == ' ');
}

enum http_admission http_request_admission(const struct http_config *h, const char *path, const char *origin,
                                           const char *authorization, bool unix_peer,
                                           const struct http_token **ret_token) {
        *ret_token = NULL;
        if (!path || strcmp(path, h->path ? h->path : HTTP_DEFAULT_PATH) != 0)
                return HTTP_ADMIT_NOT_ENDPOINT;
        /* Browsers send Origin; a page on another site must not reach a local daemon
         * through DNS rebinding. */
        if (origin && !http_origin_allowed(h, origin))
                return HTTP_ADMIT_ORIGIN_REFUSED;
        if (!unix_peer && !(*ret_token = http_request_bearer(h, authorization)))
                return HTTP_ADMIT_NO_TOKEN;
        return HTTP_ADMITTED;
}

static void refuse(struct http_verdict *v, int status, const char *reason, const char *text) {
        v->outcome = HTTP_REFUSE;
        v->status = status;
        v->reason = reason;
        v->text = text;
}

static void refuse_json(struct http_verdict *v, int status, const char *reason, const char *message) {
        refuse(v, status, reason, message);
        v->json = true;
}

/* Absent: the client speaks 2025-03-26, which knew no such header. */
static bool version_ok(const struct http_request *r, struct http_verdict *v) {
        if (!r->protocol_version || protocol_version_supported(r->protocol_version))
                return true;
        refuse_json(v, 400, "Bad Request", "Bad Request: unsupported MCP-Protocol-Version");
        return false;
}

/* GET and DELETE name a session; a POST names one, opens one with initialize, or is a
 * modern request, which needs none. The modern era has no GET stream and no session to
 * DELETE: 405 says so to its clients (the specification's answer). */
static void session_of(const struct http_request *r, struct http_verdict *v) {
        if (r->method != HTTP_POST && !r->session_id && protocol_modern_version(r->protocol_version)) {
                refuse(v, 405, "Method Not Allowed", "the " MCP_MODERN_VERSION " era has no stream or session: POST each request");
                v->allow = "POST";
                return;
        }
        if (r->method != HTTP_POST && !r->session_id) {
                refuse_json(v, 400, "Bad Request", "Bad Request: Mcp-Session-Id header is required");
                return;
        }
        if (r->session_id && !version_ok(r, v))
                return;
        v->session_key = r->session_id ? client_http_key_of(r->session_id) : 0;
}

void http_request_judge(const struct http_config *h, const struct http_request *r, struct http_verdict *v) {
        *v = (struct http_verdict){ .outcome = HTTP_PROCEED };
        if (r->path && strcmp(r->path, "/healthz") == 0 && r->method == HTTP_GET) {
                v->outcome = HTTP_HEALTHZ;
                return;
        }
        switch (http_request_admission(h, r->path, r->origin, r->authorization, r->unix_peer, &v->token)) {
        case HTTP_ADMIT_NOT_ENDPOINT:
                refuse(v, 404, "Not Found", "no such endpoint");
                return;
        case HTTP_ADMIT_ORIGIN_REFUSED:
                refuse(v, 403, "Forbidden", "this Origin is not allowed (http.allowedOrigins)");
                v->log = "Origin not allowed (http.allowedOrigins)";
                return;
        case HTTP_ADMIT_NO_TOKEN:
                refuse(v, 401, "Unauthorized", "a bearer token is required (Authorization: Bearer TOKEN)");
                v->log = r->authorization ? "wrong bearer token" : "no bearer token";
                v->authenticate = true;
                return;
        case HTTP_ADMITTED:
                break;
        }
        switch (r->method) {
        case HTTP_POST:
                if (!http_request_is_json(r->content_type)) {
                        refuse(v, 415, "Unsupported Media Type", "a message is POSTed as Content-Type: application/json");
                        return;
                }
                break;
        case HTTP_GET:
                if (r->accept && !strstr(r->accept, "text/event-stream") && !strstr(r->accept, "*/*")) {
                        refuse(v, 406, "Not Acceptable", "the stream is text/event-stream");
                        return;
                }
                break;
        case HTTP_DELETE:
                break;
        case HTTP_OTHER:
                refuse(v, 405, "Method Not Allowed", "the endpoint takes POST, GET and DELETE");
                v->allow = "GET, POST, DELETE";
                return;
        }
        session_of(r, v);
}
