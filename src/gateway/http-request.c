/* The checks of one request; see http-request.h. */
#include "http-request.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#include "client-http.h"
#include "http-config.h"
#include "http-oauth.h"
#include "protocol.h"

#define RESOURCE_METADATA_PATH "/.well-known/oauth-protected-resource"

const char *http_request_bearer_text(const char *auth) {
        if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
                return NULL;
        auth += 7;
        while (*auth == ' ')
                auth++;
        return auth;
}

const struct http_token *http_request_bearer(const struct http_config *h, const char *auth) {
        const char *token = http_request_bearer_text(auth);

        return token ? http_token_find(h, token, strlen(token)) : NULL;
}

bool http_request_is_resource_metadata(const struct http_config *h, const char *path) {
        size_t n = strlen(RESOURCE_METADATA_PATH);

        return path && strncmp(path, RESOURCE_METADATA_PATH, n) == 0 &&
               (path[n] == '\0' || strcmp(path + n, h->path ? h->path : HTTP_DEFAULT_PATH) == 0);
}

/* A bearer token that is none of the static ones, as a JWT of http.oauth's issuer. */
static enum http_admission jwt_admission(const struct http_config *h, struct http_oauth *oauth, const char *token,
                                         const struct http_token **ret_token, const char **ret_why) {
        if (!oauth || !h->oauth.issuer)
                return HTTP_ADMIT_NO_TOKEN;
        switch (http_oauth_check(oauth, h, token, strlen(token), (int64_t)time(NULL), ret_token, ret_why)) {
        case HTTP_OAUTH_ACCEPTED:
                return HTTP_ADMITTED;
        case HTTP_OAUTH_INVALID:
                return HTTP_ADMIT_TOKEN_INVALID;
        case HTTP_OAUTH_NO_USER:
                return HTTP_ADMIT_NO_USER;
        case HTTP_OAUTH_SCOPE:
                return HTTP_ADMIT_SCOPE;
        case HTTP_OAUTH_KEYS_PENDING:
                break;
        }
        return HTTP_ADMIT_KEYS_PENDING;
}

bool http_request_is_json(const char *content_type) {
        return content_type && strncasecmp(content_type, "application/json", 16) == 0 &&
               (content_type[16] == '\0' || content_type[16] == ';' || content_type[16] == ' ');
}

enum http_admission http_request_admission(const struct http_config *h, struct http_oauth *oauth, const char *path,
                                           const char *origin, const char *authorization, bool unix_peer,
                                           const struct http_token **ret_token, const char **ret_why) {
        const char *token;

        *ret_token = NULL;
        *ret_why = NULL;
        if (!path || strcmp(path, h->path ? h->path : HTTP_DEFAULT_PATH) != 0)
                return HTTP_ADMIT_NOT_ENDPOINT;
        /* Browsers send Origin; a page on another site must not reach a local daemon
         * through DNS rebinding. */
        if (origin && !http_origin_allowed(h, origin))
                return HTTP_ADMIT_ORIGIN_REFUSED;
        if (unix_peer)
                return HTTP_ADMITTED;
        token = http_request_bearer_text(authorization);
        if (!token)
                return HTTP_ADMIT_NO_TOKEN;
        if ((*ret_token = http_token_find(h, token, strlen(token))))
                return HTTP_ADMITTED;
        return jwt_admission(h, oauth, token, ret_token, ret_why);
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

/* A bearer token presented and refused: 401, and the client told that this token is
 * the trouble (RFC 6750 §3.1). */
static void refuse_token(struct http_verdict *v, const char *why) {
        refuse(v, 401, "Unauthorized", why ? why : "invalid bearer token");
        v->log = why ? why : "invalid bearer token";
        v->authenticate = true;
        v->bearer_error = "invalid_token";
}

void http_request_judge(const struct http_config *h, struct http_oauth *oauth, const struct http_request *r,
                        struct http_verdict *v) {
        const char *why;

        *v = (struct http_verdict){ .outcome = HTTP_PROCEED };
        if (r->path && strcmp(r->path, "/healthz") == 0 && r->method == HTTP_GET) {
                v->outcome = HTTP_HEALTHZ;
                return;
        }
        if (h->oauth.issuer && r->method == HTTP_GET && http_request_is_resource_metadata(h, r->path)) {
                v->outcome = HTTP_RESOURCE_METADATA;
                return;
        }
        switch (http_request_admission(h, oauth, r->path, r->origin, r->authorization, r->unix_peer, &v->token, &why)) {
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
                if (h->oauth.issuer && http_request_bearer_text(r->authorization))
                        v->bearer_error = "invalid_token";
                return;
        case HTTP_ADMIT_TOKEN_INVALID:
                refuse_token(v, why);
                return;
        case HTTP_ADMIT_NO_USER:
                refuse(v, 403, "Forbidden", why);
                v->log = why;
                return;
        case HTTP_ADMIT_SCOPE:
                refuse(v, 403, "Forbidden", why);
                v->log = why;
                v->authenticate = true;
                v->bearer_error = "insufficient_scope";
                return;
        case HTTP_ADMIT_KEYS_PENDING:
                refuse(v, 503, "Service Unavailable", why ? why : "the identity provider's keys are being fetched; retry shortly");
                v->log = why;
                v->retry = true;
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
