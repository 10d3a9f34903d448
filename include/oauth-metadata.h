/* What a sign-in reads from the web, pure: the well-known URLs to look at, a protected
 * resource's metadata (RFC 9728), an authorization server's (RFC 8414, or OpenID Connect
 * Discovery's), a client registration's answer (RFC 7591) and a token answer (RFC 6749),
 * each checked before anything in it is used. Refusals come back as words for the operator
 * that never quote a body, a token or a query. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The URLs where a resource's metadata may be, in the order to try: for
 * https://host/path, https://host/.well-known/oauth-protected-resource/path then
 * https://host/.well-known/oauth-protected-resource (RFC 9728 section 3.1). NULL-terminated,
 * each malloc'd; -EINVAL when resource is no http(s) URL, -ENOMEM. */
int oauth_resource_metadata_urls(const char *resource, char ***ret);
/* The same for an authorization server's issuer (RFC 8414 section 3.1, then OpenID Connect
 * Discovery, both forms the MCP specification lists). */
int oauth_server_metadata_urls(const char *issuer, char ***ret);
void oauth_strv_free(char **v);

struct oauth_server_meta {
        char *issuer;
        char *authorization_endpoint;
        char *token_endpoint;
        char *registration_endpoint;      /* NULL: none */
        char *revocation_endpoint;        /* NULL: none */
        bool iss_parameter;               /* authorization_response_iss_parameter_supported */
        bool client_id_documents;         /* client_id_metadata_document_supported */
        bool auth_basic, auth_post;       /* token_endpoint_auth_methods_supported (none said: basic) */
};

/* The authorization server a resource names (its first), after checking that the metadata
 * is for resource: its "resource" is resource's URL, or a part of it (its origin, or a path
 * it is under: RFC 9728's identifier of a server that protects more than this URL), whose
 * text is *ret_resource (what the RFC 8707 "resource" parameter carries). Malloc'd; -EBADMSG
 * with why (static words) when not usable. */
int oauth_parse_resource_metadata(const char *body, const char *resource, char **ret_issuer, char **ret_scopes,
                                  char **ret_resource, const char **why);
/* The server's metadata, checked: its issuer is the one asked for, its endpoints http(s)
 * (https but on a loopback host), S256 among its PKCE methods. -EBADMSG with why. */
int oauth_parse_server_metadata(const char *body, const char *issuer, struct oauth_server_meta *ret, const char **why);
void oauth_server_meta_done(struct oauth_server_meta *m);

/* What a sign-in leaves to keep (sealed, oauth-seal.h): the tokens, and what a refresh and
 * a revocation need without discovering again. */
struct oauth_grant {
        char *access_token;
        char *refresh_token;              /* NULL: none */
        int64_t expires_at;               /* realtime seconds; 0: not said */
        int64_t lifetime;                 /* expires_in as given, seconds; 0: not said */
        char *token_endpoint;
        char *revocation_endpoint;        /* NULL: none */
        char *issuer;
        char *client_id;
        char *client_secret;              /* a registered client's; NULL: none (a configured one is read each time) */
        char *resource;                   /* the RFC 8707 "resource" */
        char *scope;                      /* NULL: none asked */
        char *url;                        /* the server's URL it was given for, where alone it goes */
        char *auth_method;                /* "client_secret_basic", "client_secret_post"; NULL: none */
};

/* A token endpoint's answer (status 200) into grant's tokens (the rest untouched): a
 * Bearer access token, and a refresh token if any (a refresh that returns none keeps the
 * old one). -EBADMSG with why. now: realtime seconds. */
int oauth_parse_token_answer(const char *body, int64_t now, struct oauth_grant *grant, const char **why);
/* The error code of an OAuth error answer ("invalid_grant"), for words; NULL if none.
 * Only a code of RFC 6749's characters is returned (into buf). */
const char *oauth_error_code(const char *body, char *buf, size_t size);
/* A registration's answer: its client_id (and client_secret and token_endpoint_auth_method,
 * if any). -EBADMSG with why. */
int oauth_parse_registration(const char *body, char **ret_id, char **ret_secret, char **ret_method, const char **why);

json_object *oauth_grant_to_json(const struct oauth_grant *g);
int oauth_grant_from_json(const char *text, struct oauth_grant *ret);
void oauth_grant_done(struct oauth_grant *g);

/* A 401's WWW-Authenticate value (RFC 6750, RFC 9728 section 5.1): true when its scheme
 * is Bearer, with its resource_metadata (an acceptable URL, oauth_url_acceptable()) copied
 * into buf ("" when none, or one too long for size). Pure. */
bool oauth_bearer_challenge(const char *value, char *buf, size_t size);
/* Its scope parameter (space-separated words) into buf; "" when none, or when it holds
 * anything but RFC 6749's scope characters (it may reach a client's error). */
void oauth_challenge_scope(const char *value, char *buf, size_t size);
/* Its error parameter ("insufficient_scope": RFC 6750 section 3.1) into buf; "" when none. */
void oauth_challenge_error(const char *value, char *buf, size_t size);

/* Whether every word of need (space-separated scopes) is among have's. NULL: none. */
bool oauth_scope_covers(const char *have, const char *need);
/* have's words, then those of need not among them, each once (SEP-2350: a step-up asks
 * for what was asked before and what is challenged). Malloc'd; NULL when both are empty
 * (or out of memory). */
char *oauth_scope_union(const char *have, const char *need);
/* Whether a protected resource's metadata lists issuer among its authorization_servers
 * (a trailing slash aside): 1, 0, or -EBADMSG when it lists none. */
int oauth_metadata_names_issuer(const char *body, const char *issuer);
/* Whether presenting client_id to issuer would show it to another authorization server
 * than the one it belongs to: it is left_client, the client the server had at
 * left_issuer, which the server left (SEP-2352). NULLs: no. */
bool oauth_client_bound_elsewhere(const char *client_id, const char *left_issuer, const char *left_client,
                                  const char *issuer);

/* The daemon's client metadata (RFC 7591's names): a public native client with one
 * redirect URI, the authorization code and refresh token grants; with client_id, a Client
 * ID Metadata Document (the document published at that URL, which is the client_id); with
 * scope, a registration's request. */
json_object *oauth_client_metadata(const char *client_id, const char *redirect_uri, const char *scope);

/* http(s) URL whose scheme is https, or http on a loopback host. */
bool oauth_url_acceptable(const char *url);
