/* requestState for the daemon's multi round-trip requests; see mrtr-seal.h. */
#include "mrtr-seal.h"

#include <endian.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define NONCE_LEN 12
#define TAG_LEN 16
/* version, expires, round, request digest; then the rest (mrtr_seal()) */
#define FIXED_LEN (1 + 8 + 8 + MRTR_DIGEST_LEN)
#define SEAL_VERSION 2
/* What the seal is for, authenticated with it: a key shared with another use cannot make
 * one of ours. */
static const unsigned char AAD[] = "mcpvisor requestState v2";

int mrtr_key_generate(struct mrtr_key *k) {
        return RAND_bytes(k->bytes, sizeof k->bytes) == 1 ? 0 : -EIO;
}

int mrtr_key_from_secret(struct mrtr_key *k, const void *secret, size_t len) {
        unsigned int n = 0;

        if (len < MRTR_KEY_LEN)
                return -EINVAL;
        return EVP_Digest(secret, len, k->bytes, &n, EVP_sha256(), NULL) == 1 && n == MRTR_KEY_LEN ? 0 : -EIO;
}

static int compare_keys(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The value's JSON with an object's members in sorted order, at every depth. */
static void digest_value(EVP_MD_CTX *md, json_object *v, bool top) {
        const char *text;
        size_t n = 0, i;

        if (!json_object_is_type(v, json_type_object)) {
                if (json_object_is_type(v, json_type_array)) {
                        EVP_DigestUpdate(md, "[", 1);
                        for (i = 0; i < json_object_array_length(v); i++) {
                                if (i)
                                        EVP_DigestUpdate(md, ",", 1);
                                digest_value(md, json_object_array_get_idx(v, i), false);
                        }
                        EVP_DigestUpdate(md, "]", 1);
                        return;
                }
                text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
                EVP_DigestUpdate(md, text, strlen(text));
                return;
        }
        _cleanup_free_ const char **keys = calloc(json_object_object_length(v) + 1, sizeof *keys);
        if (!keys)
                abort(); /* a digest cannot fail half-way: as any other allocation of json-c's */
        json_object_object_foreach(v, key, val) {
                (void)val;
                if (top && (strcmp(key, "_meta") == 0 || strcmp(key, "inputResponses") == 0 ||
                            strcmp(key, "requestState") == 0))
                        continue;
                keys[n++] = key;
        }
        qsort(keys, n, sizeof *keys, compare_keys);
        EVP_DigestUpdate(md, "{", 1);
        for (i = 0; i < n; i++) {
                json_object *name = json_object_new_string(keys[i]);

                if (i)
                        EVP_DigestUpdate(md, ",", 1);
                text = json_object_to_json_string_ext(name, JSON_C_TO_STRING_PLAIN);
                EVP_DigestUpdate(md, text, strlen(text));
                EVP_DigestUpdate(md, ":", 1);
                json_object_put(name);
                digest_value(md, json_object_object_get(v, keys[i]), false);
        }
        EVP_DigestUpdate(md, "}", 1);
}

void mrtr_request_digest(const char *method, json_object *params, unsigned char ret[MRTR_DIGEST_LEN]) {
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        unsigned int n;

        if (!md)
                abort();
        EVP_DigestInit_ex(md, EVP_sha256(), NULL);
        EVP_DigestUpdate(md, method, strlen(method) + 1);
        if (params)
                digest_value(md, params, true);
        EVP_DigestFinal_ex(md, ret, &n);
        EVP_MD_CTX_free(md);
}

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64url_encode(const unsigned char *in, size_t len) {
        char *out = malloc(len / 3 * 4 + 5), *p = out;
        uint32_t v;
        size_t i;

        if (!out)
                return NULL;
        for (i = 0; i + 2 < len; i += 3) {
                v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
                *p++ = B64URL[v >> 18 & 63], *p++ = B64URL[v >> 12 & 63], *p++ = B64URL[v >> 6 & 63], *p++ = B64URL[v & 63];
        }
        if (len - i == 1) {
                v = (uint32_t)in[i] << 16;
                *p++ = B64URL[v >> 18 & 63], *p++ = B64URL[v >> 12 & 63];
        } else if (len - i == 2) {
                v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
                *p++ = B64URL[v >> 18 & 63], *p++ = B64URL[v >> 12 & 63], *p++ = B64URL[v >> 6 & 63];
        }
        *p = '\0';
        return out;
}

/* The bytes of base64url text (no padding) into out (*len bytes at most); -EINVAL when it
 * is not exactly that. */
static int b64url_decode(const char *text, unsigned char *out, size_t *len) {
        size_t n = strlen(text), o = 0, i;
        uint32_t v = 0;
        int bits = 0;

        if (n % 4 == 1 || n / 4 * 3 + 2 > *len + 2)
                return -EINVAL;
        for (i = 0; i < n; i++) {
                const char *at = memchr(B64URL, text[i], 64);

                if (!at || !text[i])
                        return -EINVAL;
                v = v << 6 | (uint32_t)(at - B64URL);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (o >= *len)
                                return -EINVAL;
                        out[o++] = (unsigned char)(v >> bits);
                }
        }
        if (v & ((1u << bits) - 1))
                return -EINVAL; /* leftover bits set: not the canonical form */
        *len = o;
        return 0;
}

