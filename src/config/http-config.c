/* The "http" setting; see http-config.h. */
#include "http-config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "access.h"
#include "config.h"
#include "credential.h"
#include "jwt-check.h"
#include "macro.h"
#include "principal.h"
#include "settings.h"

/* A token shorter than this is guessable over the network: refused. */
#define HTTP_TOKEN_MIN 16

void http_address_done(struct http_address *a) {
        free(a->host);
        free(a->path);
        *a = (struct http_address){ 0 };
}

static int parse_port(const char *s, unsigned *ret) {
        char *end;
        unsigned long n;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        n = strtoul(s, &end, 10);
        if (errno || *end || n == 0 || n > 65535)
                return -EINVAL;
        *ret = (unsigned)n;
        return 0;
}

static int parse_unix(const char *path, struct http_address *ret, const char **why) {
        if (path[0] != '/') {
                *why = "expected an absolute path after unix:";
                return -EINVAL;
        }
        if (strlen(path) >= 108) {
                *why = "the Unix socket's path is longer than 107 bytes";
                return -EINVAL;
        }
        *ret = (struct http_address){ .path = strdup(path) };
        return ret->path ? 0 : -ENOMEM;
}

int http_address_parse(const char *text, struct http_address *ret, const char **why) {
        unsigned char buf[sizeof(struct in6_addr)];
        _cleanup_free_ char *host = NULL;
        const char *colon;
        bool v6 = text[0] == '[';

        *ret = (struct http_address){ 0 };
        if (strncmp(text, "unix:", 5) == 0)
                return parse_unix(text + 5, ret, why);
        colon = v6 ? strstr(text, "]:") : strrchr(text, ':');
        *why = "expected ADDRESS:PORT with a literal IPv4 address, [IPv6]:PORT, or unix:/PATH";
        if (!colon)
                return -EINVAL;
        host = v6 ? strndup(text + 1, (size_t)(colon - text - 1)) : strndup(text, (size_t)(colon - text));
        if (!host)
                return -ENOMEM;
        if (inet_pton(v6 ? AF_INET6 : AF_INET, host, buf) != 1)
                return -EINVAL;
        if (parse_port(colon + (v6 ? 2 : 1), &ret->port) < 0) {
                *why = "expected a port from 1 to 65535";
                return -EINVAL;
        }
        ret->host = TAKE_PTR(host);
        return 0;
}

static int parse_listen_item(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                             struct config_problems *p) {
        const char *why = "expected a string";

        if (!json_object_is_type(v, json_type_string) || settings_string_cut(v, path, p) ||
            http_address_parse(json_object_get_string(v), (struct http_address *)list + n, &why) < 0) {
                problems_add(p, PROBLEM_ERROR, path, "%s", why);
                return -EINVAL;
        }
        return 0;
}

static const struct settings_list listen_list = SETTINGS_LIST(struct http_config, listen, n_listen, parse_listen_item, NULL,
        false, "expected an array of addresses, e.g. [\"127.0.0.1:8765\"]");

static int parse_listen(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return settings_parse_list(&listen_list, v, path, dst, NULL, p);
}

static int parse_endpoint(json_object *v, const char *path, void *dst, struct config_problems *p) {
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

        if (!s || s[0] != '/' || strcspn(s, "?# \t\r\n") != strlen(s) || strcmp(s, "/healthz") == 0) {
                problems_add(p, PROBLEM_ERROR, path, "expected a path starting with / (no query, no spaces, not /healthz)");
                return -EINVAL;
        }
        free(*(char **)dst);
        *(char **)dst = strdup(s);
        return *(char **)dst ? 0 : -ENOMEM;
}

/* {"credential": ID}: the secret is read now, from the daemon's credentials, unless
 * credentials are not read (--check-config): then *named says the token names one. */
