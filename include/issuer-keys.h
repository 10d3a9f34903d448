/* An OAuth authorization server's signing keys, as a resource server needs them: its
 * metadata (OpenID Connect discovery, {issuer}/.well-known/openid-configuration, else RFC
 * 8414's /.well-known/oauth-authorization-server{path}) names its jwks_uri, whose JWKS is
 * fetched and kept (jwt-check.h). Every transfer goes through libcurl on the daemon's loop
 * (curl-loop.h): nothing here blocks.
 *
 * The keys are fetched at start and again:
 *   - when a token names a kid the set lacks (issuer_keys_refresh()): at most once per
 *     min_refresh seconds, so that tokens with random kids cannot make the daemon hammer
 *     the issuer;
 *   - when the set is older than ISSUER_KEYS_MAX_AGE at its next use (a key the issuer
 *     withdrew stops being trusted);
 *   - after a failed fetch, with a growing delay (1 s doubling to 60 s) while there are no
 *     keys.
 * A set fetched stays in use until the next one is fetched whole. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "jwt-check.h"

struct event_base;
struct logger;
struct curl_loop;

/* A document fetched (metadata, JWKS) larger than this is refused. */
#define ISSUER_KEYS_MAX_BODY (256 * 1024)
/* Seconds after which a key set is fetched again at its next use. */
#define ISSUER_KEYS_MAX_AGE 3600
/* Seconds a fetch may take. */
#define ISSUER_KEYS_TIMEOUT 10

enum issuer_keys_state {
        ISSUER_KEYS_IDLE,          /* no transfer (keys or not) */
        ISSUER_KEYS_METADATA,      /* fetching the metadata (the OpenID document, then RFC 8414's) */
        ISSUER_KEYS_JWKS,          /* fetching the JWKS */
};

struct issuer_keys;

/* Starts fetching issuer's keys at once. min_refresh: seconds between two fetches a token
 * asks for. -ENOMEM, or -ENOENT with *error (static) when libcurl cannot be loaded. */
int issuer_keys_new(struct event_base *base, const struct logger *log, const char *issuer, unsigned min_refresh,
                    struct issuer_keys **ret, const char **error);
void issuer_keys_free(struct issuer_keys *k);

/* The keys fetched last, or NULL when none has been yet; starts a fetch when they are older
 * than ISSUER_KEYS_MAX_AGE (they are still given meanwhile). now: monotonic usec. */
const struct jwt_keys *issuer_keys_get(struct issuer_keys *k, uint64_t now);
/* A token named a kid the keys lack: fetches them again unless the last fetch began less
 * than min_refresh ago. Whether a fetch is under way now (begun by this call or before). */
bool issuer_keys_refresh(struct issuer_keys *k, uint64_t now);
/* A reload's keysRefreshInterval. */
void issuer_keys_set_min_refresh(struct issuer_keys *k, unsigned min_refresh);
enum issuer_keys_state issuer_keys_state(const struct issuer_keys *k);
/* How many fetches of the JWKS have begun, for tests and the status. */
uint64_t issuer_keys_fetches(const struct issuer_keys *k);
const char *issuer_keys_issuer(const struct issuer_keys *k);
/* Where issuer's metadata is: OpenID Connect's well-known document appended to it, or RFC
 * 8414's put between its origin and its path; malloc'd, NULL when out of memory. Pure. */
char *issuer_keys_metadata_url(const char *issuer, bool openid);