/* AES-256-GCM of in (len bytes) under nonce into out, its tag after it; -EIO on failure. */
static int gcm(bool seal, const struct mrtr_key *k, const unsigned char *nonce, const unsigned char *in, size_t len,
               unsigned char *out, unsigned char *tag) {
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        int n = 0, ok;

        if (!ctx)
                return -ENOMEM;
        ok = (seal ? EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, k->bytes, nonce)
                   : EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, k->bytes, nonce)) == 1;
        ok = ok && (seal ? EVP_EncryptUpdate(ctx, NULL, &n, AAD, sizeof AAD - 1)
                         : EVP_DecryptUpdate(ctx, NULL, &n, AAD, sizeof AAD - 1)) == 1;
        ok = ok && (seal ? EVP_EncryptUpdate(ctx, out, &n, in, (int)len) : EVP_DecryptUpdate(ctx, out, &n, in, (int)len)) == 1;
        if (ok && seal)
                ok = EVP_EncryptFinal_ex(ctx, out + n, &n) == 1 &&
                     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) == 1;
        else if (ok)
                ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1 &&
                     EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
        EVP_CIPHER_CTX_free(ctx);
        return ok ? 0 : -EIO;
}

/* The plaintext: FIXED_LEN bytes, then the principal's length (one byte) and bytes, the
 * server's likewise, a byte saying whether a server state follows, and its bytes. */
char *mrtr_seal(const struct mrtr_key *k, const struct mrtr_claims *claims) {
        size_t plen = strnlen(claims->principal, MRTR_PRINCIPAL_MAX - 1);
        size_t slen = claims->server ? strlen(claims->server) : 0;
        size_t tlen = claims->server_state ? strlen(claims->server_state) : 0;
        size_t len = FIXED_LEN + 1 + plen + 1 + slen + 1 + tlen, at = FIXED_LEN;
        _cleanup_free_ unsigned char *plain = NULL, *box = NULL;
        uint64_t be;

        if (slen >= MRTR_SERVER_MAX || len > SIZE_MAX / 2)
                return NULL;
        plain = malloc(len);
        box = malloc(NONCE_LEN + len + TAG_LEN);
        if (!plain || !box)
                return NULL;
        plain[0] = SEAL_VERSION;
        be = htobe64(claims->expires);
        memcpy(plain + 1, &be, 8);
        be = htobe64(claims->round);
        memcpy(plain + 9, &be, 8);
        memcpy(plain + 17, claims->request, MRTR_DIGEST_LEN);
        plain[at++] = (unsigned char)plen;
        memcpy(plain + at, claims->principal, plen);
        at += plen;
        plain[at++] = (unsigned char)slen;
        memcpy(plain + at, claims->server ? claims->server : "", slen);
        at += slen;
        plain[at++] = claims->server_state != NULL;
        memcpy(plain + at, claims->server_state ? claims->server_state : "", tlen);
        if (RAND_bytes(box, NONCE_LEN) != 1 || gcm(true, k, box, plain, len, box + NONCE_LEN, box + NONCE_LEN + len) < 0)
                return NULL;
        return b64url_encode(box, NONCE_LEN + len + TAG_LEN);
}

