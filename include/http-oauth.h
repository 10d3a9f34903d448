/* The HTTP front door as an OAuth resource server ("http.oauth"): a bearer token that is
 * none of the static tokens is checked as a JWT access token of the configured issuer
 * (jwt-check.h, its keys fetched by issuer-keys.h) and mapped to the principal the access
 * rules know:
 *   - the user claim (userClaim, default sub), through the "users" map or as it is, names a
 *     host user (its uid and primary group); a token whose user is none is refused 403;
 *   - each value of the groups claim (groupsClaim) that names a host group adds it; unknown
 *     ones are ignored;
 *   - the first of the token's scopes ("scope", space-separated, or "scp") that the "scopes"
 *     map names chooses the session's profile; every one of requiredScopes must be there,
 *     else 403 insufficient_scope.
 * The principal is an identity (a struct http_token without a secret) kept for the daemon's
 * life and shared by every token that maps to the same user, groups and profile, so that a
 * session opened with one token is used with the next one the client gets (client-http.c
 * compares identities).
 *
 * Each token accepted is remembered by its SHA-256 until it expires (a bounded table,
 * HTTP_OAUTH_VERDICTS), so that its signature is verified once and not at every request;
 * refused tokens are not remembered: what an unauthenticated peer makes the daemon hold is
 * nothing past the request. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct http_config;
struct http_token;
struct logger;

/* Tokens accepted and remembered at most. */
#define HTTP_OAUTH_VERDICTS 1024
/* Distinct identities at most: past it, a token that would make one more is refused. */
#define HTTP_OAUTH_MAX_IDENTITIES 4096

enum http_oauth_result {
        HTTP_OAUTH_ACCEPTED,
        HTTP_OAUTH_INVALID,        /* 401 invalid_token: why says which check refused it */
        HTTP_OAUTH_NO_USER,        /* 403: its user claim names no host user */
        HTTP_OAUTH_SCOPE,          /* 403 insufficient_scope: the required scopes */
        HTTP_OAUTH_KEYS_PENDING,   /* 503: the issuer's keys are being fetched; retry */
};

struct http_oauth;

/* For h's "oauth" (its issuer set): starts fetching the issuer's keys. -ENOMEM, or -ENOENT
 * with *error (static) when libcurl cannot be loaded. */
int http_oauth_new(struct event_base *base, const struct logger *log, const struct http_config *h,
                   struct http_oauth **ret, const char **error);
void http_oauth_free(struct http_oauth *o);
/* The configuration was replaced by h: the tokens remembered are forgotten (the audience
 * or the mapping may be another); the keys are kept when the issuer is the same.
 * Returns o, or a new one (o freed), or NULL when h has no "oauth". */
struct http_oauth *http_oauth_config_changed(struct http_oauth *o, struct event_base *base, const struct logger *log,
                                             const struct http_config *h);

/* Checks token (len bytes) for h: HTTP_OAUTH_ACCEPTED with *ret the identity it maps to;
 * else *why says why in words (never the token's text). now: seconds since the epoch. */
enum http_oauth_result http_oauth_check(struct http_oauth *o, const struct http_config *h, const char *token, size_t len,
                                        int64_t now, const struct http_token **ret, const char **why);

/* How many fetches of the issuer's JWKS have begun (tests, status). */
uint64_t http_oauth_key_fetches(const struct http_oauth *o);
