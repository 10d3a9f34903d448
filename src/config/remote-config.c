/* The keys of a server reached by URL; see remote-config.h. */
#include "remote-config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "settings.h"
#include "text.h"

static const struct {
        const char *name;
        enum remote_type type;
} type_names[] = {
        { "stdio", REMOTE_STDIO },
        { "http", REMOTE_STREAMABLE_HTTP },
        /* as VS Code, Cline and others write it */
        { "streamable-http", REMOTE_STREAMABLE_HTTP },
        { "streamableHttp", REMOTE_STREAMABLE_HTTP },
        { "sse", REMOTE_SSE },
};

/* The daemon writes these itself: a configured one would contradict the protocol. */
static const char *const reserved_headers[] = { "Accept", "Content-Type", "Content-Length", "Host",
                                                "Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID",
                                                "Transfer-Encoding", "Connection" };

const char *const remote_auth_names[] = { "none", "oauth", "auto", NULL };

bool remote_signs_in(const struct remote_config *r) {
        if (!r->url || r->auth == REMOTE_AUTH_NONE)
                return false;
        for (size_t i = 0; r->auth == REMOTE_AUTH_AUTO && i < r->n_headers; i++)
                if (strcasecmp(r->headers[i].name, "Authorization") == 0)
                        return false;
        return true;
}

void remote_config_init(struct remote_config *r) {
        *r = (struct remote_config){
                .type = REMOTE_NONE,
                .connect_timeout = REMOTE_DEFAULT_CONNECT_TIMEOUT,
                .max_connections = REMOTE_DEFAULT_MAX_CONNECTIONS,
                .auth = REMOTE_AUTH_AUTO,
        };
}

static bool header_equal(const struct remote_header *a, const struct remote_header *b) {
        return text_equal(a->name, b->name) && text_equal(a->value, b->value) && text_equal(a->credential, b->credential) &&
               text_equal(a->format, b->format);
}

bool remote_config_equal(const struct remote_config *a, const struct remote_config *b) {
        if (a->n_headers != b->n_headers)
                return false;
        for (size_t i = 0; i < a->n_headers; i++)
                if (!header_equal(&a->headers[i], &b->headers[i]))
                        return false;
        return text_equal(a->url, b->url) && a->type == b->type && text_equal(a->proxy, b->proxy) &&
               text_equal(a->ca_file, b->ca_file) && a->insecure == b->insecure &&
               a->connect_timeout == b->connect_timeout && a->max_connections == b->max_connections &&
               a->auth == b->auth && text_strv_equal(a->scopes, b->scopes) && text_equal(a->client_id, b->client_id) &&
               text_equal(a->client_secret, b->client_secret) && text_equal(a->client_metadata_url, b->client_metadata_url);
}

int remote_parse_type(json_object *v, const char *path, void *dst, struct config_problems *p) {
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

        for (size_t i = 0; s && i < sizeof type_names / sizeof type_names[0]; i++)
                if (strcmp(s, type_names[i].name) == 0) {
                        *(int *)dst = type_names[i].type;
                        return 0;
                }
        problems_add(p, PROBLEM_ERROR, path, "expected \"stdio\", \"http\" (or \"streamable-http\", \"streamableHttp\") or \"sse\"");
        return -EINVAL;
}

/* RFC 9110's token. */
static bool header_name_valid(const char *name) {
        return *name && strspn(name, "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") ==
                                strlen(name);
}

/* A value goes on one header line: no line breaks (they would add headers of their own). */
static bool header_text_valid(const char *text) {
        return !strpbrk(text, "\r\n");
}

static bool header_reserved(const char *name) {
        for (size_t i = 0; i < sizeof reserved_headers / sizeof reserved_headers[0]; i++)
                if (strcasecmp(name, reserved_headers[i]) == 0)
                        return true;
        return false;
}

