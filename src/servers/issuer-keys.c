/* An authorization server's signing keys, fetched on the loop; see issuer-keys.h. */
#include "issuer-keys.h"

#include <errno.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "curl-loop.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"

#define RETRY_FIRST_SEC 1
#define RETRY_MAX_SEC 60

/* Which metadata document is asked for: OpenID Connect's first (most identity providers
 * have it), then RFC 8414's. */
enum metadata_kind { METADATA_OPENID, METADATA_RFC8414, METADATA_KINDS };

struct issuer_keys {
        struct event_base *base;
        const struct logger *log;
        struct curl_loop *loop;
        char *issuer;
        unsigned min_refresh;
        enum issuer_keys_state state;
        enum metadata_kind metadata;  /* ISSUER_KEYS_METADATA: the one asked for */
        CURL *easy;                   /* the transfer under way, or NULL */
        char *body;
        size_t body_len;
        bool body_too_long;
        char *jwks_uri;               /* from the metadata; NULL until known */
        struct jwt_keys keys;
        bool have_keys;
        uint64_t fetched_at;          /* when the keys held were fetched (monotonic usec) */
        uint64_t began_at;            /* when the last fetch began; 0: never */
        uint64_t fetches;
        unsigned retry_sec;           /* the next retry's delay while there are no keys */
        struct event *retry;
};

static void fetch(struct issuer_keys *k, const char *url);

static void set_state(struct issuer_keys *k, enum issuer_keys_state to) {
        k->state = to;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
        struct issuer_keys *k = userdata;
        size_t len = size * n;
        char *grown;

        if (k->body_len + len > ISSUER_KEYS_MAX_BODY) {
                k->body_too_long = true;
                return 0; /* curl ends the transfer */
        }
        grown = realloc(k->body, k->body_len + len + 1);
        if (!grown)
                return 0;
        k->body = grown;
        memcpy(k->body + k->body_len, data, len);
        k->body_len += len;
        k->body[k->body_len] = '\0';
        return len;
}

/* The metadata's URL: OpenID Connect appends its well-known name to the issuer, RFC 8414
 * puts its own between the issuer's origin and its path (no trailing "/" either way). */
char *issuer_keys_metadata_url(const char *issuer, bool openid) {
        enum metadata_kind kind = openid ? METADATA_OPENID : METADATA_RFC8414;
        const char *host = strstr(issuer, "://");
        const char *path = host ? strchr(host + 3, '/') : NULL;
        size_t origin_len = path ? (size_t)(path - issuer) : strlen(issuer);
        size_t path_len = path ? strlen(path) : 0;
        char *url;

        while (path_len > 0 && path[path_len - 1] == '/')
                path_len--;
        if (asprintf(&url, kind == METADATA_OPENID ? "%.*s%.*s/.well-known/openid-configuration"
                                                   : "%.*s/.well-known/oauth-authorization-server%.*s",
                     (int)origin_len, issuer, (int)path_len, path ? path : "") < 0)
                return NULL;
        return url;
}

static void retry_later(struct issuer_keys *k) {
        struct timeval tv = { k->retry_sec, 0 };

        if (k->have_keys)
                return; /* the keys held serve; the next unknown kid or their age asks again */
        evtimer_add(k->retry, &tv);
        k->retry_sec = k->retry_sec * 2 > RETRY_MAX_SEC ? RETRY_MAX_SEC : k->retry_sec * 2;
}

static void fetch_metadata(struct issuer_keys *k, enum metadata_kind kind) {
        _cleanup_free_ char *url = issuer_keys_metadata_url(k->issuer, kind == METADATA_OPENID);

        k->metadata = kind;
        set_state(k, ISSUER_KEYS_METADATA);
        if (!url) {
                set_state(k, ISSUER_KEYS_IDLE);
                retry_later(k);
                return;
        }
        fetch(k, url);
}

static void fetch_jwks(struct issuer_keys *k) {
        set_state(k, ISSUER_KEYS_JWKS);
        k->fetches++;
        log_debug(k->log, "http.oauth: fetching the JWKS of %s (fetch %llu)", k->issuer, (unsigned long long)k->fetches);
        fetch(k, k->jwks_uri);
}

/* A fetch begins: the JWKS when its URI is known, else the metadata first. */
static void begin(struct issuer_keys *k, uint64_t now) {
        k->began_at = now ? now : 1;
        if (k->jwks_uri)
                fetch_jwks(k);
        else
                fetch_metadata(k, METADATA_OPENID);
}

static void failed(struct issuer_keys *k, const char *what, const char *why) {
        log_warning(k->log, "http.oauth: cannot fetch the %s of %s: %s%s", what, k->issuer, why,
                    k->have_keys ? " (the keys fetched before stay in use)" : "; tokens are refused until it is");
        set_state(k, ISSUER_KEYS_IDLE);
        retry_later(k);
}

/* The metadata names the issuer it is for (RFC 8414 §3.3: exactly ours) and its jwks_uri. */
static void metadata_fetched(struct issuer_keys *k) {
        json_object *doc = json_tokener_parse(k->body ? k->body : ""), *v;
        const char *iss = NULL, *jwks = NULL;

        if (json_object_object_get_ex(doc, "issuer", &v) && json_object_is_type(v, json_type_string))
                iss = json_object_get_string(v);
        if (json_object_object_get_ex(doc, "jwks_uri", &v) && json_object_is_type(v, json_type_string))
                jwks = json_object_get_string(v);
        if (!iss || strcmp(iss, k->issuer) != 0 || !jwks ||
            (strncmp(jwks, "https://", 8) != 0 && strncmp(jwks, "http://", 7) != 0)) {
                json_object_put(doc);
                failed(k, "metadata", !iss || strcmp(iss, k->issuer) != 0 ? "its issuer is not the one configured"
                                                                         : "it names no http(s) jwks_uri");
                return;
        }
        free(k->jwks_uri);
        k->jwks_uri = strdup(jwks);
        json_object_put(doc);
        if (!k->jwks_uri) {
                failed(k, "metadata", "out of memory");
                return;
        }
        fetch_jwks(k);
}

