/* The check of a JWT access token; see jwt-check.h. */
#include "jwt-check.h"

#include <cjose/cjose.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static const struct {
        const char *name;
        unsigned alg;
        cjose_jwk_kty_t kty;
        int curve;              /* EC only */
} algs[] = {
        { "RS256", JWT_RS256, CJOSE_JWK_KTY_RSA, 0 },
        { "RS384", JWT_RS384, CJOSE_JWK_KTY_RSA, 0 },
        { "RS512", JWT_RS512, CJOSE_JWK_KTY_RSA, 0 },
        { "PS256", JWT_PS256, CJOSE_JWK_KTY_RSA, 0 },
        { "PS384", JWT_PS384, CJOSE_JWK_KTY_RSA, 0 },
        { "PS512", JWT_PS512, CJOSE_JWK_KTY_RSA, 0 },
        { "ES256", JWT_ES256, CJOSE_JWK_KTY_EC, CJOSE_JWK_EC_P_256 },
        { "ES384", JWT_ES384, CJOSE_JWK_KTY_EC, CJOSE_JWK_EC_P_384 },
        { "ES512", JWT_ES512, CJOSE_JWK_KTY_EC, CJOSE_JWK_EC_P_521 },
};

/* RSA keys shorter than this are refused (RFC 7518 §3.3). */
#define JWT_RSA_MIN_BITS 2048

unsigned jwt_alg_of_name(const char *name) {
        for (size_t i = 0; i < ARRAY_SIZE(algs); i++)
                if (strcmp(algs[i].name, name) == 0)
                        return algs[i].alg;
        return 0;
}

const char *jwt_verdict_text(enum jwt_verdict v) {
        static const char *const texts[] = {
                [JWT_VALID] = "valid",
                [JWT_MALFORMED] = "malformed token",
                [JWT_ALG_NOT_ALLOWED] = "signature algorithm not allowed",
                [JWT_UNKNOWN_KID] = "signed by an unknown key",
                [JWT_BAD_SIGNATURE] = "bad signature",
                [JWT_EXPIRED] = "token expired",
                [JWT_NOT_YET_VALID] = "token not yet valid",
                [JWT_WRONG_ISSUER] = "wrong issuer",
                [JWT_WRONG_AUDIENCE] = "wrong audience",
        };

        return (size_t)v < ARRAY_SIZE(texts) && texts[v] ? texts[v] : "refused";
}

/* ---- keys ---- */

static void key_done(struct jwt_key *k) {
        free(k->kid);
        if (k->jwk)
                cjose_jwk_release(k->jwk);
        *k = (struct jwt_key){ 0 };
}

void jwt_keys_done(struct jwt_keys *k) {
        for (size_t i = 0; i < k->n; i++)
                key_done(&k->keys[i]);
        free(k->keys);
        *k = (struct jwt_keys){ 0 };
}

/* Whether a key cjose imported is one a signature may be verified with. */
static bool key_usable(const cjose_jwk_t *jwk) {
        cjose_err err;

        switch (cjose_jwk_get_kty(jwk, &err)) {
        case CJOSE_JWK_KTY_RSA:
                return cjose_jwk_get_keysize(jwk, &err) >= JWT_RSA_MIN_BITS;
        case CJOSE_JWK_KTY_EC:
                return true; /* cjose imports the three curves only */
        default:
                return false; /* oct: a shared secret, never */
        }
}

/* Whether text is base64url as cjose 0.6's decoder takes it without aborting: its alphabet,
 * then at most two "=" of padding, and not one character alone in its last quartet (that
 * decoder asserts, killing the process, on "a=" or "m=1k": an issuer's JWKS must not). */
static bool base64url_sane(const char *text) {
        size_t n = strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");
        size_t pad = strspn(text + n, "=");

        return text[n + pad] == '\0' && pad <= 2 && n % 4 != 1;
}

/* Whether every member of a JWK that cjose decodes as base64url is sane. */
static bool key_members_sane(json_object *o) {
        static const char *const encoded[] = { "n", "e", "d", "p", "q", "dp", "dq", "qi", "x", "y", "k" };
        json_object *v;

        for (size_t i = 0; i < ARRAY_SIZE(encoded); i++)
                if (json_object_object_get_ex(o, encoded[i], &v) &&
                    (!json_object_is_type(v, json_type_string) || !base64url_sane(json_object_get_string(v))))
                        return false;
        return true;
}

