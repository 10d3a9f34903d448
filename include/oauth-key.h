/* The key the sign-in tokens are sealed with at rest (oauth-seal.h), found once:
 *   1. the credential "oauth-key" (LoadCredential=oauth-key:... in mcpvisor.service): its
 *      SHA-256 is the key, so any text of enough entropy serves;
 *   2. else a key made once (OpenSSL's RAND_bytes) and kept in STATE/oauth-key.cred sealed
 *      by `systemd-creds encrypt` (the host's key, or its TPM2), opened with
 *      `systemd-creds decrypt` at each start;
 *   3. else none: tokens are not stored, and the error names both ways to give one.
 * systemd-creds runs as a child waited for (a host key's seal takes milliseconds). */
#pragma once

#include <stdint.h>

#include "oauth-seal.h"

#define OAUTH_KEY_CREDENTIAL "oauth-key"

/* 0 with the key in key, or a negative errno with *error (malloc'd) saying what to do. */
int oauth_key_load(const char *credentials_dir, const char *state_dir, uint8_t key[OAUTH_KEY_SIZE], char **error);