static void jwks_fetched(struct issuer_keys *k) {
        struct jwt_keys keys;
        int r = jwt_keys_parse(k->body ? k->body : "", k->body_len, &keys);

        if (r < 0) {
                failed(k, "JWKS", r == -ENOMEM ? "out of memory" : "it is not a JWKS");
                return;
        }
        if (keys.n == 0) {
                jwt_keys_done(&keys);
                failed(k, "JWKS", "it holds no signing key this daemon can use (RSA of 2048 bits or more, EC)");
                return;
        }
        jwt_keys_done(&k->keys);
        k->keys = keys;
        if (!k->have_keys)
                log_info(k->log, "http.oauth: %zu signing keys of %s fetched", keys.n, k->issuer);
        k->have_keys = true;
        k->fetched_at = now_usec();
        k->retry_sec = RETRY_FIRST_SEC;
        set_state(k, ISSUER_KEYS_IDLE);
}

static void fetch_done(CURL *easy, CURLcode result, void *userdata) {
        struct issuer_keys *k = userdata;
        long status = 0;
        char why[64];

        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (result != CURLE_OK || status != 200) {
                if (k->state == ISSUER_KEYS_METADATA && k->metadata + 1 < METADATA_KINDS) {
                        fetch_metadata(k, (enum metadata_kind)(k->metadata + 1));
                        return;
                }
                if (k->body_too_long)
                        snprintf(why, sizeof why, "larger than %d bytes", ISSUER_KEYS_MAX_BODY);
                else if (result != CURLE_OK)
                        snprintf(why, sizeof why, "%s", curl_easy_strerror(result));
                else
                        snprintf(why, sizeof why, "HTTP status %ld", status);
                failed(k, k->state == ISSUER_KEYS_JWKS ? "JWKS" : "metadata", why);
                return;
        }
        if (k->state == ISSUER_KEYS_METADATA)
                metadata_fetched(k);
        else
                jwks_fetched(k);
}

static void fetch(struct issuer_keys *k, const char *url) {
        CURL *e = k->easy;

        free(k->body);
        k->body = NULL;
        k->body_len = 0;
        k->body_too_long = false;
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)ISSUER_KEYS_TIMEOUT);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, curl_loop_open_socket);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
        if (curl_loop_add(k->loop, e, fetch_done, k) < 0)
                failed(k, k->state == ISSUER_KEYS_JWKS ? "JWKS" : "metadata", "out of memory");
}

static void retry_due(evutil_socket_t fd, short what, void *userdata) {
        struct issuer_keys *k = userdata;

        if (k->state == ISSUER_KEYS_IDLE)
                begin(k, now_usec());
}

int issuer_keys_new(struct event_base *base, const struct logger *log, const char *issuer, unsigned min_refresh,
                    struct issuer_keys **ret, const char **error) {
        struct issuer_keys *k = calloc(1, sizeof *k);
        int r;

        *ret = NULL;
        if (!k)
                return -ENOMEM;
        *k = (struct issuer_keys){ .base = base, .log = log, .min_refresh = min_refresh, .retry_sec = RETRY_FIRST_SEC };
        k->issuer = strdup(issuer);
        k->retry = evtimer_new(base, retry_due, k);
        if (!k->issuer || !k->retry) {
                issuer_keys_free(k);
                return -ENOMEM;
        }
        r = curl_loop_new(base, log, &k->loop, error);
        if (r < 0 || !(k->easy = curl_easy_init())) {
                issuer_keys_free(k);
                return r < 0 ? r : -ENOMEM;
        }
        begin(k, now_usec());
        *ret = k;
        return 0;
}

void issuer_keys_free(struct issuer_keys *k) {
        if (!k)
                return;
        if (k->easy && k->state != ISSUER_KEYS_IDLE)
                curl_loop_remove(k->loop, k->easy);
        if (k->easy)
                curl_easy_cleanup(k->easy);
        curl_loop_free(k->loop);
        if (k->retry)
                event_free(k->retry);
        jwt_keys_done(&k->keys);
        free(k->body);
        free(k->jwks_uri);
        free(k->issuer);
        free(k);
}

const struct jwt_keys *issuer_keys_get(struct issuer_keys *k, uint64_t now) {
        if (!k->have_keys)
                return NULL;
        if (k->state == ISSUER_KEYS_IDLE && now - k->fetched_at > (uint64_t)ISSUER_KEYS_MAX_AGE * USEC_PER_SEC)
                begin(k, now);
        return &k->keys;
}

bool issuer_keys_refresh(struct issuer_keys *k, uint64_t now) {
        if (k->state != ISSUER_KEYS_IDLE)
                return true;
        if (k->began_at && now - k->began_at < (uint64_t)k->min_refresh * USEC_PER_SEC)
                return false;
        evtimer_del(k->retry);
        begin(k, now);
        return k->state != ISSUER_KEYS_IDLE;
}

void issuer_keys_set_min_refresh(struct issuer_keys *k, unsigned min_refresh) {
        k->min_refresh = min_refresh;
}

enum issuer_keys_state issuer_keys_state(const struct issuer_keys *k) {
        return k->state;
}

uint64_t issuer_keys_fetches(const struct issuer_keys *k) {
        return k->fetches;
}

const char *issuer_keys_issuer(const struct issuer_keys *k) {
        return k->issuer;
}
