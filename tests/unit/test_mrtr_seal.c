/* The requestState the daemon seals for a legacy server's requests (mrtr-seal.c): what it
 * binds, and each way a state is refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "mrtr-seal.h"

static struct mrtr_key key, other_key;
static struct mrtr_claims claims;

static void setup(void) {
        json_object *params = json_tokener_parse("{\"name\":\"ask\",\"arguments\":{\"b\":1,\"a\":[1,{\"y\":2,\"x\":1}]}}");

        cr_assert_eq(mrtr_key_generate(&key), 0);
        cr_assert_eq(mrtr_key_generate(&other_key), 0);
        claims = (struct mrtr_claims){ .principal = "uid:1000", .round = 42, .expires = 2000 };
        mrtr_request_digest("tools/call", params, claims.request);
        json_object_put(params);
}

TestSuite(mrtr_seal, .init = setup);

Test(mrtr_seal, round_trip) {
        _cleanup_free_ char *text = mrtr_seal(&key, &claims);
        uint64_t round = 0;

        cr_assert_not_null(text);
        cr_assert_eq(strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), strlen(text));
        cr_assert_eq(mrtr_open(&key, text, "uid:1000", claims.request, 1000, &round), MRTR_OPEN_OK);
        cr_assert_eq(round, 42);
        cr_assert_null(strstr(text, "uid"), "the principal is not readable in the state");
}

Test(mrtr_seal, two_seals_differ) {
        _cleanup_free_ char *a = mrtr_seal(&key, &claims), *b = mrtr_seal(&key, &claims);

        cr_assert_str_neq(a, b, "a fresh nonce each time");
}

Test(mrtr_seal, tampered_forged_and_other_key) {
        _cleanup_free_ char *text = mrtr_seal(&key, &claims);
        _cleanup_free_ char *longer = NULL;
        uint64_t round;
        size_t n = strlen(text);

        for (size_t i = 0; i < n; i++) {
                char was = text[i];

                text[i] = was == 'A' ? 'B' : 'A';
                cr_assert_eq(mrtr_open(&key, text, "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED,
                             "a change at %zu", i);
                text[i] = was;
        }
        cr_assert_eq(asprintf(&longer, "%s-TAMPERED", text) > 0, 1);
        cr_assert_eq(mrtr_open(&key, longer, "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED);
        text[n / 2] = '\0';
        cr_assert_eq(mrtr_open(&key, text, "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED);
        cr_assert_eq(mrtr_open(&key, "", "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED);
        cr_assert_eq(mrtr_open(&key, "not base64 at all!", "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED);
        cr_assert_eq(mrtr_open(&key, NULL, "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED);

        _cleanup_free_ char *theirs = mrtr_seal(&other_key, &claims);
        cr_assert_eq(mrtr_open(&key, theirs, "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED);
}

Test(mrtr_seal, expired) {
        _cleanup_free_ char *text = mrtr_seal(&key, &claims);
        uint64_t round;

        cr_assert_eq(mrtr_open(&key, text, "uid:1000", claims.request, 1999, &round), MRTR_OPEN_OK);
        cr_assert_eq(mrtr_open(&key, text, "uid:1000", claims.request, 2000, &round), MRTR_OPEN_EXPIRED);
}

Test(mrtr_seal, wrong_principal) {
        _cleanup_free_ char *text = mrtr_seal(&key, &claims);
        uint64_t round;

        cr_assert_eq(mrtr_open(&key, text, "uid:1001", claims.request, 1000, &round), MRTR_OPEN_FOREIGN);
        cr_assert_eq(mrtr_open(&key, text, "uid:100", claims.request, 1000, &round), MRTR_OPEN_FOREIGN);
        cr_assert_eq(mrtr_open(&key, text, "token:alice", claims.request, 1000, &round), MRTR_OPEN_FOREIGN);
}

Test(mrtr_seal, wrong_request) {
        _cleanup_free_ char *text = mrtr_seal(&key, &claims);
        unsigned char other[MRTR_DIGEST_LEN];
        json_object *params = json_tokener_parse("{\"name\":\"ask\",\"arguments\":{\"b\":2}}");
        uint64_t round;

        mrtr_request_digest("tools/call", params, other);
        cr_assert_eq(mrtr_open(&key, text, "uid:1000", other, 1000, &round), MRTR_OPEN_OTHER_REQUEST);
        json_object_put(params);
}

/* The retry carries the same request with inputResponses, requestState and its own _meta,
 * members maybe in another order: the same digest. Another method is another request. */