/* One entry of "keys": 0 kept, 1 skipped, -ENOMEM. */
static int key_parse(json_object *o, struct jwt_key *ret) {
        json_object *use, *kid;
        const char *text;
        cjose_err err;

        *ret = (struct jwt_key){ 0 };
        if (!json_object_is_type(o, json_type_object))
                return 1;
        if (json_object_object_get_ex(o, "use", &use) &&
            (!json_object_is_type(use, json_type_string) || strcmp(json_object_get_string(use), "sig") != 0))
                return 1;
        if (!key_members_sane(o))
                return 1;
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        ret->jwk = cjose_jwk_import(text, strlen(text), &err);
        if (!ret->jwk)
                return 1;
        if (!key_usable(ret->jwk)) {
                key_done(ret);
                return 1;
        }
        if (json_object_object_get_ex(o, "kid", &kid) && json_object_is_type(kid, json_type_string) &&
            !(ret->kid = strdup(json_object_get_string(kid)))) {
                key_done(ret);
                return -ENOMEM;
        }
        return 0;
}

int jwt_keys_parse(const char *json, size_t len, struct jwt_keys *ret) {
        json_tokener *tok = json_tokener_new();
        json_object *root = NULL, *keys;
        size_t n;
        int r = 0;

        *ret = (struct jwt_keys){ 0 };
        if (!tok)
                return -ENOMEM;
        root = json_tokener_parse_ex(tok, json, (int)len);
        if (json_tokener_get_error(tok) != json_tokener_success || len > INT32_MAX)
                r = -EINVAL;
        json_tokener_free(tok);
        if (r < 0 || !json_object_object_get_ex(root, "keys", &keys) || !json_object_is_type(keys, json_type_array)) {
                json_object_put(root);
                return -EINVAL;
        }
        n = json_object_array_length(keys);
        ret->keys = calloc(n < JWT_MAX_KEYS ? n + 1 : JWT_MAX_KEYS, sizeof *ret->keys);
        if (!ret->keys)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n && ret->n < JWT_MAX_KEYS; i++) {
                int k = key_parse(json_object_array_get_idx(keys, i), &ret->keys[ret->n]);

                if (k < 0)
                        r = k;
                else if (k == 0)
                        ret->n++;
        }
        json_object_put(root);
        if (r < 0)
                jwt_keys_done(ret);
        return r;
}

/* ---- one token ---- */

/* A compact JWS: three base64url parts, the header not empty (an empty signature goes on,
 * for its alg to be refused by name). */
static bool compact_form(const char *token, size_t len, size_t *ret_header_len) {
        size_t dots = 0, first = 0;

        if (len == 0 || len > JWT_MAX_LEN)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = token[i];

                if (c == '.') {
                        if (dots++ == 0)
                                first = i;
                        continue;
                }
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
                        return false;
        }
        *ret_header_len = first;
        return dots == 2 && first > 0;
}

/* A base64url part's JSON object, or NULL. */
static json_object *decode_object(const char *part, size_t len) {
        uint8_t *raw = NULL;
        size_t raw_len = 0;
        json_object *o = NULL;
        cjose_err err;
        json_tokener *tok;

        if (!cjose_base64url_decode(part, len, &raw, &raw_len, &err))
                return NULL;
        tok = json_tokener_new();
        if (tok) {
                o = json_tokener_parse_ex(tok, (const char *)raw, (int)raw_len);
                if (json_tokener_get_error(tok) != json_tokener_success || (size_t)json_tokener_get_parse_end(tok) != raw_len) {
                        json_object_put(o);
                        o = NULL;
                }
                json_tokener_free(tok);
        }
        cjose_get_dealloc()(raw);
        if (o && !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                o = NULL;
        }
        return o;
}

static const char *string_member(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                                 : NULL;
}

/* Whether key k may verify alg algs[a]: its type, and for EC its curve. */
static bool key_fits(const struct jwt_key *k, size_t a) {
        cjose_err err;

        if (cjose_jwk_get_kty(k->jwk, &err) != algs[a].kty)
                return false;
        return algs[a].kty != CJOSE_JWK_KTY_EC || (int)cjose_jwk_EC_get_curve(k->jwk, &err) == algs[a].curve;
}

/* The signature, by the key the header names (kid) or, naming none, by any key that fits. */
static enum jwt_verdict verify(const char *token, size_t len, const struct jwt_keys *keys, size_t a, const char *kid,
                               cjose_jws_t **ret) {
        enum jwt_verdict v = kid ? JWT_UNKNOWN_KID : JWT_BAD_SIGNATURE;
        cjose_err err;
        cjose_jws_t *jws = cjose_jws_import(token, len, &err);

        *ret = NULL;
        if (!jws)
                return JWT_MALFORMED;
        for (size_t i = 0; i < keys->n; i++) {
                const struct jwt_key *k = &keys->keys[i];

                if (kid && (!k->kid || strcmp(k->kid, kid) != 0))
                        continue;
                /* The key named must fit the algorithm: an RSA key is never an HMAC
                 * secret, an EC key only verifies its own curve. */
                if (!key_fits(k, a)) {
                        if (kid)
                                v = JWT_ALG_NOT_ALLOWED;
                        continue;
                }
                if (cjose_jws_verify(jws, k->jwk, &err)) {
                        *ret = jws;
                        return JWT_VALID;
                }
                v = JWT_BAD_SIGNATURE;
        }
        cjose_jws_release(jws);
        return v;
}

