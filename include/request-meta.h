/* A request's era and the modern era's per-request fields (2026-07-28): a request that
 * names its protocol version in params._meta carries everything the daemon needs to serve
 * it (version, client capabilities, client info, log level), with no initialize and no
 * session. One place reads them, for every front door (session.c on the socket and over
 * HTTP, http-front.c for the headers that mirror them). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "protocol.h" /* the _meta members' names and the modern errors, the servers' too */

enum request_era {
        REQUEST_LEGACY,   /* no protocol version in its _meta: the initialize era's */
        REQUEST_MODERN,   /* a supported modern version and the fields it requires */
        REQUEST_REFUSED,  /* names a version, wrongly: answered with the error in the meta */
};

struct request_meta {
        const char *version;         /* static (protocol.h); NULL when not modern */
        json_object *capabilities;   /* borrowed from the request: an object */
        json_object *info;           /* borrowed; NULL: none, or not an object */
        int log_level;               /* an MCP level (mcp-logging.h); -1: none */
        /* REQUEST_REFUSED: the error to answer with; data owned by the meta until taken
         * (request_meta_done() frees what was not). */
        int code;
        char message[200];
        json_object *data;
};

/* Reads params (a request's; NULL or not an object: legacy) into *ret. */
enum request_era request_meta_read(json_object *params, struct request_meta *ret);
/* The client capabilities it declares, as bits of enum client_capability. */
unsigned request_meta_caps(const struct request_meta *m);
/* A mode of a capability rather than one, past enum client_capability's bits: elicitation
 * declared with "url" (2025-11-25), which the sign-in link needs (signin-elicit.h). */
#define CLIENT_CAP_URL_ELICITATION (1u << 31)
/* The bits a capabilities object (an initialize's, or a modern request's _meta's; NULL:
 * none) declares: one reading for both eras. */
unsigned client_caps_of(json_object *caps);
void request_meta_done(struct request_meta *m);
/* Whether params name a version in their _meta at all (the modern era's mark), without
 * judging it. */
bool request_meta_present(json_object *params);
