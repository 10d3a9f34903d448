/* Well-known URLs and the checks of what a sign-in reads; see oauth-metadata.h. */
#include "oauth-metadata.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "remote-config.h"

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

void oauth_strv_free(char **v) {
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

bool oauth_url_acceptable(const char *url) {
        if (!url || strpbrk(url, " \t\r\n#"))
                return false;
        if (strncasecmp(url, "https://", 8) == 0)
                return url[8] != '\0' && url[8] != '/';
        return strncasecmp(url, "http://", 7) == 0 && remote_url_loopback(url);
}

/* Splits url into its origin ("https://host:port") and its path without a trailing
 * slash ("" for none); the query is left out. */
static int split_url(const char *url, char **ret_origin, char **ret_path) {
        const char *host = strstr(url, "://"), *path;
        size_t path_len;

        if (!host || !oauth_url_acceptable(url))
                return -EINVAL;
        host += 3;
        path = host + strcspn(host, "/?");
        path_len = strcspn(path, "?");
        while (path_len > 0 && path[path_len - 1] == '/')
                path_len--;
        *ret_origin = strndup(url, (size_t)(path - url));
        *ret_path = strndup(path, path_len);
        if (!*ret_origin || !*ret_path) {
                free(*ret_origin);
                free(*ret_path);
                return -ENOMEM;
        }
        return 0;
}

static int make_urls(const char *url, const char *const *wells, size_t n_wells, bool suffix_too, char ***ret) {
        _cleanup_free_ char *origin = NULL, *path = NULL;
        char **v = calloc(2 * n_wells + 1, sizeof *v);
        size_t k = 0;
        int r = split_url(url, &origin, &path);

        if (!v || r < 0) {
                free(v);
                return r < 0 ? r : -ENOMEM;
        }
        for (size_t i = 0; i < n_wells; i++) {
                /* the well-known part between the host and the path */
                if (*path && asprintf(&v[k++], "%s/.well-known/%s%s", origin, wells[i], path) < 0)
                        goto oom;
                /* the well-known part at the root, or (OpenID) after the path */
                if (asprintf(&v[k++], "%s%s/.well-known/%s", origin, suffix_too ? path : "", wells[i]) < 0)
                        goto oom;
        }
        *ret = v;
        return 0;
oom:
        v[k - 1] = NULL;
        oauth_strv_free(v);
        return -ENOMEM;
}

int oauth_resource_metadata_urls(const char *resource, char ***ret) {
        static const char *const wells[] = { "oauth-protected-resource" };

        return make_urls(resource, wells, 1, false, ret);
}

int oauth_server_metadata_urls(const char *issuer, char ***ret) {
        _cleanup_free_ char *origin = NULL, *path = NULL;
        char **v;
        int r = split_url(issuer, &origin, &path);

        if (r < 0)
                return r;
        v = calloc(4, sizeof *v);
        if (!v)
                return -ENOMEM;
        /* RFC 8414's place, then OpenID Connect's inserted and appended forms */
        if (asprintf(&v[0], "%s/.well-known/oauth-authorization-server%s", origin, path) < 0)
                v[0] = NULL;
        else if (asprintf(&v[1], "%s/.well-known/openid-configuration%s", origin, path) < 0)
                v[1] = NULL;
        else if (*path && asprintf(&v[2], "%s%s/.well-known/openid-configuration", origin, path) < 0)
                v[2] = NULL;
        if (!v[0] || !v[1]) {
                oauth_strv_free(v);
                return -ENOMEM;
        }
        *ret = v;
        return 0;
}

static const char *member(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static json_object *parse_object(const char *body) {
        json_object *o = json_tokener_parse(body);

        if (o && !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* Identifiers compared as RFC 8707 and RFC 8414 say, exactly; a trailing slash aside, as
 * servers and their metadata disagree on it in practice. */
static bool same_identifier(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);

        while (la > 0 && a[la - 1] == '/')
                la--;
        while (lb > 0 && b[lb - 1] == '/')
                lb--;
        return la == lb && strncmp(a, b, la) == 0;
}

static char *scopes_text(json_object *o) {
        json_object *v;
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (!json_object_object_get_ex(o, "scopes_supported", &v) || !json_object_is_type(v, json_type_array) ||
            json_object_array_length(v) == 0)
                return NULL;
        f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *s = json_object_array_get_idx(v, i);
                if (json_object_is_type(s, json_type_string))
                        fprintf(f, "%s%s", ftell(f) ? " " : "", json_object_get_string(s));
        }
        if (fclose(f) != 0)
                return NULL;
        return text;
}

/* named is url, or its origin, or a path url is under: a resource identifier that covers url. */
static bool covers(const char *named, const char *url) {
        const char *host = strstr(url, "://");
        size_t n = strlen(named), origin;

        while (n > 0 && named[n - 1] == '/')
                n--;
        if (!host)
                return false;
        origin = (size_t)(host + 3 - url) + strcspn(host + 3, "/?#");
        if (n < origin || strncasecmp(named, url, origin) != 0 || strncmp(named + origin, url + origin, n - origin) != 0)
                return false;
        return url[n] == '\0' || url[n] == '/' || url[n] == '?';
}

int oauth_parse_resource_metadata(const char *body, const char *resource, char **ret_issuer, char **ret_scopes,
                                  char **ret_resource, const char **why) {
        _cleanup_(json_object_putp) json_object *o = parse_object(body);
        json_object *servers, *first;
        const char *named;

        if (!o) {
                *why = "its protected resource metadata is not a JSON object";
                return -EBADMSG;
        }
        named = member(o, "resource");
        if (!named || strpbrk(named, "#") || !(same_identifier(named, resource) || covers(named, resource))) {
                *why = "its protected resource metadata is for another resource";
                return -EBADMSG;
        }
        if (!json_object_object_get_ex(o, "authorization_servers", &servers) ||
            !json_object_is_type(servers, json_type_array) || json_object_array_length(servers) == 0 ||
            !json_object_is_type(first = json_object_array_get_idx(servers, 0), json_type_string) ||
            !oauth_url_acceptable(json_object_get_string(first))) {
                *why = "its protected resource metadata names no usable authorization server (https, or http on loopback)";
                return -EBADMSG;
        }
        *ret_issuer = strdup(json_object_get_string(first));
        *ret_scopes = scopes_text(o);
        *ret_resource = strdup(named);
        return *ret_issuer && *ret_resource ? 0 : -ENOMEM;
}

static bool has_string(json_object *o, const char *key, const char *value) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *s = json_object_array_get_idx(v, i);
                if (json_object_is_type(s, json_type_string) && strcmp(json_object_get_string(s), value) == 0)
                        return true;
        }
        return false;
}