/* A NumericDate claim: 1 present (in *ret), 0 absent, -1 not a number. */
static int date_claim(json_object *claims, const char *key, int64_t *ret) {
        json_object *v;

        if (!json_object_object_get_ex(claims, key, &v))
                return 0;
        if (json_object_is_type(v, json_type_int))
                *ret = json_object_get_int64(v);
        else if (json_object_is_type(v, json_type_double))
                *ret = (int64_t)json_object_get_double(v);
        else
                return -1;
        return 1;
}

static bool audience_expected(const struct jwt_expect *e, const char *aud) {
        for (const char *const *a = e->audiences; a && *a; a++)
                if (strcmp(*a, aud) == 0)
                        return true;
        return false;
}

/* aud: a string or an array of strings, one of which is expected. */
static bool audience_ok(json_object *claims, const struct jwt_expect *e) {
        json_object *aud;

        if (!json_object_object_get_ex(claims, "aud", &aud))
                return false;
        if (json_object_is_type(aud, json_type_string))
                return audience_expected(e, json_object_get_string(aud));
        if (!json_object_is_type(aud, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(aud); i++) {
                json_object *one = json_object_array_get_idx(aud, i);

                if (json_object_is_type(one, json_type_string) && audience_expected(e, json_object_get_string(one)))
                        return true;
        }
        return false;
}

static enum jwt_verdict check_claims(json_object *claims, const struct jwt_expect *e) {
        const char *iss = string_member(claims, "iss");
        int64_t exp = 0, nbf = 0;
        int has_exp = date_claim(claims, "exp", &exp), has_nbf = date_claim(claims, "nbf", &nbf);

        if (has_exp != 1 || has_nbf < 0)
                return JWT_MALFORMED; /* a token that never expires is not taken */
        if (e->now - e->skew >= exp)
                return JWT_EXPIRED;
        if (has_nbf && e->now + e->skew < nbf)
                return JWT_NOT_YET_VALID;
        if (!iss || !e->issuer || strcmp(iss, e->issuer) != 0)
                return JWT_WRONG_ISSUER;
        if (!audience_ok(claims, e))
                return JWT_WRONG_AUDIENCE;
        return JWT_VALID;
}

static json_object *payload_of(cjose_jws_t *jws) {
        uint8_t *plain = NULL;
        size_t plain_len = 0;
        json_object *o = NULL;
        json_tokener *tok;
        cjose_err err;

        if (!cjose_jws_get_plaintext(jws, &plain, &plain_len, &err) || plain_len > JWT_MAX_LEN)
                return NULL;
        tok = json_tokener_new();
        if (!tok)
                return NULL;
        o = json_tokener_parse_ex(tok, (const char *)plain, (int)plain_len);
        if (json_tokener_get_error(tok) != json_tokener_success || (size_t)json_tokener_get_parse_end(tok) != plain_len ||
            !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                o = NULL;
        }
        json_tokener_free(tok);
        return o;
}

enum jwt_verdict jwt_check(const char *token, size_t len, const struct jwt_keys *keys, const struct jwt_expect *e,
                           json_object **ret_claims) {
        size_t header_len, a = ARRAY_SIZE(algs);
        json_object *header, *claims;
        enum jwt_verdict v;
        const char *alg, *kid;
        cjose_jws_t *jws;

        *ret_claims = NULL;
        if (!compact_form(token, len, &header_len) || !(header = decode_object(token, header_len)))
                return JWT_MALFORMED;
        /* The header's alg decides before any key is touched: none, HS* and the algorithms
         * not configured go no further. */
        alg = string_member(header, "alg");
        for (size_t i = 0; alg && i < ARRAY_SIZE(algs); i++)
                if (strcmp(algs[i].name, alg) == 0 && (algs[i].alg & e->algorithms))
                        a = i;
        if (a == ARRAY_SIZE(algs)) {
                json_object_put(header);
                return alg ? JWT_ALG_NOT_ALLOWED : JWT_MALFORMED;
        }
        kid = string_member(header, "kid");
        v = verify(token, len, keys, a, kid, &jws);
        json_object_put(header);
        if (v != JWT_VALID)
                return v;
        claims = payload_of(jws);
        cjose_jws_release(jws);
        if (!claims)
                return JWT_MALFORMED;
        v = check_claims(claims, e);
        if (v != JWT_VALID) {
                json_object_put(claims);
                return v;
        }
        *ret_claims = claims;
        return JWT_VALID;
}
