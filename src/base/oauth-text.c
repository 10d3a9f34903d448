/* PKCE, state and percent-encoding for OAuth; see oauth-text.h. */
#include "oauth-text.h"

#include <cjose/base64.h>
#include <errno.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int oauth_base64url(const uint8_t *data, size_t len, char **ret) {
        char *out = NULL;
        size_t out_len = 0;
        cjose_err err;

        if (!cjose_base64url_encode(data, len, &out, &out_len, &err))
                return -ENOMEM;
        /* cjose allocates with its allocator, free() unless someone set another */
        *ret = out;
        return 0;
}

int oauth_random_text(size_t bytes, char **ret) {
        uint8_t buf[64];
        int r;

        if (bytes == 0 || bytes > sizeof buf)
                return -EINVAL;
        if (RAND_bytes(buf, (int)bytes) != 1)
                return -EIO;
        r = oauth_base64url(buf, bytes, ret);
        explicit_bzero(buf, sizeof buf);
        return r;
}

int oauth_pkce_challenge(const char *verifier, char **ret) {
        uint8_t digest[SHA256_DIGEST_LENGTH];

        SHA256((const unsigned char *)verifier, strlen(verifier), digest);
        return oauth_base64url(digest, sizeof digest, ret);
}

static bool unreserved(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
               c == '_' || c == '~';
}

static void encode(FILE *f, const char *text) {
        for (const unsigned char *p = (const unsigned char *)text; *p; p++)
                if (unreserved(*p))
                        fputc(*p, f);
                else
                        fprintf(f, "%%%02X", *p);
}

int oauth_basic_credentials(const char *id, const char *secret, char **ret) {
        _cleanup_free_ char *pair = NULL;
        char *b64 = NULL, *text = NULL;
        size_t size = 0, b64_len = 0;
        FILE *f = open_memstream(&pair, &size);
        cjose_err err;
        int r;

        if (!f)
                return -ENOMEM;
        encode(f, id);
        fputc(':', f);
        encode(f, secret);
        if (fclose(f) != 0)
                return -ENOMEM;
        if (!cjose_base64_encode((const uint8_t *)pair, strlen(pair), &b64, &b64_len, &err))
                r = -ENOMEM;
        else
                r = asprintf(&text, "Basic %s", b64) < 0 ? -ENOMEM : 0;
        explicit_bzero(pair, strlen(pair));
        if (b64)
                explicit_bzero(b64, b64_len);
        free(b64);
        *ret = r == 0 ? text : NULL;
        return r;
}

char *oauth_form(const char *url, const struct oauth_field *fields) {
        char *text = NULL, sep = 0;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        if (url) {
                fputs(url, f);
                sep = strchr(url, '?') ? '&' : '?';
        }
        for (; fields->name; fields++) {
                if (!fields->value)
                        continue;
                if (sep)
                        fputc(sep, f);
                encode(f, fields->name);
                fputc('=', f);
                encode(f, fields->value);
                sep = '&';
        }
        if (fclose(f) != 0) {
                if (text)
                        explicit_bzero(text, size);
                free(text);
                return NULL;
        }
        return text;
}