static char *endpoint(json_object *o, const char *key, bool *bad) {
        const char *v = member(o, key);

        if (!v)
                return NULL;
        if (!oauth_url_acceptable(v)) {
                *bad = true;
                return NULL;
        }
        return strdup(v);
}

int oauth_parse_server_metadata(const char *body, const char *issuer, struct oauth_server_meta *ret, const char **why) {
        _cleanup_(json_object_putp) json_object *o = parse_object(body);
        json_object *iss_flag;
        bool bad = false;
        const char *named;

        *ret = (struct oauth_server_meta){ 0 };
        if (!o) {
                *why = "its authorization server's metadata is not a JSON object";
                return -EBADMSG;
        }
        named = member(o, "issuer");
        if (!named || !same_identifier(named, issuer)) {
                *why = "its authorization server's metadata names another issuer";
                return -EBADMSG;
        }
        /* The MCP specification: a server that does not list S256 is not used. */
        if (!has_string(o, "code_challenge_methods_supported", "S256")) {
                *why = "its authorization server does not list PKCE S256 (code_challenge_methods_supported)";
                return -EBADMSG;
        }
        ret->issuer = strdup(named);
        ret->authorization_endpoint = endpoint(o, "authorization_endpoint", &bad);
        ret->token_endpoint = endpoint(o, "token_endpoint", &bad);
        ret->registration_endpoint = endpoint(o, "registration_endpoint", &bad);
        ret->revocation_endpoint = endpoint(o, "revocation_endpoint", &bad);
        ret->iss_parameter = json_object_object_get_ex(o, "authorization_response_iss_parameter_supported", &iss_flag) &&
                             json_object_get_boolean(iss_flag);
        ret->client_id_documents = json_object_object_get_ex(o, "client_id_metadata_document_supported", &iss_flag) &&
                                   json_object_get_boolean(iss_flag);
        if (json_object_object_get_ex(o, "token_endpoint_auth_methods_supported", &iss_flag)) {
                ret->auth_basic = has_string(o, "token_endpoint_auth_methods_supported", "client_secret_basic");
                ret->auth_post = has_string(o, "token_endpoint_auth_methods_supported", "client_secret_post");
        } else {
                ret->auth_basic = true; /* RFC 8414's default */
        }
        if (bad || !ret->issuer || !ret->authorization_endpoint || !ret->token_endpoint) {
                oauth_server_meta_done(ret);
                *why = "its authorization server's metadata lacks an endpoint, or has one neither https nor loopback http";
                return -EBADMSG;
        }
        return 0;
}