static int parse_secret(json_object *v, const char *path, enum http_credentials credentials, struct http_token *t,
                        bool *named, struct config_problems *p) {
        const char *dir = getenv("CREDENTIALS_DIRECTORY");
        json_object *id;
        int r;

        if (!json_object_is_type(v, json_type_object) || !json_object_object_get_ex(v, "credential", &id) ||
            json_object_object_length(v) != 1 || !json_object_is_type(id, json_type_string) ||
            strchr(json_object_get_string(id), '/') || !*json_object_get_string(id)) {
                problems_add(p, PROBLEM_ERROR, path, "expected {\"credential\": ID}, ID a credential of the daemon's unit");
                return -EINVAL;
        }
        *named = true;
        if (credentials == HTTP_CREDENTIALS_UNREAD)
                return 0;
        if (!dir) {
                problems_add(p, PROBLEM_ERROR, path, "no $CREDENTIALS_DIRECTORY to read credential \"%s\" from (LoadCredential= in the daemon's unit)",
                             json_object_get_string(id));
                return -EINVAL;
        }
        r = credential_read(dir, json_object_get_string(id), &t->secret);
        if (r < 0) {
                problems_add(p, PROBLEM_ERROR, path, "cannot read credential \"%s\": %s", json_object_get_string(id),
                             strerror(-r));
                return -EINVAL;
        }
        t->secret_len = strlen(t->secret);
        if (t->secret_len < HTTP_TOKEN_MIN) {
                problems_add(p, PROBLEM_ERROR, path, "credential \"%s\" holds %zu bytes; a token needs at least %d",
                             json_object_get_string(id), t->secret_len, HTTP_TOKEN_MIN);
                return -EINVAL;
        }
        return 0;
}

static int parse_user(json_object *v, const char *path, struct http_token *t, struct config_problems *p) {
        struct passwd pw, *found = NULL;
        char buf[4096];
        unsigned uid;

        if (access_parse_id(v, path, false, &uid, p) < 0)
                return -EINVAL;
        t->uid = uid;
        t->user = strdup(json_object_get_string(v));
        if (!t->user)
                return -ENOMEM;
        /* Its primary group, as a socket peer of that user would have it. */
        if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) {
                t->groups = malloc(sizeof *t->groups);
                if (!t->groups)
                        return -ENOMEM;
                t->groups[t->n_groups++] = pw.pw_gid;
        }
        return 0;
}

static int parse_token_groups(json_object *v, const char *path, struct http_token *t, struct config_problems *p) {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
        gid_t *groups;
        int r = 0;

        if (!json_object_is_type(v, json_type_array)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an array of group names or gids");
                return -EINVAL;
        }
        groups = realloc(t->groups, (t->n_groups + n + 1) * sizeof *groups);
        if (!groups)
                return -ENOMEM;
        t->groups = groups;
        for (size_t i = 0; i < n; i++) {
                char item_path[600];
                unsigned gid;

                snprintf(item_path, sizeof item_path, "%s[%zu]", path, i);
                if (access_parse_id(json_object_array_get_idx(v, i), item_path, true, &gid, p) < 0) {
                        r = -EINVAL;
                        continue;
                }
                t->groups[t->n_groups++] = gid;
        }
        return r;
}

struct tokens_parse {
        const char *path;                 /* the array's */
        enum http_credentials credentials;
};

static void token_done(void *item) {
        struct http_token *t = item;

        if (t->secret)
                explicit_bzero(t->secret, t->secret_len);
        free(t->secret);
        free(t->user);
        free(t->groups);
        free(t->profile);
}

static int parse_token(json_object *v, const char *path, enum http_credentials credentials, struct http_token *t,
                       struct config_problems *p) {
        char key_path[512];
        bool named = false;
        int r = 0;

        if (!json_object_is_type(v, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, path, "expected {\"token\": {\"credential\": ID}, \"user\": NAME, ...}");
                return -EINVAL;
        }
        json_object_object_foreach(v, key, val) {
                if (snprintf(key_path, sizeof key_path, "%s.%s", path, key) >= (int)sizeof key_path)
                        key_path[0] = '\0'; /* a path nobody writes: the problem is still told */
                if (strcmp(key, "token") == 0)
                        r |= parse_secret(val, key_path, credentials, t, &named, p);
                else if (strcmp(key, "user") == 0)
                        r |= parse_user(val, key_path, t, p);
                else if (strcmp(key, "groups") == 0)
                        r |= parse_token_groups(val, key_path, t, p);
                else if (strcmp(key, "profile") == 0 && json_object_is_type(val, json_type_string))
                        r |= (t->profile = strdup(json_object_get_string(val))) ? 0 : -ENOMEM;
                else {
                        problems_add(p, PROBLEM_ERROR, key_path, strcmp(key, "profile") == 0 ? "expected a profile's name" :
                                     "unknown key (a token has token, user, groups and profile)");
                        r = -EINVAL;
                }
        }
        if (r == 0 && (!named || !t->user)) {
                problems_add(p, PROBLEM_ERROR, path, "a token needs \"token\" and \"user\"");
                r = -EINVAL;
        }
        return r ? -EINVAL : 0;
}

