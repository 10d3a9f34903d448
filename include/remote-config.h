/* The keys of a server reached by URL instead of run as a program: where it is,
 * which HTTP transport it speaks, the headers sent with every request (a credential's
 * text among them, for tokens), and how it is reached (proxy, CA, timeouts, connections).
 * Parsed as part of its entry (server-config.c); used by the HTTP run (launcher-http.c). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct config_problems;

/* "type": absent (REMOTE_NONE) with "url" is Streamable HTTP, then legacy HTTP+SSE if
 * the server turns out to be an old one, as the spec's backwards-compatibility section
 * says. "stdio" is what an entry without "url" is. */
enum remote_type { REMOTE_NONE, REMOTE_STREAMABLE_HTTP, REMOTE_SSE, REMOTE_STDIO };

/* A header's value: text as written, or a credential's text put into format at "%s". */
struct remote_header {
        char *name;
        char *value;       /* literal, or NULL */
        char *credential;  /* credential id, or NULL */
        char *format;      /* with credential: one "%s"; NULL: the credential's text alone */
};

struct remote_config {
        char *url;                       /* NULL: not a remote server */
        char *shown_url;                 /* url as people see it: remote_url_shown(url) */
        int type;                        /* enum remote_type */
        struct remote_header *headers;
        size_t n_headers;
        char *proxy;                     /* NULL: the environment's (http_proxy, ...) */
        char *ca_file;                   /* NULL: the system's CAs */
        bool insecure;                   /* no certificate check: loopback hosts only */
        double connect_timeout;          /* seconds */
        unsigned max_connections;        /* per server */
        /* Sign-in (oauth-tokens.h): "auth": "oauth" has the daemon sign in with OAuth 2.1
         * (mcpvisorctl login NAME) and send the token it keeps; "none" sends the configured
         * headers alone; absent ("auto"), a server without a configured Authorization header
         * is one to sign in to once it answers 401 with a Bearer challenge. */
        int auth;                        /* enum remote_auth */
        char **scopes;                   /* "scopes": NULL-terminated; NULL: the server's scopes_supported */
        char *client_id;                 /* "clientId": NULL, registered dynamically */
        char *client_secret;             /* "clientSecret": {"credential": NAME}, the credential's id */
        char *client_metadata_url;       /* "clientMetadataUrl": the https URL of the Client ID Metadata
                                          * Document published for the daemon, its client_id */
};

enum remote_auth { REMOTE_AUTH_NONE, REMOTE_AUTH_OAUTH, REMOTE_AUTH_AUTO };
extern const char *const remote_auth_names[];
/* The server may be signed in to: "auth": "oauth", or "auto" without a configured
 * Authorization header. */
bool remote_signs_in(const struct remote_config *r);

#define REMOTE_DEFAULT_CONNECT_TIMEOUT 10
#define REMOTE_DEFAULT_MAX_CONNECTIONS 8
#define REMOTE_MAX_CONNECTIONS_MAX 256

void remote_config_init(struct remote_config *r);
void remote_config_done(struct remote_config *r);
bool remote_config_equal(const struct remote_config *a, const struct remote_config *b);

/* SETTING_CUSTOM parsers of "type" (into int, enum remote_type) and "headers". */
int remote_parse_type(json_object *v, const char *path, void *dst, struct config_problems *p);
int remote_parse_headers(json_object *v, const char *path, void *dst, struct config_problems *p);
/* "clientSecret": {"credential": "NAME"} into a char * (the credential's id). */
int remote_parse_client_secret(json_object *v, const char *path, void *dst, struct config_problems *p);

/* The URL's host is the loopback interface: "localhost", 127.0.0.0/8 or [::1]. */
bool remote_url_loopback(const char *url);
/* The URL as the status answer and the logs show it: a query or fragment, where a
 * credential such as ?api_key= goes, left out ("https://host/mcp?…"). Malloc'd; NULL when
 * out of memory. */
char *remote_url_shown(const char *url);

/* What the remote keys must be together, and with the others of the entry (given as
 * whether it has a command, and its launcher and confinement keys' first name, NULL if
 * none): one error for each thing wrong. Returns how many. */
size_t remote_config_check(const struct remote_config *r, const char *entry_path, bool has_command,
                           const char *process_key, struct config_problems *p);
