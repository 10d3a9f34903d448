/* The front door's JWT access tokens; see http-oauth.h. */
#include "http-oauth.h"

#include <errno.h>
#include <grp.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "http-config.h"
#include "issuer-keys.h"
#include "jwt-check.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"

/* Slots looked at for one token in the table of verdicts (open addressing). */
#define VERDICT_PROBES 8
/* Groups a token may add at most, and values of its groups claim looked up at most (each a
 * lookup in the group database): the rest of a long claim is ignored. */
#define MAX_CLAIM_GROUPS 64
#define MAX_CLAIM_VALUES 256

struct verdict {
        unsigned char hash[32];   /* SHA-256 of the token */
        int64_t until;            /* seconds since the epoch; 0: a free slot */
        const struct http_token *who;
};

struct http_oauth {
        const struct logger *log;
        struct issuer_keys *keys;
        struct verdict *verdicts;          /* HTTP_OAUTH_VERDICTS */
        struct http_token **identities;    /* kept for the daemon's life: sessions point at them */
        size_t n_identities;
};

static void identity_free(struct http_token *t) {
        free(t->user);
        free(t->groups);
        free(t->profile);
        free(t);
}

int http_oauth_new(struct event_base *base, const struct logger *log, const struct http_config *h,
                   struct http_oauth **ret, const char **error) {
        struct http_oauth *o = calloc(1, sizeof *o);
        int r;

        *ret = NULL;
        if (!o)
                return -ENOMEM;
        o->log = log;
        o->verdicts = calloc(HTTP_OAUTH_VERDICTS, sizeof *o->verdicts);
        if (!o->verdicts) {
                http_oauth_free(o);
                return -ENOMEM;
        }
        r = issuer_keys_new(base, log, h->oauth.issuer, (unsigned)h->oauth.keys_refresh, &o->keys, error);
        if (r < 0) {
                http_oauth_free(o);
                return r;
        }
        *ret = o;
        return 0;
}

void http_oauth_free(struct http_oauth *o) {
        if (!o)
                return;
        issuer_keys_free(o->keys);
        free(o->verdicts);
        for (size_t i = 0; i < o->n_identities; i++)
                identity_free(o->identities[i]);
        free(o->identities);
        free(o);
}

struct http_oauth *http_oauth_config_changed(struct http_oauth *o, struct event_base *base, const struct logger *log,
                                             const struct http_config *h) {
        const char *error = NULL;

        if (o && o->keys && h->oauth.issuer && strcmp(issuer_keys_issuer(o->keys), h->oauth.issuer) == 0) {
                issuer_keys_set_min_refresh(o->keys, (unsigned)h->oauth.keys_refresh);
                memset(o->verdicts, 0, HTTP_OAUTH_VERDICTS * sizeof *o->verdicts);
                return o;
        }
        /* Another issuer, or none: the sessions opened with the old one's tokens are ended
         * by the reload (their identities are not the configuration's tokens). */
        if (o) {
                /* The identities stay alive until the sessions that point at them are gone:
                 * kept with the new one. */
                struct http_oauth *n = NULL;

                if (h->oauth.issuer && http_oauth_new(base, log, h, &n, &error) < 0)
                        log_warning(log, "http.oauth: cannot start: %s", error ? error : "out of memory");
                if (n) {
                        n->identities = TAKE_PTR(o->identities);
                        n->n_identities = o->n_identities;
                        o->n_identities = 0;
                        http_oauth_free(o);
                        return n;
                }
                issuer_keys_free(o->keys);
                o->keys = NULL;
                memset(o->verdicts, 0, HTTP_OAUTH_VERDICTS * sizeof *o->verdicts);
                return o; /* keys NULL: every token refused as pending */
        }
        if (h->oauth.issuer && http_oauth_new(base, log, h, &o, &error) < 0)
                log_warning(log, "http.oauth: cannot start: %s", error ? error : "out of memory");
        return o;
}

uint64_t http_oauth_key_fetches(const struct http_oauth *o) {
        return o && o->keys ? issuer_keys_fetches(o->keys) : 0;
}

/* ---- the verdicts remembered ---- */

static size_t slot_of(const unsigned char *hash) {
        return ((size_t)hash[0] << 24 | (size_t)hash[1] << 16 | (size_t)hash[2] << 8 | hash[3]) % HTTP_OAUTH_VERDICTS;
}

static const struct verdict *remembered(const struct http_oauth *o, const unsigned char *hash, int64_t now) {
        size_t first = slot_of(hash);

        for (size_t i = 0; i < VERDICT_PROBES; i++) {
                const struct verdict *v = &o->verdicts[(first + i) % HTTP_OAUTH_VERDICTS];

                if (v->until > now && memcmp(v->hash, hash, sizeof v->hash) == 0)
                        return v;
        }
        return NULL;
}