/* Item n of the list "tokens": a token names one principal, so its secret must be none of
 * the n kept before it (which differ from each other: one matches at most). Unread secrets
 * cannot be compared. */
static int parse_token_item(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                            struct config_problems *p) {
        const struct tokens_parse *a = arg;
        struct http_token *tokens = list;

        if (parse_token(v, path, a->credentials, &tokens[n], p) < 0)
                return -EINVAL;
        for (size_t j = 0; j < n && tokens[n].secret; j++)
                if (http_token_find(&(struct http_config){ .tokens = &tokens[j], .n_tokens = 1 }, tokens[n].secret,
                                    tokens[n].secret_len)) {
                        problems_add(p, PROBLEM_ERROR, path, "the same token as %s[%zu]: a token names one principal",
                                     a->path, j);
                        return -EINVAL;
                }
        return 0;
}

static const struct settings_list token_list = SETTINGS_LIST(struct http_config, tokens, n_tokens, parse_token_item,
        token_done, false, "expected an array of tokens");

/* The array's path goes along, for the problem that names an earlier token. */
static int parse_tokens(json_object *v, const char *path, void *dst, struct config_problems *p) {
        struct tokens_parse a = { .path = path, .credentials = ((struct http_config *)dst)->credentials };

        return settings_parse_list(&token_list, v, path, dst, &a, p);
}

/* ---- "oauth" ---- */

static void oauth_map_done(void *item) {
        struct http_oauth_map *m = item;

        free(m->name);
        free(m->to);
}

static int parse_map_item(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                          struct config_problems *p) {
        struct http_oauth_map *m = (struct http_oauth_map *)list + n;

        if (!json_object_is_type(v, json_type_string) || !*json_object_get_string(v)) {
                problems_add(p, PROBLEM_ERROR, path, "%s", (const char *)arg);
                return -EINVAL;
        }
        m->to = strdup(json_object_get_string(v));
        return m->to ? 0 : -ENOMEM;
}

static const struct settings_list users_list = SETTINGS_LIST_BY_NAME(struct http_oauth_config, users, n_users,
        struct http_oauth_map, NULL, parse_map_item, oauth_map_done, "expected an object of CLAIM-VALUE: HOST-USER");
static const struct settings_list scopes_list = SETTINGS_LIST_BY_NAME(struct http_oauth_config, scopes, n_scopes,
        struct http_oauth_map, NULL, parse_map_item, oauth_map_done, "expected an object of SCOPE: PROFILE");

static int parse_users(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return settings_parse_list(&users_list, v, path, dst, "expected a host user's name", p);
}

static int parse_scopes(json_object *v, const char *path, void *dst, struct config_problems *p) {
        return settings_parse_list(&scopes_list, v, path, dst, "expected a profile's name", p);
}

static int parse_issuer(json_object *v, const char *path, void *dst, struct config_problems *p) {
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

        if (!s || (strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0) || strcspn(s, "?# \t\r\n") != strlen(s)) {
                problems_add(p, PROBLEM_ERROR, path, "expected the issuer's URL, http(s)://HOST[/PATH], as its tokens' iss says it");
                return -EINVAL;
        }
        free(*(char **)dst);
        *(char **)dst = strdup(s);
        return *(char **)dst ? 0 : -ENOMEM;
}

/* A string or an array of strings. */
static int parse_audience(json_object *v, const char *path, void *dst, struct config_problems *p) {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 1;
        char **list;

        if (!json_object_is_type(v, json_type_string) && (!json_object_is_type(v, json_type_array) || n == 0)) {
                problems_add(p, PROBLEM_ERROR, path, "expected a string or an array of strings: the aud a token must name");
                return -EINVAL;
        }
        list = calloc(n + 1, sizeof *list);
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *one = json_object_is_type(v, json_type_array) ? json_object_array_get_idx(v, i) : v;

                if (!json_object_is_type(one, json_type_string) || !*json_object_get_string(one)) {
                        strv_free(list);
                        problems_add(p, PROBLEM_ERROR, path, "expected a string or an array of strings: the aud a token must name");
                        return -EINVAL;
                }
                if (!(list[i] = strdup(json_object_get_string(one)))) {
                        strv_free(list);
                        return -ENOMEM;
                }
        }
        strv_free(*(char ***)dst);
        *(char ***)dst = list;
        return 0;
}

