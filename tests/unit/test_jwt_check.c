/* The check of a JWT access token (jwt-check.c), and where an issuer's metadata is looked for
 * (issuer-keys.c): keys and tokens made here with cjose, a
 * valid token accepted with its claims, and each refusal for its own reason. */
#include <cjose/cjose.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "issuer-keys.h"
#include "jwt-check.h"

#define ISSUER "https://id.example"
#define AUDIENCE "http://127.0.0.1:8765/mcp"
#define NOW 1800000000

static cjose_jwk_t *rsa, *rsa_other, *ec;
static struct jwt_keys keys;
static const char *const audiences[] = { "http://other.example/mcp", AUDIENCE, NULL };

static struct jwt_expect expect(void) {
        return (struct jwt_expect){ .issuer = ISSUER, .audiences = audiences, .algorithms = JWT_DEFAULT_ALGS,
                                    .skew = 60, .now = NOW };
}

static char *public_json(cjose_jwk_t *k, const char *kid) {
        cjose_err err;

        cr_assert(cjose_jwk_set_kid(k, kid, strlen(kid), &err));
        return cjose_jwk_to_json(k, false, &err);
}

static void setup(void) {
        static const uint8_t e[] = { 1, 0, 1 };
        cjose_err err;
        char jwks[8192];
        char *a, *b;

        if (!rsa) {
                rsa = cjose_jwk_create_RSA_random(2048, e, sizeof e, &err);
                rsa_other = cjose_jwk_create_RSA_random(2048, e, sizeof e, &err);
                ec = cjose_jwk_create_EC_random(CJOSE_JWK_EC_P_256, &err);
                cr_assert(rsa && rsa_other && ec);
        }
        a = public_json(rsa, "rsa1");
        b = public_json(ec, "ec1");
        snprintf(jwks, sizeof jwks, "{\"keys\":[%s,%s,{\"kty\":\"oct\",\"k\":\"c2VjcmV0c2VjcmV0c2VjcmV0\",\"kid\":\"hs\"}]}", a, b);
        free(a);
        free(b);
        cr_assert_eq(jwt_keys_parse(jwks, strlen(jwks), &keys), 0);
        cr_assert_eq(keys.n, 2, "the oct key is not kept");
}

static void teardown(void) {
        jwt_keys_done(&keys);
}

/* A compact JWS of payload by k with alg and kid (NULL: none). */
static char *sign(cjose_jwk_t *k, const char *alg, const char *kid, const char *payload) {
        cjose_err err;
        cjose_header_t *h = cjose_header_new(&err);
        cjose_jws_t *jws;
        const char *compact;
        char *out;

        cjose_header_set(h, CJOSE_HDR_ALG, alg, &err);
        if (kid)
                cjose_header_set(h, CJOSE_HDR_KID, kid, &err);
        jws = cjose_jws_sign(k, h, (const uint8_t *)payload, strlen(payload), &err);
        cr_assert(jws, "signing: %s", err.message);
        cr_assert(cjose_jws_export(jws, &compact, &err));
        out = strdup(compact);
        cjose_jws_release(jws);
        cjose_header_release(h);
        return out;
}

static char *claims(long exp_delta, const char *iss, const char *aud_json) {
        static char buf[1024];

        snprintf(buf, sizeof buf, "{\"iss\":\"%s\",\"aud\":%s,\"sub\":\"alice\",\"exp\":%ld,\"scope\":\"mcp\"}", iss,
                 aud_json, (long)NOW + exp_delta);
        return buf;
}

static enum jwt_verdict check(const char *token) {
        struct jwt_expect e = expect();
        json_object *c = NULL;
        enum jwt_verdict v = jwt_check(token, strlen(token), &keys, &e, &c);

        cr_assert_eq(v == JWT_VALID, c != NULL, "claims come with a valid token only");
        json_object_put(c);
        return v;
}

static char *b64(const char *s) {
        char *out = NULL;
        size_t n;
        cjose_err err;

        cr_assert(cjose_base64url_encode((const uint8_t *)s, strlen(s), &out, &n, &err));
        return out;
}

TestSuite(jwt_check, .init = setup, .fini = teardown);

