/* Tokens sealed with AES-256-GCM and written atomically; see oauth-seal.h. */
#include "oauth-seal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

#define MAGIC "MVT1"
#define MAGIC_LEN 4
#define IV_LEN 12
#define TAG_LEN 16
#define HEAD_LEN (MAGIC_LEN + IV_LEN + TAG_LEN)

static void ctx_freep(EVP_CIPHER_CTX **p) {
        EVP_CIPHER_CTX_free(*p);
}

int oauth_seal(const uint8_t key[OAUTH_KEY_SIZE], const char *aad, const char *plain, size_t len, uint8_t **ret,
               size_t *ret_len) {
        __attribute__((cleanup(ctx_freep))) EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        uint8_t *out = len < OAUTH_SEALED_MAX ? malloc(HEAD_LEN + len + 1) : NULL;
        int n = 0, tail = 0;

        if (!ctx || !out) {
                free(out);
                return -ENOMEM;
        }
        memcpy(out, MAGIC, MAGIC_LEN);
        if (RAND_bytes(out + MAGIC_LEN, IV_LEN) != 1 ||
            EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, IV_LEN, NULL) != 1 ||
            EVP_EncryptInit_ex(ctx, NULL, NULL, key, out + MAGIC_LEN) != 1 ||
            EVP_EncryptUpdate(ctx, NULL, &n, (const uint8_t *)aad, (int)strlen(aad)) != 1 ||
            EVP_EncryptUpdate(ctx, out + HEAD_LEN, &n, (const uint8_t *)plain, (int)len) != 1 ||
            EVP_EncryptFinal_ex(ctx, out + HEAD_LEN + n, &tail) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + MAGIC_LEN + IV_LEN) != 1) {
                free(out);
                return -EIO;
        }
        *ret = out;
        *ret_len = HEAD_LEN + (size_t)n + (size_t)tail;
        return 0;
}

int oauth_unseal(const uint8_t key[OAUTH_KEY_SIZE], const char *aad, const uint8_t *sealed, size_t len, char **ret) {
        __attribute__((cleanup(ctx_freep))) EVP_CIPHER_CTX *ctx = NULL;
        uint8_t tag[TAG_LEN];
        char *out;
        int n = 0, tail = 0;

        if (len < HEAD_LEN || len > OAUTH_SEALED_MAX || memcmp(sealed, MAGIC, MAGIC_LEN) != 0)
                return -EBADMSG;
        ctx = EVP_CIPHER_CTX_new();
        out = malloc(len - HEAD_LEN + 1);
        if (!ctx || !out) {
                free(out);
                return -ENOMEM;
        }
        memcpy(tag, sealed + MAGIC_LEN + IV_LEN, TAG_LEN);
        if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, IV_LEN, NULL) != 1 ||
            EVP_DecryptInit_ex(ctx, NULL, NULL, key, sealed + MAGIC_LEN) != 1 ||
            EVP_DecryptUpdate(ctx, NULL, &n, (const uint8_t *)aad, (int)strlen(aad)) != 1 ||
            EVP_DecryptUpdate(ctx, (uint8_t *)out, &n, sealed + HEAD_LEN, (int)(len - HEAD_LEN)) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) != 1 ||
            EVP_DecryptFinal_ex(ctx, (uint8_t *)out + n, &tail) != 1) {
                explicit_bzero(out, len - HEAD_LEN + 1);
                free(out);
                return -EBADMSG;
        }
        out[n + tail] = '\0';
        if (strlen(out) != (size_t)(n + tail)) { /* a NUL inside: not a text we sealed */
                explicit_bzero(out, len - HEAD_LEN + 1);
                free(out);
                return -EBADMSG;
        }
        *ret = out;
        return 0;
}

static int write_all(int fd, const uint8_t *data, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, data, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

int oauth_file_write(const char *path, const uint8_t *data, size_t len) {
        _cleanup_free_ char *tmp = NULL;
        int fd, r;

        if (asprintf(&tmp, "%s.tmp%ld", path, (long)getpid()) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, data, len);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

int oauth_file_read(const char *path, uint8_t **ret, size_t *ret_len) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        uint8_t *buf;
        size_t len = 0;

        if (fd < 0)
                return -errno;
        buf = malloc(OAUTH_SEALED_MAX + 1);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        for (;;) {
                ssize_t n = read(fd, buf + len, OAUTH_SEALED_MAX + 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = -errno;
                        close(fd);
                        free(buf);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > OAUTH_SEALED_MAX) {
                        close(fd);
                        free(buf);
                        return -EFBIG;
                }
        }
        close(fd);
        *ret = buf;
        *ret_len = len;
        return 0;
}
