/* A client's place in the access policy (access.h): its class, from its principal
 * (client_access_who()) and the profile it chose, and its view of the registry (view.h),
 * kept as a pointer that stays good while the daemon's views are not dropped, so that
 * the check on every call is one comparison and one lookup. Every path that shows a
 * client something of a server, or lets it use one, asks here. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "access.h"
#include "catalog.h"

struct client;
struct client_instances;
struct jsonrpc_msg;
struct registry;
struct daemon;
struct registry_entry;
struct server;
struct view;

struct client_access {
        struct access_class class;   /* valid when ready */
        bool ready;
        char *profile;               /* the profile it chose at initialize; NULL: none */
        char *asked;                 /* the profile notifications/mcpvisor/profile asked for before
                                      * initialize (mcpvisorctl connect --profile); NULL: none */
        struct view *view;           /* cached; good while generation and registry_builds are current */
        uint64_t generation;
        uint64_t registry_builds;
        struct client_instances *instances; /* its own instances (client-instances.h); NULL: none */
};

/* What a client's lists show: the shared registry's view, then its own instances'. */
struct client_lists {
        struct registry *registry[2];
        const struct view *view[2];  /* view[1] NULL when it has no instance */
};

void client_access_done(struct client_access *a);

/* Sets c's profile (may be NULL) and computes its class. -ENOENT: no such profile;
 * -ENOMEM. */
int client_access_choose(struct client *c, const char *profile);
/* The profile c is asked to start in (NULL: none), as notifications/mcpvisor/profile asks
 * before initialize, or its HTTP token's after a reload changed it: initialize takes it
 * unless the client chooses its own, and a client already in the profile it was asked for
 * moves to the new one (one of its own choosing stays). -ENOMEM. */
int client_access_ask(struct client *c, const char *profile);
/* The caching hints of a list, read or discover result for c (the specification's ttlMs
 * and cacheScope), merged across servers: "private" whenever access rules, profiles or
 * servers run as instances may make its view differ from another user's, else "public";
 * the shortest ttlMs of the servers', where a legacy server's none counts as 0 (stale at
 * once), as the specification reads it. Added to result; as JSON text (with a leading
 * comma) for a result written as text. */
#define CLIENT_CACHE_TTL_MS 0
const char *client_cache_scope(const struct client *c);
void client_add_cache_hints(const struct client *c, json_object *result);
/* The profile c chose, or NULL. */
const char *client_access_profile(const struct client *c);
/* The policy changed (a reload): drops every view and computes every client's class anew. */
void client_access_policy_changed(struct daemon *d);

/* c's view, NULL when out of memory (callers then show and allow nothing). */
struct view *client_view(struct client *c);
/* c's lists as they are now: -ENOMEM. Valid until a registry is next read after a change. */
int client_lists_get(struct client *c, struct client_lists *ret);
/* How many items of kind l shows, its i-th (shared ones first), and the signature of the
 * whole (list-changes.h). */
size_t client_lists_size(const struct client_lists *l, enum catalog_kind kind);
const struct registry_entry *client_lists_entry(const struct client_lists *l, enum catalog_kind kind, size_t i);
uint64_t client_lists_signature(const struct client_lists *l, enum catalog_kind kind);
/* The verdict on e, an entry of the registry's list of kind as it is now. */
enum access_verdict client_access_entry(struct client *c, enum catalog_kind kind, const struct registry_entry *e);
/* The entry of kind under key (an exposed name, or a URI) as c knows it: NULL when there is
 * none or c's view does not have it (not found, answered as an unknown target); else
 * *verdict is ACCESS_ALLOW or ACCESS_DENY. */
const struct registry_entry *client_access_find(struct client *c, enum catalog_kind kind, const char *key,
                                                enum access_verdict *verdict);
/* The same for a URI: the resource that lists it, else the best matching template. A URI
 * read through a template is judged twice, as the template and as the URI itself (the
 * worse verdict holds): a rule on one URI holds whichever way it is reached. */
const struct registry_entry *client_access_find_uri(struct client *c, const char *uri, enum access_verdict *verdict);
/* The verdict of the rules and c's profile on uri as a resource of s, whether or not s
 * lists it now. */
enum access_verdict client_access_uri(struct client *c, const struct server *s, const char *uri);
/* Whether c may hear from s at all: its notifications and requests, its log messages and
 * resource updates. An instance is heard by its owner's clients alone (client_owns()):
 * every path that tells a client of a server asks here. */
bool client_sees_server(struct client *c, const struct server *s);

/* What a message from a client to a server is about, for the one decision every such
 * message passes (client_access_pass()). */
enum access_about {
        ACCESS_ABOUT_SERVER,   /* names nothing the rules judge (a method the daemon does not
                                * know, a vendor notification): the server's own rule decides */
        ACCESS_ABOUT_ITEM,     /* a call on an item: kind and key (an exposed name, a URI) */
        ACCESS_ABOUT_ASKED,    /* an answer or progress to a request the server made of this
                                * client: passes while the client may hear from the server */
};

struct access_ask {
        enum access_about about;
        enum catalog_kind kind;  /* ACCESS_ABOUT_ITEM: CATALOG_TOOLS, _PROMPTS or _RESOURCES (a URI) */
        const char *key;
};

/* The door every client message bound for a server goes through (router_forward() for
 * requests, client_access_notify() for notifications, upcall.c for answers and
 * progress): whether m of c may reach s, as ask says what it is about. A message refused
 * is audited as denied, and a request answered: an item refused as permission denied naming
 * it, a server the client may not use as permission denied naming the method, and one
 * outside its world (its profile) exactly as a method no server takes. */
bool client_access_pass(struct client *c, const struct server *s, const struct jsonrpc_msg *m, const struct access_ask *ask);
/* Sends notification m of c to s if client_access_pass() lets it (ACCESS_ABOUT_SERVER):
 * how a client's notification reaches a server. */
void client_access_notify(struct client *c, struct server *s, const struct jsonrpc_msg *m);
/* c's principal or profile may have changed: computes its class anew and drops what it
 * holds that its new view refuses (resource subscriptions). A reload calls it for every
 * client. */
void client_access_redecide(struct client *c);

/* Answers request id of c, for method on target (what: "tool", "prompt", "resource") of
 * server, with the permission denied error (code: the one an unknown target of that kind
 * gets), and audits the denial. */
void client_access_deny(struct client *c, json_object *id, const char *method, int code, const char *what,
                        const char *target, const char *server);