/* The variable part of an opened plaintext read into ret; false when it does not parse. */
static bool read_tail(const unsigned char *p, size_t n, const char *principal, bool *foreign, struct mrtr_opened *ret) {
        size_t plen, slen;

        if (n < 1 || (plen = p[0]) + 1 > n)
                return false;
        *foreign = plen != strlen(principal) || memcmp(p + 1, principal, plen) != 0;
        p += 1 + plen, n -= 1 + plen;
        if (n < 1 || (slen = p[0]) + 2 > n)
                return false;
        memcpy(ret->server, p + 1, slen);
        ret->server[slen] = '\0';
        p += 1 + slen, n -= 1 + slen;
        if (p[0] > 1 || (p[0] == 0 && n != 1))
                return false;
        ret->server_state = NULL;
        if (p[0] == 1 && !(ret->server_state = strndup((const char *)p + 1, n - 1)))
                return false;
        if (ret->server_state && strlen(ret->server_state) != n - 1) {
                free(ret->server_state); /* a NUL inside: not what was sealed */
                ret->server_state = NULL;
                return false;
        }
        return true;
}

enum mrtr_open_result mrtr_open_full(const struct mrtr_key *k, const char *text, const char *principal,
                                     const unsigned char request[MRTR_DIGEST_LEN], uint64_t now, struct mrtr_opened *ret) {
        _cleanup_free_ unsigned char *box = NULL, *plain = NULL;
        size_t n, len;
        bool foreign;
        uint64_t be;

        if (!text)
                return MRTR_OPEN_FORGED;
        n = strlen(text) / 4 * 3 + 3;
        box = malloc(n);
        plain = malloc(n);
        if (!box || !plain || b64url_decode(text, box, &n) < 0 || n < NONCE_LEN + FIXED_LEN + TAG_LEN)
                return MRTR_OPEN_FORGED;
        len = n - NONCE_LEN - TAG_LEN;
        if (gcm(false, k, box, box + NONCE_LEN, len, plain, box + NONCE_LEN + len) < 0 || plain[0] != SEAL_VERSION)
                return MRTR_OPEN_FORGED;
        *ret = (struct mrtr_opened){ 0 };
        if (!read_tail(plain + FIXED_LEN, len - FIXED_LEN, principal, &foreign, ret))
                return MRTR_OPEN_FORGED; /* sealed by us, so never: a key shared with a bug */
        memcpy(&be, plain + 1, 8);
        if (be64toh(be) <= now || foreign || memcmp(plain + 17, request, MRTR_DIGEST_LEN) != 0) {
                free(ret->server_state);
                ret->server_state = NULL;
                return be64toh(be) <= now ? MRTR_OPEN_EXPIRED : foreign ? MRTR_OPEN_FOREIGN : MRTR_OPEN_OTHER_REQUEST;
        }
        memcpy(&be, plain + 9, 8);
        ret->round = be64toh(be);
        return MRTR_OPEN_OK;
}

enum mrtr_open_result mrtr_open(const struct mrtr_key *k, const char *text, const char *principal,
                                const unsigned char request[MRTR_DIGEST_LEN], uint64_t now, uint64_t *ret_round) {
        struct mrtr_opened opened;
        enum mrtr_open_result r = mrtr_open_full(k, text, principal, request, now, &opened);

        if (r == MRTR_OPEN_OK) {
                *ret_round = opened.round;
                free(opened.server_state);
        }
        return r;
}

const char *mrtr_open_result_to_string(enum mrtr_open_result r) {
        static const char *const names[] = {
                [MRTR_OPEN_OK] = "valid",
                [MRTR_OPEN_FORGED] = "not a requestState of this daemon's (forged or altered)",
                [MRTR_OPEN_EXPIRED] = "expired",
                [MRTR_OPEN_FOREIGN] = "made for another principal",
                [MRTR_OPEN_OTHER_REQUEST] = "made for another request",
        };
        return names[r];
}
