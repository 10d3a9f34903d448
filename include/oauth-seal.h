/* Tokens at rest: a text sealed with AES-256-GCM (OpenSSL EVP) under a 32-byte key, bound
 * by its additional data to what it is for (a server's name and a user), so that a file
 * copied to another server's or user's name, or changed by one bit, opens to nothing; and
 * written atomically (a temporary file in the same directory, 0600, O_CLOEXEC, fsync,
 * rename). Pure but for the file functions. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define OAUTH_KEY_SIZE 32
/* The largest sealed file read back: tokens and a client registration are a few KiB. */
#define OAUTH_SEALED_MAX (64 * 1024)

/* "MVT1", a random 12-byte IV, the 16-byte tag, then the ciphertext. Malloc'd into
 * *ret (*ret_len bytes); 0, -EIO (OpenSSL failed) or -ENOMEM. */
int oauth_seal(const uint8_t key[OAUTH_KEY_SIZE], const char *aad, const char *plain, size_t len, uint8_t **ret,
               size_t *ret_len);
/* The text sealed (NUL-terminated, malloc'd), or -EBADMSG when the bytes are not one
 * sealed under this key and aad (tampered, truncated, another key, another name). */
int oauth_unseal(const uint8_t key[OAUTH_KEY_SIZE], const char *aad, const uint8_t *sealed, size_t len, char **ret);

/* path replaced by data atomically, mode 0600. 0 or a negative errno. */
int oauth_file_write(const char *path, const uint8_t *data, size_t len);
/* path's bytes (at most OAUTH_SEALED_MAX: -EFBIG). Malloc'd; 0 or a negative errno (-ENOENT: none). */
int oauth_file_read(const char *path, uint8_t **ret, size_t *ret_len);
