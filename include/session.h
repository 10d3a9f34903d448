/* The MCP side of a connection: lifecycle phase, negotiated version, what the client
 * said about itself, and dispatch of each message to its method (methods.h). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "list-changes.h"

struct client;
struct jsonrpc_msg;

enum session_phase {
        SESSION_NEW,          /* only initialize, ping and server/discover are allowed */
        SESSION_INITIALIZING, /* initialize answered; waiting for notifications/initialized */
        SESSION_OPERATING,
        SESSION_STATELESS,    /* a modern-era connection (2026-07-28): its first request named
                               * its version in _meta instead of an initialize; every request
                               * must, and none is sent anything unasked */
};

/* The most of clientInfo's name and version kept, in bytes: they are for display only. */
#define SESSION_CLIENT_INFO_MAX 64

struct session {
        enum session_phase phase;
        const char *protocol_version;     /* static string, NULL before initialize (stateless:
                                           * the version of its first request) */
        /* clientInfo's name and version as the client gave them, made fit to show
         * (utf8_display()): for logs, the audit trail and mcpvisorctl clients, never for a
         * decision. NULL: not given, not a string, or out of memory. */
        char *client_name;
        char *client_version;
        /* Bit per enum client_capability it declared in initialize: only whether each is
         * there is ever read, and a kept JSON object cost every idle client most of a KiB. */
        unsigned client_caps;
        int log_level;                    /* logging/setLevel, as a syslog level; -1: not set */
        struct list_seen lists_seen;      /* the lists it was given (list-changes.c writes it) */
};

void session_init(struct session *s);
void session_done(struct session *s);

/* Only these move the phase, and only forward. initialize answered: new -> initializing,
 * keeping the negotiated version (static), which capabilities caps declares (NULL: none) and
 * info's name and version (info: clientInfo, may be NULL); -EALREADY (nothing changed) past
 * new. notifications/initialized: initializing -> operating;
 * false (nothing changed) from any other phase. */
/* Past notifications/initialized: what a client is sent unasked is for it now. */
bool session_operating(const struct session *s);
int session_initialize(struct session *s, const char *protocol_version, json_object *caps, json_object *info);
bool session_begin_operating(struct session *s);
/* A modern request came first: new -> stateless, keeping its version (static) and its
 * clientInfo's name and version (info may be NULL), for display; -EALREADY past new. Its
 * capabilities are each request's own, never kept. */
int session_begin_stateless(struct session *s, const char *protocol_version, json_object *info);
/* A modern-era connection's (SESSION_STATELESS). */
bool session_stateless(const struct session *s);
/* What request params (a request's; NULL: none) of this connection declare, for what the
 * daemon does on its behalf while it is in flight: a modern request's own _meta decides
 * (its clientCapabilities as bits of enum client_capability, its logLevel as an MCP level
 * or -1), a legacy session's what its initialize declared and logging/setLevel set. */
unsigned session_request_caps(const struct session *s, json_object *params);
int session_request_log_level(const struct session *s, json_object *params);
/* The era's name for display: "legacy", "modern", or NULL before either. */
const char *session_era_name(const struct session *s);

/* Handles one classified message from the client. */
void session_handle(struct client *c, struct jsonrpc_msg *m);