/* Exactly one "%s" and no other conversion: the credential's text goes there. */
static bool format_valid(const char *f) {
        const char *pct = strchr(f, '%');

        return pct && pct[1] == 's' && !strchr(pct + 2, '%');
}

static char *member_string(json_object *obj, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return strdup(json_object_get_string(v));
}

#define HEADER_VALUE_EXPECTED "expected a string or {\"credential\": \"NAME\", \"format\": \"Bearer %s\"} (format optional)"

/* {"credential": "id"} or {"credential": "id", "format": "... %s ..."}. */
static int parse_header_credential(json_object *v, const char *path, struct remote_header *h, struct config_problems *p) {
        json_object *cred, *format = NULL;
        size_t n = json_object_object_length(v);

        if (!json_object_object_get_ex(v, "credential", &cred) || !json_object_is_type(cred, json_type_string) ||
            json_object_get_string_len(cred) == 0 || strchr(json_object_get_string(cred), '/') ||
            (json_object_object_get_ex(v, "format", &format) && !json_object_is_type(format, json_type_string)) ||
            n != (format ? 2u : 1u)) {
                problems_add(p, PROBLEM_ERROR, path, "%s", HEADER_VALUE_EXPECTED);
                return -EINVAL;
        }
        if (format && (!format_valid(json_object_get_string(format)) || !header_text_valid(json_object_get_string(format)))) {
                problems_add(p, PROBLEM_ERROR, path, "format: expected one \"%%s\" (the credential's text), no other \"%%\", on one line");
                return -EINVAL;
        }
        h->credential = member_string(v, "credential");
        h->format = format ? member_string(v, "format") : NULL;
        return 0;
}

/* Item n of headers, a header's value (its name is checked and kept by settings_parse_list()). */
static int parse_header_value(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                              struct config_problems *p) {
        struct remote_header *h = (struct remote_header *)list + n;

        if (settings_string_cut(v, path, p))
                return -EINVAL;
        if (json_object_is_type(v, json_type_string)) {
                if (!header_text_valid(json_object_get_string(v))) {
                        problems_add(p, PROBLEM_ERROR, path, "a header value is one line: no CR or LF");
                        return -EINVAL;
                }
                h->value = strdup(json_object_get_string(v));
                return 0;
        }
        if (json_object_is_type(v, json_type_object))
                return parse_header_credential(v, path, h, p);
        problems_add(p, PROBLEM_ERROR, path, "%s", HEADER_VALUE_EXPECTED);
        return -EINVAL;
}

static const char *header_name_problem(const char *name) {
        if (!header_name_valid(name))
                return "not a valid HTTP header name";
        if (header_reserved(name))
                return "set by mcpvisor itself, as the MCP transport says";
        return NULL;
}

static void header_done(void *item) {
        struct remote_header *h = item;

        free(h->name);
        free(h->value);
        free(h->credential);
        free(h->format);
}

static const struct settings_list header_list = SETTINGS_LIST_BY_NAME(struct remote_config, headers, n_headers,
                                                                      struct remote_header, header_name_problem,
                                                                      parse_header_value, header_done,
                                                                      "expected an object of NAME: value");

int remote_parse_headers(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return settings_parse_list(&header_list, v, path, dst, NULL, p);
}

int remote_parse_client_secret(json_object *v, const char *path, void *dst, struct config_problems *p) {
        json_object *cred;

        if (!json_object_is_type(v, json_type_object) || json_object_object_length(v) != 1 ||
            !json_object_object_get_ex(v, "credential", &cred) || !json_object_is_type(cred, json_type_string) ||
            json_object_get_string_len(cred) == 0 || strchr(json_object_get_string(cred), '/')) {
                problems_add(p, PROBLEM_ERROR, path,
                             "expected {\"credential\": \"NAME\"}: a secret is never written in the configuration");
                return -EINVAL;
        }
        free(*(char **)dst);
        *(char **)dst = strdup(json_object_get_string(cred));
        return *(char **)dst ? 0 : -ENOMEM;
}