/* Names of enum jwt_alg: HS* and none are refused by name, with why. */
static int parse_algorithms(json_object *v, const char *path, void *dst, struct config_problems *p) {
        struct http_oauth_config *o = dst;
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;

        if (n == 0) {
                problems_add(p, PROBLEM_ERROR, path, "expected an array of algorithms, e.g. [\"RS256\", \"ES256\"]");
                return -EINVAL;
        }
        o->algs = 0;
        for (size_t i = 0; i < n; i++) {
                json_object *one = json_object_array_get_idx(v, i);
                const char *name = json_object_is_type(one, json_type_string) ? json_object_get_string(one) : "";
                unsigned alg = jwt_alg_of_name(name);

                if (!alg) {
                        problems_add(p, PROBLEM_ERROR, path, strncmp(name, "HS", 2) == 0 || strcmp(name, "none") == 0
                                     ? "\"%s\" is not accepted: tokens are verified with the issuer's public keys only"
                                     : "unknown algorithm \"%s\" (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512)", name);
                        return -EINVAL;
                }
                o->algs |= alg;
        }
        return 0;
}

static int parse_required_scopes(json_object *v, const char *path, void *dst, struct config_problems *p) {
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;

        for (size_t i = 0; i < n; i++) {
                json_object *one = json_object_array_get_idx(v, i);

                if (!json_object_is_type(one, json_type_string) || !*json_object_get_string(one) ||
                    strchr(json_object_get_string(one), ' ') || strchr(json_object_get_string(one), '"')) {
                        problems_add(p, PROBLEM_ERROR, path, "expected an array of scope names");
                        return -EINVAL;
                }
        }
        if (!json_object_is_type(v, json_type_array)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an array of scope names");
                return -EINVAL;
        }
        strv_free(*(char ***)dst);
        *(char ***)dst = calloc(n + 1, sizeof(char *));
        if (!*(char ***)dst)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!((*(char ***)dst)[i] = strdup(json_object_get_string(json_object_array_get_idx(v, i)))))
                        return -ENOMEM;
        return 0;
}

#define OAUTH_FIELD(key, type, field, lo, hi, parser) { key, type, offsetof(struct http_oauth_config, field), lo, hi, NULL, parser, NULL }
#define OAUTH_WHOLE(key, parser) { key, SETTING_CUSTOM, 0, 0, 0, NULL, parser, NULL }

static const struct setting oauth_settings[] = {
        OAUTH_FIELD("issuer", SETTING_CUSTOM, issuer, 0, 0, parse_issuer),
        OAUTH_FIELD("audience", SETTING_CUSTOM, audiences, 0, 0, parse_audience),
        OAUTH_FIELD("userClaim", SETTING_STRING, user_claim, 0, 0, NULL),
        OAUTH_FIELD("groupsClaim", SETTING_STRING, groups_claim, 0, 0, NULL),
        OAUTH_WHOLE("algorithms", parse_algorithms),
        OAUTH_FIELD("clockSkew", SETTING_SECONDS, clock_skew, 0, 600, NULL),
        OAUTH_FIELD("keysRefreshInterval", SETTING_SECONDS, keys_refresh, 1, 3600, NULL),
        OAUTH_WHOLE("users", parse_users),
        OAUTH_WHOLE("scopes", parse_scopes),
        OAUTH_FIELD("requiredScopes", SETTING_CUSTOM, required_scopes, 0, 0, parse_required_scopes),
};

static void oauth_done(struct http_oauth_config *o) {
        free(o->issuer);
        strv_free(o->audiences);
        free(o->user_claim);
        free(o->groups_claim);
        settings_list_done(&users_list, o);
        settings_list_done(&scopes_list, o);
        strv_free(o->required_scopes);
        *o = (struct http_oauth_config){ 0 };
}

