/* The texts an OAuth 2.1 sign-in is made of, pure but for the random bytes: PKCE's verifier
 * and S256 challenge (RFC 7636), the state, and percent-encoding for an authorization URL's
 * query and a token request's form body (application/x-www-form-urlencoded). Random bytes
 * from OpenSSL, base64url from cjose, SHA-256 from OpenSSL: no hand-written crypto. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* bytes random bytes (OpenSSL's RAND_bytes) as base64url without padding: 32 bytes make
 * the 43 characters of a PKCE verifier. Malloc'd into *ret; 0, -EIO or -ENOMEM. */
int oauth_random_text(size_t bytes, char **ret);
/* The S256 challenge of a verifier: base64url(SHA-256(verifier)). Malloc'd; 0 or -ENOMEM. */
int oauth_pkce_challenge(const char *verifier, char **ret);
/* base64url of len bytes without padding. Malloc'd; 0 or -ENOMEM. */
int oauth_base64url(const uint8_t *data, size_t len, char **ret);

/* A client's HTTP Basic credentials for a token endpoint (RFC 6749 section 2.3.1: id and
 * secret form-encoded, then "id:secret" in base64): "Basic ...". Malloc'd; 0 or -ENOMEM. */
int oauth_basic_credentials(const char *id, const char *secret, char **ret);

/* One parameter of a query or a form body; a NULL value leaves it out. */
struct oauth_field {
        const char *name;
        const char *value;
};

/* The fields up to the first with a NULL name as "name=value" joined by '&', percent-encoded
 * (every byte but RFC 3986's unreserved): after url as its query (after its own query, if it
 * has one), or, url NULL, alone as a form body (application/x-www-form-urlencoded). Malloc'd;
 * NULL when out of memory. A body holding a secret is the caller's to wipe. */
char *oauth_form(const char *url, const struct oauth_field *fields);