void remote_config_done(struct remote_config *r) {
        settings_list_done(&header_list, r);
        if (r->scopes)
                for (char **s = r->scopes; *s; s++)
                        free(*s);
        free(r->scopes);
        free(r->client_id);
        free(r->client_secret);
        free(r->client_metadata_url);
        free(r->url);
        free(r->shown_url);
        free(r->proxy);
        free(r->ca_file);
        remote_config_init(r);
}

char *remote_url_shown(const char *url) {
        size_t head = strcspn(url, "?#");
        char *text = NULL;

        if (asprintf(&text, "%.*s%s", (int)head, url, url[head] == '?' ? "?…" : url[head] ? "#…" : "") < 0)
                return NULL;
        return text;
}

/* The scheme's length ("http://": 7), or 0 when it is neither http nor https. */
static size_t scheme_length(const char *url) {
        if (strncasecmp(url, "http://", 7) == 0)
                return 7;
        if (strncasecmp(url, "https://", 8) == 0)
                return 8;
        return 0;
}

/* The host of an http(s) URL into buf, without user info, port or brackets; false if none. */
static bool url_host(const char *url, char *buf, size_t size) {
        const char *start = url + scheme_length(url), *end, *at;
        size_t len;

        if (start == url)
                return false;
        end = start + strcspn(start, "/?#");
        at = memchr(start, '@', (size_t)(end - start));
        if (at)
                start = at + 1;
        if (*start == '[') {
                const char *close = memchr(start, ']', (size_t)(end - start));

                if (!close)
                        return false;
                start++;
                end = close;
        } else {
                const char *colon = memchr(start, ':', (size_t)(end - start));

                if (colon)
                        end = colon;
        }
        len = (size_t)(end - start);
        if (len == 0 || len >= size)
                return false;
        memcpy(buf, start, len);
        buf[len] = '\0';
        return true;
}