static int parse_oauth(json_object *v, const char *path, void *dst, struct config_problems *p) {
        struct http_oauth_config *o = dst;
        size_t errors;

        if (!json_object_is_type(v, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an object: {\"issuer\": URL, ...}");
                return -EINVAL;
        }
        oauth_done(o);
        *o = (struct http_oauth_config){ .algs = JWT_DEFAULT_ALGS, .clock_skew = JWT_DEFAULT_SKEW,
                                         .keys_refresh = HTTP_OAUTH_DEFAULT_KEYS_REFRESH };
        errors = settings_apply(oauth_settings, ARRAY_SIZE(oauth_settings), v, path, o, p);
        if (!errors && !o->issuer) {
                problems_add(p, PROBLEM_ERROR, path, "\"issuer\" is required");
                errors++;
        }
        if (errors) {
                oauth_done(o);
                return -EINVAL;
        }
        return 0;
}

/* The audience by default: the front door's URL on each TCP address it listens on. */
static int default_audiences(struct http_config *h, const char *path, struct config_problems *p) {
        const char *endpoint = h->path ? h->path : HTTP_DEFAULT_PATH;
        size_t n = 0;

        h->oauth.audiences = calloc(h->n_listen + 1, sizeof(char *));
        if (!h->oauth.audiences)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_listen; i++) {
                const struct http_address *a = &h->listen[i];

                if (!a->host)
                        continue;
                if (asprintf(&h->oauth.audiences[n], strchr(a->host, ':') ? "http://[%s]:%u%s" : "http://%s:%u%s", a->host,
                             a->port, endpoint) < 0)
                        return -ENOMEM;
                n++;
        }
        if (n == 0) {
                problems_add(p, PROBLEM_ERROR, path, "\"audience\" is needed: \"listen\" names no TCP address to make it of");
                return -EINVAL;
        }
        return 0;
}

#define HTTP_FIELD(key, type, field, parser) { key, type, offsetof(struct http_config, field), 0, 0, NULL, parser, NULL }
/* Parsers of arrays with a count take the whole struct http_config. */
#define HTTP_WHOLE(key, parser) { key, SETTING_CUSTOM, 0, 0, 0, NULL, parser, NULL }

static const struct setting http_settings[] = {
        HTTP_WHOLE("listen", parse_listen),
        HTTP_FIELD("path", SETTING_CUSTOM, path, parse_endpoint),
        HTTP_FIELD("allowedOrigins", SETTING_STRINGS, allowed_origins, NULL),
        HTTP_WHOLE("tokens", parse_tokens),
        HTTP_FIELD("oauth", SETTING_CUSTOM, oauth, parse_oauth),
};

