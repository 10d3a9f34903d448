/* The key the sign-in tokens are sealed with at rest (oauth-seal.h), from the first of its
 * sources that has one, each behind the same table of operations:
 *   1. the credential "oauth-key" (LoadCredential=oauth-key:... in mcpvisor.service): its
 *      SHA-256 is the key, so any text of enough entropy serves; read at once;
 *   2. else a key made once (OpenSSL's RAND_bytes) and kept in STATE/oauth-key.cred sealed
 *      by `systemd-creds encrypt` (the host's key, or its TPM2), opened with
 *      `systemd-creds decrypt`: a child process whose pipes and exit the loop watches, so
 *      a slow TPM2 never stalls the daemon;
 *   3. else none: tokens are not stored, and the error names both ways to give one.
 * systemd-creds is looked for in $PATH, then /usr/bin and /bin. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "oauth-seal.h"

#define OAUTH_KEY_CREDENTIAL "oauth-key"

struct event_base;
struct oauth_key_load;

/* The key (NULL on failure, with error saying what to do); called once, from the loop,
 * never before oauth_key_load() returned. The load may be freed from here. */
typedef void (*oauth_key_done_fn)(const uint8_t *key, const char *error, void *userdata);

/* Finds the key: 0 with it in key at once (a credential); 1 when it is under way (*ret,
 * to free; done follows); or a negative errno with *error (malloc'd) saying what to do. */
int oauth_key_load(struct event_base *base, const char *credentials_dir, const char *state_dir,
                   uint8_t key[OAUTH_KEY_SIZE], oauth_key_done_fn done, void *userdata, struct oauth_key_load **ret,
                   char **error);
/* Whether pid is the load's child: reaped then (the daemon's reaper asks before it reaps
 * a child it does not know). */
bool oauth_key_load_reap(struct oauth_key_load *l, pid_t pid);
/* Ends it (its child killed and reaped); done is not called. NULL-safe. */
void oauth_key_load_free(struct oauth_key_load *l);