bool remote_url_loopback(const char *url) {
        char host[256];
        struct in_addr a4;
        struct in6_addr a6;

        if (!url_host(url, host, sizeof host))
                return false;
        if (inet_pton(AF_INET, host, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) == 127;
        if (inet_pton(AF_INET6, host, &a6) == 1)
                return IN6_IS_ADDR_LOOPBACK(&a6);
        return strcasecmp(host, "localhost") == 0;
}

static size_t check_url(const struct remote_config *r, const char *path, struct config_problems *p) {
        char item[600], host[256];

        snprintf(item, sizeof item, "%s.url", path);
        if (!url_host(r->url, host, sizeof host) || strpbrk(r->url, " \t\r\n")) {
                problems_add(p, PROBLEM_ERROR, item, "expected an http:// or https:// URL with a host");
                return 1;
        }
        if (r->insecure && !remote_url_loopback(r->url)) {
                snprintf(item, sizeof item, "%s.insecure", path);
                problems_add(p, PROBLEM_ERROR, item,
                             "only for a loopback host (localhost, 127.0.0.1, [::1]): give the server's CA in \"caFile\" instead");
                return 1;
        }
        return 0;
}

/* A Client ID Metadata Document's URL, the client_id itself: https, a host, a path beyond
 * "/", no fragment (draft-ietf-oauth-client-id-metadata-document, section 3). */
static bool client_metadata_url_valid(const char *url) {
        char host[256];
        const char *path;

        if (strncasecmp(url, "https://", 8) != 0 || !url_host(url, host, sizeof host) || strpbrk(url, " \t\r\n#"))
                return false;
        path = url + 8 + strcspn(url + 8, "/?");
        return path[0] == '/' && path[1] != '\0' && path[1] != '?';
}

/* The sign-in keys go with "auth": "oauth"; its Authorization header is the daemon's. */
static size_t check_auth(const struct remote_config *r, const char *path, struct config_problems *p) {
        const char *key = r->auth == REMOTE_AUTH_OAUTH ? NULL
                          : r->scopes                  ? "scopes"
                          : r->client_id               ? "clientId"
                          : r->client_secret           ? "clientSecret"
                          : r->client_metadata_url     ? "clientMetadataUrl"
                                                       : NULL;
        char item[600];

        if (key) {
                snprintf(item, sizeof item, "%s.%s", path, key);
                problems_add(p, PROBLEM_ERROR, item, "only with \"auth\": \"oauth\"");
                return 1;
        }
        if (r->client_secret && !r->client_id) {
                snprintf(item, sizeof item, "%s.clientSecret", path);
                problems_add(p, PROBLEM_ERROR, item, "a secret goes with the \"clientId\" it is for: add \"clientId\"");
                return 1;
        }
        for (size_t i = 0; r->auth == REMOTE_AUTH_OAUTH && i < r->n_headers; i++)
                if (strcasecmp(r->headers[i].name, "Authorization") == 0) {
                        snprintf(item, sizeof item, "%s.headers.%s", path, r->headers[i].name);
                        problems_add(p, PROBLEM_ERROR, item,
                                     "with \"auth\": \"oauth\" the daemon sends the token it signed in for: remove this header");
                        return 1;
                }
        if (r->client_metadata_url && !client_metadata_url_valid(r->client_metadata_url)) {
                snprintf(item, sizeof item, "%s.clientMetadataUrl", path);
                problems_add(p, PROBLEM_ERROR, item,
                             "expected an https:// URL with a path and no fragment (where the client's metadata document is "
                             "published: it is the client_id)");
                return 1;
        }
        for (char **s = r->scopes; s && *s; s++)
                if (!**s || strpbrk(*s, " \t\r\n\"\\")) {
                        snprintf(item, sizeof item, "%s.scopes", path);
                        problems_add(p, PROBLEM_ERROR, item, "a scope is a word: no space, quote or backslash");
                        return 1;
                }
        return 0;
}

/* Keys that only a remote server has, given without "url". */
static size_t refuse_remote_keys(const struct remote_config *r, const char *path, struct config_problems *p) {
        const char *key = r->type == REMOTE_STREAMABLE_HTTP || r->type == REMOTE_SSE ? "type"
                          : r->n_headers ? "headers"
                          : r->proxy     ? "proxy"
                          : r->ca_file   ? "caFile"
                          : r->insecure  ? "insecure"
                          : r->auth != REMOTE_AUTH_AUTO ? "auth"
                          : r->scopes    ? "scopes"
                          : r->client_id ? "clientId"
                          : r->client_secret ? "clientSecret"
                          : r->client_metadata_url ? "clientMetadataUrl"
                                         : NULL;
        char item[600];

        if (!key)
                return 0;
        snprintf(item, sizeof item, "%s.%s", path, key);
        problems_add(p, PROBLEM_ERROR, item, "only for a server reached by URL: add \"url\", or remove this key");
        return 1;
}

size_t remote_config_check(const struct remote_config *r, const char *entry_path, bool has_command,
                           const char *process_key, struct config_problems *p) {
        char item[600];

        if (!r->url)
                return refuse_remote_keys(r, entry_path, p);
        if (has_command || process_key) {
                snprintf(item, sizeof item, "%s.%s", entry_path, has_command ? "command" : process_key);
                problems_add(p, PROBLEM_ERROR, item,
                             "a server reached by \"url\" runs no program: remove this key, or \"url\" to run it here");
                return 1;
        }
        if (r->type == REMOTE_STDIO) {
                snprintf(item, sizeof item, "%s.type", entry_path);
                problems_add(p, PROBLEM_ERROR, item, "\"stdio\" runs a \"command\": a server with \"url\" is \"http\" or \"sse\"");
                return 1;
        }
        if (check_url(r, entry_path, p) > 0)
                return 1;
        return check_auth(r, entry_path, p);
}