int http_config_parse(json_object *v, const char *path, void *dst, struct config_problems *p) {
        struct http_config *h = dst;
        enum http_credentials credentials;

        if (!json_object_is_type(v, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an object: {\"listen\": [\"127.0.0.1:8765\"], ...}");
                return -EINVAL;
        }
        /* A later file's "http" replaces the earlier one whole, as "access" does. */
        credentials = h->credentials;
        http_config_done(h);
        h->credentials = credentials;
        if (settings_apply(http_settings, ARRAY_SIZE(http_settings), v, path, h, p))
                return -EINVAL;
        if (h->oauth.issuer && !h->oauth.audiences) {
                char oauth_path[512];

                snprintf(oauth_path, sizeof oauth_path, "%s.oauth", path);
                return default_audiences(h, oauth_path, p);
        }
        return 0;
}

size_t http_config_check(const struct http_config *h, bool (*profile_exists)(const char *name, void *arg), void *arg,
                         struct config_problems *p) {
        size_t errors = 0;

        for (size_t i = 0; i < h->n_tokens; i++) {
                char path[64];

                if (!h->tokens[i].profile || profile_exists(h->tokens[i].profile, arg))
                        continue;
                snprintf(path, sizeof path, "mcpvisor.http.tokens[%zu].profile", i);
                problems_add(p, PROBLEM_ERROR, path, "no profile named \"%s\" in \"profiles\"", h->tokens[i].profile);
                errors++;
        }
        for (size_t i = 0; i < h->oauth.n_scopes; i++) {
                char path[600];

                if (profile_exists(h->oauth.scopes[i].to, arg))
                        continue;
                snprintf(path, sizeof path, "mcpvisor.http.oauth.scopes.%s", h->oauth.scopes[i].name);
                problems_add(p, PROBLEM_ERROR, path, "no profile named \"%s\" in \"profiles\"", h->oauth.scopes[i].to);
                errors++;
        }
        return errors;
}

void http_config_done(struct http_config *h) {
        for (size_t i = 0; i < h->n_listen; i++)
                http_address_done(&h->listen[i]);
        free(h->listen);
        free(h->path);
        strv_free(h->allowed_origins);
        for (size_t i = 0; i < h->n_tokens; i++)
                token_done(&h->tokens[i]);
        free(h->tokens);
        oauth_done(&h->oauth);
        *h = (struct http_config){ 0 };
}

/* Every byte of the longer is looked at whatever matches, so the time taken tells an
 * attacker nothing of where a guess went wrong. */
static bool equal_constant_time(const char *a, size_t a_len, const char *b, size_t b_len) {
        size_t n = a_len > b_len ? a_len : b_len;
        unsigned char diff = a_len != b_len;

        for (size_t i = 0; i < n; i++)
                diff |= (unsigned char)((i < a_len ? a[i] : 0) ^ (i < b_len ? b[i] : 0));
        return diff == 0;
}

int http_token_principal(const struct http_token *t, struct principal *ret) {
        *ret = (struct principal){ .uid = t->uid, .gid = t->n_groups ? t->groups[0] : (gid_t)-1 };
        ret->user = strdup(t->user);
        if (t->n_groups > 1) {
                ret->groups = malloc((t->n_groups - 1) * sizeof *ret->groups);
                if (ret->groups) {
                        memcpy(ret->groups, t->groups + 1, (t->n_groups - 1) * sizeof *ret->groups);
                        ret->n_groups = t->n_groups - 1;
                }
        }
        if (ret->user && (t->n_groups <= 1 || ret->groups))
                return 0;
        principal_done(ret);
        return -ENOMEM;
}

const struct http_token *http_token_find(const struct http_config *h, const char *secret, size_t len) {
        const struct http_token *found = NULL;

        for (size_t i = 0; i < h->n_tokens; i++)
                if (equal_constant_time(h->tokens[i].secret, h->tokens[i].secret_len, secret, len))
                        found = &h->tokens[i];
        return found;
}

/* scheme://host[:port] with host one of the loopback names. */
static bool origin_is_loopback(const char *origin) {
        static const char *const hosts[] = { "localhost", "127.0.0.1", "[::1]" };
        const char *rest;

        if (strncmp(origin, "http://", 7) == 0)
                rest = origin + 7;
        else if (strncmp(origin, "https://", 8) == 0)
                rest = origin + 8;
        else
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(hosts); i++) {
                size_t n = strlen(hosts[i]);

                if (strncasecmp(rest, hosts[i], n) == 0 &&
                    (rest[n] == '\0' || (rest[n] == ':' && rest[n + 1] && strspn(rest + n + 1, "0123456789") == strlen(rest + n + 1))))
                        return true;
        }
        return false;
}

bool http_origin_allowed(const struct http_config *h, const char *origin) {
        if (!h->allowed_origins)
                return origin_is_loopback(origin);
        for (char **o = h->allowed_origins; *o; o++)
                if (strcmp(*o, origin) == 0)
                        return true;
        return false;
}

const char *http_oauth_user_of(const struct http_oauth_config *o, const char *claim) {
        for (size_t i = 0; i < o->n_users; i++)
                if (strcmp(o->users[i].name, claim) == 0)
                        return o->users[i].to;
        return claim;
}

const char *http_oauth_profile_of(const struct http_oauth_config *o, const char *scope) {
        for (size_t i = 0; i < o->n_scopes; i++)
                if (strcmp(o->scopes[i].name, scope) == 0)
                        return o->scopes[i].to;
        return NULL;
}

const char *http_oauth_resource(const struct http_config *h, const char *host) {
        const char *endpoint = h->path ? h->path : HTTP_DEFAULT_PATH;
        size_t host_len = host ? strlen(host) : 0;

        if (!h->oauth.audiences || !h->oauth.audiences[0])
                return NULL;
        for (char **a = h->oauth.audiences; host && *a; a++)
                if (strncmp(*a, "http://", 7) == 0 && strncasecmp(*a + 7, host, host_len) == 0 &&
                    strcmp(*a + 7 + host_len, endpoint) == 0)
                        return *a;
        return h->oauth.audiences[0];
}