Test(mrtr_seal, digest_of_the_retry) {
        json_object *retry = json_tokener_parse(
                "{\"_meta\":{\"progressToken\":7},\"arguments\":{\"a\":[1,{\"x\":1,\"y\":2}],\"b\":1},\"name\":\"ask\","
                "\"inputResponses\":{\"k\":{}},\"requestState\":\"s\"}");
        json_object *same = json_tokener_parse("{\"name\":\"ask\",\"arguments\":{\"b\":1,\"a\":[1,{\"y\":2,\"x\":1}]}}");
        json_object *inner = json_tokener_parse("{\"name\":\"ask\",\"arguments\":{\"b\":1,\"_meta\":1,\"a\":[1,{\"y\":2,\"x\":1}]}}");
        unsigned char d[MRTR_DIGEST_LEN];

        mrtr_request_digest("tools/call", retry, d);
        cr_assert_arr_eq(d, claims.request, MRTR_DIGEST_LEN);
        mrtr_request_digest("prompts/get", same, d);
        cr_assert_arr_neq(d, claims.request, MRTR_DIGEST_LEN);
        mrtr_request_digest("tools/call", inner, d);
        cr_assert_arr_neq(d, claims.request, MRTR_DIGEST_LEN, "only the top level's _meta is left out");
        json_object_put(retry);
        json_object_put(same);
        json_object_put(inner);
}

Test(mrtr_seal, key_from_secret) {
        struct mrtr_key a, b;

        cr_assert_eq(mrtr_key_from_secret(&a, "short", 5), -EINVAL);
        cr_assert_eq(mrtr_key_from_secret(&a, "0123456789abcdef0123456789abcdef", 32), 0);
        cr_assert_eq(mrtr_key_from_secret(&b, "0123456789abcdef0123456789abcdef", 32), 0);
        cr_assert_arr_eq(a.bytes, b.bytes, MRTR_KEY_LEN, "two daemons with one credential share the key");
}

/* A modern server's own state travels inside the seal, unreadable, with the server's name;
 * none given is told apart from an empty one. */
Test(mrtr_seal, a_servers_state_inside) {
        static const char state[] = "{\"round\":1,\"answers\":[\"secret-answer\"]}";
        struct mrtr_claims c = claims;
        struct mrtr_opened opened;
        uint64_t round;

        c.round = 0;
        c.server = "github";
        c.server_state = state;
        _cleanup_free_ char *text = mrtr_seal(&key, &c);
        cr_assert_not_null(text);
        cr_assert_null(strstr(text, "secret"));
        cr_assert_eq(mrtr_open_full(&key, text, "uid:1000", claims.request, 1000, &opened), MRTR_OPEN_OK);
        cr_assert_str_eq(opened.server, "github");
        cr_assert_str_eq(opened.server_state, state);
        free(opened.server_state);
        cr_assert_eq(mrtr_open_full(&key, text, "uid:1001", claims.request, 1000, &opened), MRTR_OPEN_FOREIGN);
        cr_assert_eq(mrtr_open_full(&key, text, "uid:1000", claims.request, 2000, &opened), MRTR_OPEN_EXPIRED);
        text[strlen(text) / 2] ^= 1;
        cr_assert_eq(mrtr_open_full(&key, text, "uid:1000", claims.request, 1000, &opened), MRTR_OPEN_FORGED);

        c.server_state = NULL;
        _cleanup_free_ char *none = mrtr_seal(&key, &c);
        cr_assert_eq(mrtr_open_full(&key, none, "uid:1000", claims.request, 1000, &opened), MRTR_OPEN_OK);
        cr_assert_str_eq(opened.server, "github");
        cr_assert_null(opened.server_state);
        c.server_state = "";
        _cleanup_free_ char *empty = mrtr_seal(&key, &c);
        cr_assert_eq(mrtr_open_full(&key, empty, "uid:1000", claims.request, 1000, &opened), MRTR_OPEN_OK);
        cr_assert_str_eq(opened.server_state, "");
        free(opened.server_state);
        /* a round of the daemon's own names no server */
        _cleanup_free_ char *own = mrtr_seal(&key, &claims);
        cr_assert_eq(mrtr_open_full(&key, own, "uid:1000", claims.request, 1000, &opened), MRTR_OPEN_OK);
        cr_assert_str_eq(opened.server, "");
        cr_assert_eq(opened.round, 42);
        cr_assert_eq(mrtr_open(&key, text, "uid:1000", claims.request, 1000, &round), MRTR_OPEN_FORGED);
}