void oauth_server_meta_done(struct oauth_server_meta *m) {
        free(m->issuer);
        free(m->authorization_endpoint);
        free(m->token_endpoint);
        free(m->registration_endpoint);
        free(m->revocation_endpoint);
        *m = (struct oauth_server_meta){ 0 };
}

static bool token_text_valid(const char *t) {
        /* RFC 6750's b64token characters: nothing that could end a header line */
        return t && *t && strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=") == strlen(t);
}

int oauth_parse_token_answer(const char *body, int64_t now, struct oauth_grant *grant, const char **why) {
        _cleanup_(json_object_putp) json_object *o = parse_object(body);
        const char *access, *type, *refresh;
        json_object *expires;
        int64_t lifetime = 0;
        char *a, *rt = NULL;

        if (!o) {
                *why = "the token answer is not a JSON object";
                return -EBADMSG;
        }
        access = member(o, "access_token");
        type = member(o, "token_type");
        refresh = member(o, "refresh_token");
        if (!token_text_valid(access) || !type || strcasecmp(type, "Bearer") != 0) {
                *why = "the token answer has no Bearer access token";
                return -EBADMSG;
        }
        if (refresh && !*refresh)
                refresh = NULL;
        if (json_object_object_get_ex(o, "expires_in", &expires) &&
            (json_object_is_type(expires, json_type_int) || json_object_is_type(expires, json_type_double)))
                lifetime = json_object_get_int64(expires);
        if (lifetime < 0)
                lifetime = 0;
        a = strdup(access);
        if (!a || (refresh && !(rt = strdup(refresh)))) {
                free(a);
                return -ENOMEM;
        }
        if (grant->access_token)
                explicit_bzero(grant->access_token, strlen(grant->access_token));
        free(grant->access_token);
        grant->access_token = a;
        if (rt) {
                if (grant->refresh_token)
                        explicit_bzero(grant->refresh_token, strlen(grant->refresh_token));
                free(grant->refresh_token);
                grant->refresh_token = rt;
        }
        grant->lifetime = lifetime;
        grant->expires_at = lifetime ? now + lifetime : 0;
        return 0;
}

const char *oauth_error_code(const char *body, char *buf, size_t size) {
        _cleanup_(json_object_putp) json_object *o = parse_object(body);
        const char *code = o ? member(o, "error") : NULL;

        if (!code || !*code || strlen(code) >= size || strspn(code, "abcdefghijklmnopqrstuvwxyz_") != strlen(code))
                return NULL;
        snprintf(buf, size, "%s", code);
        return buf;
}

int oauth_parse_registration(const char *body, char **ret_id, char **ret_secret, char **ret_method, const char **why) {
        _cleanup_(json_object_putp) json_object *o = parse_object(body);
        const char *id = o ? member(o, "client_id") : NULL, *secret = o ? member(o, "client_secret") : NULL;
        const char *method = o ? member(o, "token_endpoint_auth_method") : NULL;

        if (!id || !*id) {
                *why = "the client registration's answer has no client_id";
                return -EBADMSG;
        }
        *ret_id = strdup(id);
        *ret_secret = secret && *secret ? strdup(secret) : NULL;
        *ret_method = method && (strcmp(method, "client_secret_basic") == 0 || strcmp(method, "client_secret_post") == 0)
                              ? strdup(method)
                              : NULL;
        return *ret_id ? 0 : -ENOMEM;
}

static void add_string(json_object *o, const char *key, const char *value) {
        if (value)
                json_object_object_add(o, key, json_object_new_string(value));
}

