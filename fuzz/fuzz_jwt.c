/* Fuzz target "jwt": an access token as an unauthenticated peer presents it, through the
 * check the HTTP front door makes of it (jwt-check.c), and a JWKS as an issuer serves it.
 *
 * Input: [1 byte: bit 0 set, the rest is a JWKS's text; clear, a token] [the rest]
 *
 * The keys are public keys made once for the corpus (fuzz/corpus/jwt holds tokens they
 * verify, of every algorithm family, so mutations start from signed tokens).
 *
 * Invariants:
 *   - claims come back with JWT_VALID and only with it;
 *   - a valid token names the expected issuer and is not expired;
 *   - a token longer than JWT_MAX_LEN is malformed before anything else;
 *   - a JWKS parsed holds at most JWT_MAX_KEYS keys, each imported. */
#include <string.h>

#include "fuzz-input.h"
#include "jwt-check.h"

#define ISSUER "https://id.example"

static const char jwks_text[] = "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"slIHEBJDNRcUOsfEhmCOTEmRYbMJeAyoWgQxq7AUwC9_FeotWXrkLIXGgTP1paS3SpXIdk-7f4mpgM8IehsCIExPxZJPcSm4Pt8W80Zjt4e2KbNsHqpRBAkneIrHLqjJrUVKUUHZjLTGMQDlINk9qAX6fL5cP0Uzh0DMrgvcT9uBJV71xt3gThSLluqTIl_rmt__u1jOShlft-qUiFQ5TNfIBUqX80sQUp6Gti0KEfeXKvr1mZ3JIpJzTFGniqiKwTVDpavtYV-6kpNuFDiuzCNfIch7BHYfGMpVV97k1WokwwQKxmK1kOv_LXetNp0GoQcs5mQLZtEj9cdUIxbYJQ\",\"e\":\"AQAB\",\"kid\":\"fuzz1\",\"alg\":\"RS256\",\"use\":\"sig\"},{\"kty\":\"EC\",\"x\":\"oIlT4cHcYKfKoibjwQFMeANwO7qlcuo1CX4iqF4FGxs\",\"y\":\"fpXC8RLytrUXOIQJByp06vR4XBJCLJ40hkWT0EkkMks\",\"crv\":\"P-256\",\"kid\":\"fuzz2\"}]}";
static const char *const audiences[] = { "http://127.0.0.1:8765/mcp", NULL };

static struct jwt_keys *keys(void) {
        static struct jwt_keys k;
        static bool parsed;

        if (!parsed) {
                fuzz_check(jwt_keys_parse(jwks_text, strlen(jwks_text), &k) == 0 && k.n == 2, "the harness's JWKS");
                parsed = true;
        }
        return &k;
}

static void check_token(const char *data, size_t size) {
        struct jwt_expect e = { .issuer = ISSUER, .audiences = audiences, .algorithms = JWT_DEFAULT_ALGS, .skew = 60,
                                .now = 1800000000 };
        json_object *claims = NULL, *v;
        enum jwt_verdict verdict = jwt_check(data, size, keys(), &e, &claims);

        fuzz_check((verdict == JWT_VALID) == (claims != NULL), "claims without a valid token, or none with one");
        fuzz_check(size <= JWT_MAX_LEN || verdict == JWT_MALFORMED, "a token past the cap not refused as malformed");
        if (claims) {
                fuzz_check(json_object_object_get_ex(claims, "iss", &v) && strcmp(json_object_get_string(v), ISSUER) == 0,
                           "valid with another issuer");
                fuzz_check(json_object_object_get_ex(claims, "exp", &v) && json_object_get_int64(v) > e.now - e.skew,
                           "valid and expired");
        }
        json_object_put(claims);
}

static void check_jwks(const char *data, size_t size) {
        struct jwt_keys k;

        if (jwt_keys_parse(data, size, &k) < 0)
                return;
        fuzz_check(k.n <= JWT_MAX_KEYS, "more keys than the cap");
        for (size_t i = 0; i < k.n; i++)
                fuzz_check(k.keys[i].jwk != NULL, "a key not imported");
        jwt_keys_done(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { data, size };
        bool jwks = take_u8(&in) & 1;

        if (jwks)
                check_jwks((const char *)in.data, in.size);
        else
                check_token((const char *)in.data, in.size);
        return 0;
}