/* Into a free or expired slot of its probes, else over the one that expires first. */
static void remember(struct http_oauth *o, const unsigned char *hash, int64_t until, const struct http_token *who,
                     int64_t now) {
        size_t first = slot_of(hash);
        struct verdict *victim = NULL;

        for (size_t i = 0; i < VERDICT_PROBES; i++) {
                struct verdict *v = &o->verdicts[(first + i) % HTTP_OAUTH_VERDICTS];

                if (v->until <= now) {
                        victim = v;
                        break;
                }
                if (!victim || v->until < victim->until)
                        victim = v;
        }
        memcpy(victim->hash, hash, sizeof victim->hash);
        victim->until = until;
        victim->who = who;
}

/* ---- claims to a principal ---- */

static const char *claim_string(json_object *claims, const char *name) {
        json_object *v;

        return json_object_object_get_ex(claims, name, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

/* Whether the token has scope: in "scope" (space-separated) or "scp" (an array). */
static bool has_scope(json_object *claims, const char *scope) {
        const char *s = claim_string(claims, "scope");
        size_t n = strlen(scope);
        json_object *scp;

        for (const char *p = s; p && *p;) {
                size_t len = strcspn(p, " ");

                if (len == n && strncmp(p, scope, n) == 0)
                        return true;
                p += len;
                p += strspn(p, " ");
        }
        if (json_object_object_get_ex(claims, "scp", &scp) && json_object_is_type(scp, json_type_array))
                for (size_t i = 0; i < json_object_array_length(scp); i++) {
                        json_object *one = json_object_array_get_idx(scp, i);

                        if (json_object_is_type(one, json_type_string) && strcmp(json_object_get_string(one), scope) == 0)
                                return true;
                }
        return false;
}

/* The first scope of the token, in its order, that the "scopes" map names a profile for. */
static const char *profile_of(const struct http_oauth_config *c, json_object *claims) {
        const char *s = claim_string(claims, "scope");
        json_object *scp;

        for (const char *p = s; p && *p;) {
                size_t len = strcspn(p, " ");

                for (size_t i = 0; i < c->n_scopes; i++)
                        if (strlen(c->scopes[i].name) == len && strncmp(c->scopes[i].name, p, len) == 0)
                                return c->scopes[i].to;
                p += len;
                p += strspn(p, " ");
        }
        if (json_object_object_get_ex(claims, "scp", &scp) && json_object_is_type(scp, json_type_array))
                for (size_t i = 0; i < json_object_array_length(scp); i++) {
                        json_object *one = json_object_array_get_idx(scp, i);
                        const char *profile = json_object_is_type(one, json_type_string)
                                                      ? http_oauth_profile_of(c, json_object_get_string(one))
                                                      : NULL;

                        if (profile)
                                return profile;
                }
        return NULL;
}

/* The gid of the host group name, found with a buffer grown while the entry does not fit
 * (a group with many members); false when there is none. */
static bool host_group(const char *name, gid_t *ret) {
        struct group gr, *found = NULL;
        size_t size = 4096;
        char *buf = NULL;
        int r;

        do {
                char *grown = realloc(buf, size);

                if (!grown)
                        break;
                buf = grown;
                r = getgrnam_r(name, &gr, buf, size, &found);
                size *= 2;
        } while (r == ERANGE && size <= 1024 * 1024);
        if (found)
                *ret = found->gr_gid;
        free(buf);
        return found != NULL;
}

static int compare_gid(const void *a, const void *b) {
        gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;

        return x < y ? -1 : x > y;
}

/* The host groups the groups claim names (a string or an array), after the primary one,
 * sorted, without repeats. */
static size_t claim_groups(const struct http_oauth_config *c, json_object *claims, gid_t primary, gid_t *ret) {
        json_object *v;
        size_t n = 0, kept = 1;

        ret[0] = primary;
        if (!c->groups_claim || !json_object_object_get_ex(claims, c->groups_claim, &v))
                return 1;
        for (size_t i = 0; i < MAX_CLAIM_VALUES && n < MAX_CLAIM_GROUPS; i++) {
                json_object *one = json_object_is_type(v, json_type_array) ? json_object_array_get_idx(v, i) : i == 0 ? v : NULL;
                gid_t gid;

                if (!one)
                        break;
                if (json_object_is_type(one, json_type_string) && host_group(json_object_get_string(one), &gid) &&
                    gid != primary)
                        ret[1 + n++] = gid;
        }
        qsort(ret + 1, n, sizeof *ret, compare_gid);
        for (size_t i = 1; i <= n; i++)
                if (kept == 1 || ret[i] != ret[kept - 1])
                        ret[kept++] = ret[i];
        return kept;
}

static bool same_identity(const struct http_token *t, uid_t uid, const gid_t *groups, size_t n, const char *profile) {
        return t->uid == uid && t->n_groups == n && memcmp(t->groups, groups, n * sizeof *groups) == 0 &&
               (t->profile ? profile && strcmp(t->profile, profile) == 0 : !profile);
}

/* The identity of uid (named user) with groups and profile: the one kept, or a new one. */
static const struct http_token *identity(struct http_oauth *o, const char *user, uid_t uid, const gid_t *groups, size_t n,
                                         const char *profile) {
        struct http_token *t, **grown;

        for (size_t i = 0; i < o->n_identities; i++)
                if (same_identity(o->identities[i], uid, groups, n, profile))
                        return o->identities[i];
        if (o->n_identities >= HTTP_OAUTH_MAX_IDENTITIES)
                return NULL;
        grown = realloc(o->identities, (o->n_identities + 1) * sizeof *grown);
        if (!grown)
                return NULL;
        o->identities = grown;
        t = calloc(1, sizeof *t);
        if (!t)
                return NULL;
        t->uid = uid;
        t->user = strdup(user);
        t->groups = malloc(n * sizeof *groups);
        t->n_groups = n;
        t->profile = profile ? strdup(profile) : NULL;
        if (!t->user || !t->groups || (profile && !t->profile)) {
                identity_free(t);
                return NULL;
        }
        memcpy(t->groups, groups, n * sizeof *groups);
        o->identities[o->n_identities++] = t;
        return t;
}

static enum http_oauth_result map_claims(struct http_oauth *o, const struct http_oauth_config *c, json_object *claims,
                                         const struct http_token **ret, const char **why) {
        const char *value = claim_string(claims, c->user_claim ? c->user_claim : "sub");
        struct passwd pw, *found = NULL;
        gid_t groups[1 + MAX_CLAIM_GROUPS];
        char buf[4096];
        size_t n;

        for (char **s = c->required_scopes; s && *s; s++)
                if (!has_scope(claims, *s)) {
                        *why = "a required scope is missing (http.oauth.requiredScopes)";
                        return HTTP_OAUTH_SCOPE;
                }
        if (!value || getpwnam_r(http_oauth_user_of(c, value), &pw, buf, sizeof buf, &found) != 0 || !found) {
                *why = "the token's user is no user of this host (http.oauth.userClaim, http.oauth.users)";
                return HTTP_OAUTH_NO_USER;
        }
        n = claim_groups(c, claims, found->pw_gid, groups);
        *ret = identity(o, found->pw_name, found->pw_uid, groups, n, profile_of(c, claims));
        if (!*ret) {
                *why = "out of memory, or too many distinct identities (http.oauth)";
                return HTTP_OAUTH_KEYS_PENDING;
        }
        return HTTP_OAUTH_ACCEPTED;
}

/* ---- a token ---- */

static enum http_oauth_result verify(struct http_oauth *o, const struct http_config *h, const char *token, size_t len,
                                     int64_t now, json_object **ret_claims, const char **why) {
        const struct jwt_keys *keys = o->keys ? issuer_keys_get(o->keys, now_usec()) : NULL;
        struct jwt_expect e = { .issuer = h->oauth.issuer, .audiences = (const char *const *)h->oauth.audiences,
                                .algorithms = h->oauth.algs, .skew = (int64_t)h->oauth.clock_skew, .now = now };
        enum jwt_verdict v;

        if (!keys) {
                *why = "the issuer's keys are not fetched yet";
                return HTTP_OAUTH_KEYS_PENDING;
        }
        v = jwt_check(token, len, keys, &e, ret_claims);
        if (v == JWT_UNKNOWN_KID && issuer_keys_refresh(o->keys, now_usec())) {
                *why = "signed by a key not fetched yet; fetching the issuer's keys again";
                return HTTP_OAUTH_KEYS_PENDING;
        }
        if (v != JWT_VALID) {
                *why = jwt_verdict_text(v);
                return HTTP_OAUTH_INVALID;
        }
        return HTTP_OAUTH_ACCEPTED;
}

enum http_oauth_result http_oauth_check(struct http_oauth *o, const struct http_config *h, const char *token, size_t len,
                                        int64_t now, const struct http_token **ret, const char **why) {
        unsigned char hash[32];
        const struct verdict *known;
        json_object *claims = NULL, *exp;
        enum http_oauth_result r;

        *ret = NULL;
        *why = NULL;
        if (len > JWT_MAX_LEN || !h->oauth.issuer) {
                *why = jwt_verdict_text(JWT_MALFORMED);
                return HTTP_OAUTH_INVALID;
        }
        if (!EVP_Digest(token, len, hash, NULL, EVP_sha256(), NULL)) {
                *why = "out of memory";
                return HTTP_OAUTH_KEYS_PENDING;
        }
        known = remembered(o, hash, now);
        if (known) {
                *ret = known->who;
                return HTTP_OAUTH_ACCEPTED;
        }
        r = verify(o, h, token, len, now, &claims, why);
        if (r == HTTP_OAUTH_ACCEPTED)
                r = map_claims(o, &h->oauth, claims, ret, why);
        if (r == HTTP_OAUTH_ACCEPTED && json_object_object_get_ex(claims, "exp", &exp))
                remember(o, hash, json_object_get_int64(exp) + (int64_t)h->oauth.clock_skew, *ret, now);
        json_object_put(claims);
        return r;
}