Test(jwt_check, valid_tokens_give_their_claims) {
        struct jwt_expect e = expect();
        char *t = sign(rsa, "RS256", "rsa1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        json_object *c = NULL, *sub;

        cr_assert_eq(jwt_check(t, strlen(t), &keys, &e, &c), JWT_VALID);
        cr_assert(json_object_object_get_ex(c, "sub", &sub));
        cr_assert_str_eq(json_object_get_string(sub), "alice");
        json_object_put(c);
        free(t);
        t = sign(rsa, "PS256", "rsa1", claims(300, ISSUER, "[\"x\",\"" AUDIENCE "\"]"));
        cr_assert_eq(check(t), JWT_VALID, "PS256, aud an array");
        free(t);
        t = sign(ec, "ES256", "ec1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_VALID, "ES256");
        free(t);
        t = sign(rsa, "RS256", NULL, claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_VALID, "no kid: the keys that fit are tried");
        free(t);
        t = sign(rsa, "RS256", "rsa1", claims(-30, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_VALID, "expired less than the skew ago");
        free(t);
}

Test(jwt_check, time_issuer_audience) {
        char *t = sign(rsa, "RS256", "rsa1", claims(-61, ISSUER, "\"" AUDIENCE "\""));

        cr_assert_eq(check(t), JWT_EXPIRED);
        free(t);
        t = sign(rsa, "RS256", "rsa1", "{\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"exp\":1800000300,\"nbf\":1800000100}");
        cr_assert_eq(check(t), JWT_NOT_YET_VALID);
        free(t);
        t = sign(rsa, "RS256", "rsa1", "{\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\"}");
        cr_assert_eq(check(t), JWT_MALFORMED, "no exp");
        free(t);
        t = sign(rsa, "RS256", "rsa1", claims(300, "https://evil.example", "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_WRONG_ISSUER);
        free(t);
        t = sign(rsa, "RS256", "rsa1", claims(300, ISSUER, "\"http://127.0.0.1:9999/mcp\""));
        cr_assert_eq(check(t), JWT_WRONG_AUDIENCE);
        free(t);
        t = sign(rsa, "RS256", "rsa1", claims(300, ISSUER, "[1,{}]"));
        cr_assert_eq(check(t), JWT_WRONG_AUDIENCE);
        free(t);
}

Test(jwt_check, keys_and_signatures) {
        char *t = sign(rsa_other, "RS256", "rsa1", claims(300, ISSUER, "\"" AUDIENCE "\""));

        cr_assert_eq(check(t), JWT_BAD_SIGNATURE, "another key under a known kid");
        free(t);
        t = sign(rsa_other, "RS256", "rotated", claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_UNKNOWN_KID);
        free(t);
        t = sign(rsa_other, "RS256", NULL, claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_BAD_SIGNATURE, "no kid, no key verifies");
        free(t);
        t = sign(ec, "ES256", "rsa1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_ALG_NOT_ALLOWED, "ES256 by the kid of an RSA key");
        free(t);
        t = sign(rsa, "RS256", "ec1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_ALG_NOT_ALLOWED, "RS256 by the kid of an EC key");
        free(t);
}

Test(jwt_check, tampered_payload) {
        char *t = sign(rsa, "RS256", "rsa1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        char *dot1 = strchr(t, '.'), *dot2 = strchr(dot1 + 1, '.');
        char *evil = b64(claims(300, ISSUER, "\"" AUDIENCE "\"") /* same shape */);
        char forged[4096];

        /* sub changed to root, the signature kept */
        free(evil);
        evil = b64("{\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"sub\":\"root\",\"exp\":1800000300}");
        snprintf(forged, sizeof forged, "%.*s.%s%s", (int)(dot1 - t), t, evil, dot2);
        cr_assert_eq(check(forged), JWT_BAD_SIGNATURE);
        free(evil);
        free(t);
}

Test(jwt_check, algorithms_refused) {
        char *h = b64("{\"alg\":\"none\"}"), *p = b64(claims(300, ISSUER, "\"" AUDIENCE "\""));
        char none[4096];
        uint8_t secret[64];
        cjose_err err;
        cjose_jwk_t *oct;
        char *t;

        snprintf(none, sizeof none, "%s.%s.", h, p);
        cr_assert_eq(check(none), JWT_ALG_NOT_ALLOWED, "alg none");
        free(h);
        /* HS256 with the RSA key's public JSON as the secret: the classic confusion */
        t = public_json(rsa, "rsa1");
        oct = cjose_jwk_create_oct_spec((const uint8_t *)t, strlen(t), &err);
        free(t);
        t = sign(oct, "HS256", "rsa1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_ALG_NOT_ALLOWED, "HS256");
        free(t);
        memset(secret, 7, sizeof secret);
        cjose_jwk_release(oct);
        oct = cjose_jwk_create_oct_spec(secret, sizeof secret, &err);
        t = sign(oct, "HS256", "hs", claims(300, ISSUER, "\"" AUDIENCE "\""));
        cr_assert_eq(check(t), JWT_ALG_NOT_ALLOWED, "HS256 with a secret in the JWKS");
        free(t);
        cjose_jwk_release(oct);
        t = sign(rsa, "RS512", "rsa1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        {
                struct jwt_expect e = expect();
                json_object *c;

                e.algorithms = JWT_RS256;
                cr_assert_eq(jwt_check(t, strlen(t), &keys, &e, &c), JWT_ALG_NOT_ALLOWED, "not configured");
        }
        free(t);
        free(p);
        cr_assert_eq(jwt_alg_of_name("HS256"), 0);
        cr_assert_eq(jwt_alg_of_name("none"), 0);
        cr_assert_eq(jwt_alg_of_name("ES384"), JWT_ES384);
}

Test(jwt_check, malformed) {
        char big[JWT_MAX_LEN + 10];
        char *t = sign(rsa, "RS256", "rsa1", claims(300, ISSUER, "\"" AUDIENCE "\""));
        char *h = b64("[1]"), *p = b64("{}");
        char arr[256];

        cr_assert_eq(check(""), JWT_MALFORMED);
        cr_assert_eq(check("a.b"), JWT_MALFORMED);
        cr_assert_eq(check("a.b.c.d"), JWT_MALFORMED);
        cr_assert_eq(check("a b.c.d"), JWT_MALFORMED);
        cr_assert_eq(check(".b.c"), JWT_MALFORMED);
        snprintf(arr, sizeof arr, "%s.%s.AAAA", h, p);
        cr_assert_eq(check(arr), JWT_MALFORMED, "a header that is not an object");
        memset(big, 'A', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        memcpy(big, t, strlen(t)); /* a real token padded past the cap */
        cr_assert_eq(check(big), JWT_MALFORMED);
        free(h);
        free(p);
        free(t);
}

Test(jwt_check, jwks_text) {
        struct jwt_keys k;
        const char *small = "{\"keys\":[1,{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}";

        cr_assert_eq(jwt_keys_parse("[]", 2, &k), -EINVAL);
        cr_assert_eq(jwt_keys_parse("{\"keys\":{}}", 11, &k), -EINVAL);
        cr_assert_eq(jwt_keys_parse(small, strlen(small), &k), 0);
        cr_assert_eq(k.n, 0, "a 24-bit RSA key is not a key");
        jwt_keys_done(&k);
        /* cjose 0.6 aborts the process on such base64url (the fuzzer found it): left out first */
        small = "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"m=1k\",\"e\":\"AQAB\"},{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"a=\",\"y\":\"a===\"}]}";
        cr_assert_eq(jwt_keys_parse(small, strlen(small), &k), 0);
        cr_assert_eq(k.n, 0);
        jwt_keys_done(&k);
}

Test(jwt_check, metadata_urls) {
        static const struct {
                const char *issuer, *openid, *rfc8414;
        } cases[] = {
                { "https://id.example", "https://id.example/.well-known/openid-configuration",
                  "https://id.example/.well-known/oauth-authorization-server" },
                { "https://id.example/", "https://id.example/.well-known/openid-configuration",
                  "https://id.example/.well-known/oauth-authorization-server" },
                { "https://id.example/realms/agents", "https://id.example/realms/agents/.well-known/openid-configuration",
                  "https://id.example/.well-known/oauth-authorization-server/realms/agents" },
                { "http://127.0.0.1:8080/t/", "http://127.0.0.1:8080/t/.well-known/openid-configuration",
                  "http://127.0.0.1:8080/.well-known/oauth-authorization-server/t" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char *o = issuer_keys_metadata_url(cases[i].issuer, true), *r = issuer_keys_metadata_url(cases[i].issuer, false);

                cr_assert_str_eq(o, cases[i].openid);
                cr_assert_str_eq(r, cases[i].rfc8414);
                free(o);
                free(r);
        }
}