json_object *oauth_grant_to_json(const struct oauth_grant *g) {
        json_object *o = json_object_new_object();

        add_string(o, "access_token", g->access_token);
        add_string(o, "refresh_token", g->refresh_token);
        json_object_object_add(o, "expires_at", json_object_new_int64(g->expires_at));
        json_object_object_add(o, "lifetime", json_object_new_int64(g->lifetime));
        add_string(o, "token_endpoint", g->token_endpoint);
        add_string(o, "revocation_endpoint", g->revocation_endpoint);
        add_string(o, "issuer", g->issuer);
        add_string(o, "client_id", g->client_id);
        add_string(o, "client_secret", g->client_secret);
        add_string(o, "resource", g->resource);
        add_string(o, "scope", g->scope);
        add_string(o, "url", g->url);
        add_string(o, "auth_method", g->auth_method);
        return o;
}

static char *dup_member(json_object *o, const char *key) {
        const char *v = member(o, key);

        return v ? strdup(v) : NULL;
}

int oauth_grant_from_json(const char *text, struct oauth_grant *ret) {
        _cleanup_(json_object_putp) json_object *o = parse_object(text);
        json_object *v;

        *ret = (struct oauth_grant){ 0 };
        if (!o)
                return -EBADMSG;
        ret->access_token = dup_member(o, "access_token");
        ret->refresh_token = dup_member(o, "refresh_token");
        ret->expires_at = json_object_object_get_ex(o, "expires_at", &v) ? json_object_get_int64(v) : 0;
        ret->lifetime = json_object_object_get_ex(o, "lifetime", &v) ? json_object_get_int64(v) : 0;
        ret->token_endpoint = dup_member(o, "token_endpoint");
        ret->revocation_endpoint = dup_member(o, "revocation_endpoint");
        ret->issuer = dup_member(o, "issuer");
        ret->client_id = dup_member(o, "client_id");
        ret->client_secret = dup_member(o, "client_secret");
        ret->resource = dup_member(o, "resource");
        ret->scope = dup_member(o, "scope");
        ret->url = dup_member(o, "url");
        ret->auth_method = dup_member(o, "auth_method");
        if (!ret->url && ret->resource)
                ret->url = strdup(ret->resource);
        if (!token_text_valid(ret->access_token) || !ret->token_endpoint || !ret->client_id || !ret->resource) {
                oauth_grant_done(ret);
                return -EBADMSG;
        }
        return 0;
}

static void wipe_free(char *s) {
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
}

void oauth_grant_done(struct oauth_grant *g) {
        wipe_free(g->access_token);
        wipe_free(g->refresh_token);
        free(g->token_endpoint);
        free(g->revocation_endpoint);
        free(g->issuer);
        free(g->client_id);
        wipe_free(g->client_secret);
        free(g->resource);
        free(g->scope);
        free(g->url);
        free(g->auth_method);
        *g = (struct oauth_grant){ 0 };
}

/* One auth-param of a challenge at *p: its name and value (unquoted, escapes taken) into
 * the buffers; *p moved past it and its comma. false at the end or on a malformed one. */
static bool next_param(const char **p, char *name, size_t name_size, char *value, size_t value_size) {
        const char *s = *p + strspn(*p, " \t,");
        size_t n = strcspn(s, "= \t,"), v = 0;

        if (!*s || n == 0 || n >= name_size || s[n] != '=')
                return false;
        memcpy(name, s, n);
        name[n] = '\0';
        s += n + 1;
        if (*s == '"') {
                for (s++; *s && *s != '"'; s++) {
                        if (*s == '\\' && s[1])
                                s++;
                        if (v + 1 < value_size)
                                value[v++] = *s;
                }
                if (*s != '"')
                        return false;
                s++;
        } else {
                for (; *s && *s != ',' && *s != ' ' && *s != '\t'; s++)
                        if (v + 1 < value_size)
                                value[v++] = *s;
        }
        value[v] = '\0';
        *p = s;
        return true;
}

/* RFC 6749's scope-token characters, and the spaces between them (section 3.3). */
static bool scope_text_valid(const char *v) {
        for (; *v; v++)
                if (*v < 0x20 || *v > 0x7e || *v == '"' || *v == '\\')
                        return false;
        return true;
}

/* Bearer's param name (its last) into buf when its value is words of scope_text_valid()'s
 * characters that fit; "" otherwise. */
static void challenge_param(const char *value, const char *param, char *buf, size_t size) {
        const char *p = value + strspn(value, " \t");
        char name[64], v[1024];

        if (size)
                buf[0] = '\0';
        if (strncasecmp(p, "Bearer", 6) != 0)
                return;
        p += 6;
        while (next_param(&p, name, sizeof name, v, sizeof v))
                if (strcasecmp(name, param) == 0 && strlen(v) < size && scope_text_valid(v))
                        snprintf(buf, size, "%s", v);
}

