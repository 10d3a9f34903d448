/* The check of a JWT access token (RFC 9068, RFC 7519) as an OAuth resource server makes it:
 * a pure function of the token's text, the issuer's keys (a JWKS), what is expected of it
 * (issuer, audience, algorithms, clock skew) and the time, giving the claims or the reason
 * it is refused. Signatures are verified by libcjose over OpenSSL; this module only decides
 * which key may verify which algorithm. No I/O; what it allocates is freed before it
 * returns, but for the claims it hands back.
 *
 * Only asymmetric algorithms are known: a shared secret (HS256...) would make every holder
 * of it an issuer, and a public key must never be taken as an HMAC secret. "none" is never
 * accepted. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A token longer than this is refused before any parsing: what an unauthenticated peer can
 * make the check allocate is bounded by it. Real access tokens are about 1 KiB. */
#define JWT_MAX_LEN 8192
/* Keys of a JWKS kept at most; the rest is ignored. */
#define JWT_MAX_KEYS 32
/* Clock skew allowed by default on exp and nbf, in seconds. */
#define JWT_DEFAULT_SKEW 60

enum jwt_alg {
        JWT_RS256 = 1 << 0,
        JWT_RS384 = 1 << 1,
        JWT_RS512 = 1 << 2,
        JWT_PS256 = 1 << 3,
        JWT_PS384 = 1 << 4,
        JWT_PS512 = 1 << 5,
        JWT_ES256 = 1 << 6,
        JWT_ES384 = 1 << 7,
        JWT_ES512 = 1 << 8,
};
#define JWT_DEFAULT_ALGS (JWT_RS256 | JWT_RS384 | JWT_RS512 | JWT_PS256 | JWT_ES256 | JWT_ES384)

/* The algorithm named name ("RS256"), or 0 when it is none of the known ones. */
unsigned jwt_alg_of_name(const char *name);

enum jwt_verdict {
        JWT_VALID,
        JWT_MALFORMED,          /* not a compact JWS, too long, no exp, claims not an object */
        JWT_ALG_NOT_ALLOWED,    /* none, HS*, or one not configured */
        JWT_UNKNOWN_KID,        /* no key of the set has its kid (the set may be stale) */
        JWT_BAD_SIGNATURE,
        JWT_EXPIRED,
        JWT_NOT_YET_VALID,
        JWT_WRONG_ISSUER,
        JWT_WRONG_AUDIENCE,
};

/* A verdict's words, for logs and the error_description a client sees (never the token). */
const char *jwt_verdict_text(enum jwt_verdict v);

struct jwt_key {
        char *kid;              /* NULL: none */
        void *jwk;              /* cjose_jwk_t */
};

struct jwt_keys {
        struct jwt_key *keys;
        size_t n;
};

/* The signing keys of a JWKS's text ({"keys": [...]}): RSA keys of 2048 bits and more and
 * EC keys of P-256, P-384 and P-521; keys with "use" other than "sig" and keys cjose cannot
 * import are skipped. -EINVAL when the text is not a JWKS, -ENOMEM. */
int jwt_keys_parse(const char *json, size_t len, struct jwt_keys *ret);
void jwt_keys_done(struct jwt_keys *k);

struct jwt_expect {
        const char *issuer;             /* the iss that must be there, exactly */
        const char *const *audiences;   /* NULL-terminated: one of them must be in aud */
        unsigned algorithms;            /* enum jwt_alg bits */
        int64_t skew;                   /* seconds allowed on exp and nbf */
        int64_t now;                    /* seconds since the epoch */
};

/* Checks token (len bytes, not NUL-terminated) in this order: its form and length, the
 * header's alg against e->algorithms, its kid among keys (no kid: every key that fits the
 * alg is tried), the key's type and curve against the alg, the signature, then exp (which
 * must be there), nbf, iss and aud. JWT_VALID with *ret_claims the payload (the caller's);
 * else *ret_claims is NULL. */
enum jwt_verdict jwt_check(const char *token, size_t len, const struct jwt_keys *keys, const struct jwt_expect *e,
                           json_object **ret_claims);