void oauth_challenge_scope(const char *value, char *buf, size_t size) {
        challenge_param(value, "scope", buf, size);
}

void oauth_challenge_error(const char *value, char *buf, size_t size) {
        challenge_param(value, "error", buf, size);
}

/* Whether the word of length len is among text's space-separated words. */
static bool has_word(const char *text, const char *word, size_t len) {
        for (const char *p = text ? text : ""; *p;) {
                size_t n;

                p += strspn(p, " ");
                n = strcspn(p, " ");
                if (n == len && strncmp(p, word, len) == 0)
                        return true;
                p += n;
        }
        return false;
}

bool oauth_scope_covers(const char *have, const char *need) {
        for (const char *p = need ? need : ""; *p;) {
                size_t n;

                p += strspn(p, " ");
                n = strcspn(p, " ");
                if (n && !has_word(have, p, n))
                        return false;
                p += n;
        }
        return true;
}

char *oauth_scope_union(const char *have, const char *need) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        const char *const parts[] = { have ? have : "", need ? need : "" };

        if (!f)
                return NULL;
        for (size_t i = 0; i < 2; i++)
                for (const char *p = parts[i]; *p;) {
                        size_t n;

                        p += strspn(p, " ");
                        n = strcspn(p, " ");
                        /* each word once: what came before stays first */
                        fflush(f);
                        if (n && !has_word(text, p, n))
                                fprintf(f, "%s%.*s", ftell(f) ? " " : "", (int)n, p);
                        p += n;
                }
        if (fclose(f) != 0)
                return NULL;
        if (!*text) {
                free(text);
                return NULL;
        }
        return text;
}

bool oauth_client_bound_elsewhere(const char *client_id, const char *left_issuer, const char *left_client,
                                  const char *issuer) {
        return client_id && left_issuer && left_client && strcmp(client_id, left_client) == 0 &&
               !same_identifier(left_issuer, issuer);
}

int oauth_metadata_names_issuer(const char *body, const char *issuer) {
        _cleanup_(json_object_putp) json_object *o = parse_object(body);
        json_object *servers;

        if (!o || !json_object_object_get_ex(o, "authorization_servers", &servers) ||
            !json_object_is_type(servers, json_type_array) || json_object_array_length(servers) == 0)
                return -EBADMSG;
        for (size_t i = 0; i < json_object_array_length(servers); i++) {
                json_object *s = json_object_array_get_idx(servers, i);

                if (json_object_is_type(s, json_type_string) && same_identifier(json_object_get_string(s), issuer))
                        return 1;
        }
        return 0;
}

json_object *oauth_client_metadata(const char *client_id, const char *redirect_uri, const char *scope) {
        json_object *o = json_object_new_object(), *uris = json_object_new_array(), *grants = json_object_new_array(),
                    *types = json_object_new_array();

        if (client_id)
                json_object_object_add(o, "client_id", json_object_new_string(client_id));
        json_object_object_add(o, "client_name", json_object_new_string("mcpvisor"));
        json_object_array_add(uris, json_object_new_string(redirect_uri));
        json_object_object_add(o, "redirect_uris", uris);
        json_object_array_add(grants, json_object_new_string("authorization_code"));
        json_object_array_add(grants, json_object_new_string("refresh_token"));
        json_object_object_add(o, "grant_types", grants);
        json_object_array_add(types, json_object_new_string("code"));
        json_object_object_add(o, "response_types", types);
        json_object_object_add(o, "token_endpoint_auth_method", json_object_new_string("none"));
        json_object_object_add(o, "application_type", json_object_new_string("native"));
        if (scope)
                json_object_object_add(o, "scope", json_object_new_string(scope));
        return o;
}

bool oauth_bearer_challenge(const char *value, char *buf, size_t size) {
        const char *p = value + strspn(value, " \t");
        char name[64], v[1024];

        if (size)
                buf[0] = '\0';
        if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] && p[6] != ' ' && p[6] != '\t'))
                return false;
        p += 6;
        while (next_param(&p, name, sizeof name, v, sizeof v))
                if (strcasecmp(name, "resource_metadata") == 0 && oauth_url_acceptable(v) && strlen(v) < size)
                        snprintf(buf, size, "%s", v);
        return true;
}
