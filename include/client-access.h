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
/* The profile c chose, or NULL. */
const char *client_access_profile(const struct client *c);
/* The policy changed (a reload): drops every view and computes every client's class anew. */
void client_access_policy_changed(struct daemon *d);

/* c's view, NULL when out of memory (callers then show and allow nothing). */
struct view *client_view(struct client *c);
/* The verdict on e, an entry of the registry's list of kind as it is now. */
enum access_verdict client_access_entry(struct client *c, enum catalog_kind kind, const struct registry_entry *e);
/* The entry of kind under key (an exposed name, or a URI) as c knows it: NULL when there is
 * none or c's view does not have it (not found, answered as an unknown target); else
 * *verdict is ACCESS_ALLOW or ACCESS_DENY. */
const struct registry_entry *client_access_find(struct client *c, enum catalog_kind kind, const char *key,
                                                enum access_verdict *verdict);
/* The same for a URI: the resource that lists it, else the best matching template. */
const struct registry_entry *client_access_find_uri(struct client *c, const char *uri, enum access_verdict *verdict);
/* Whether c may hear from s at all: its notifications and requests. */
bool client_sees_server(struct client *c, const struct server *s);

/* Answers request id of c, for method on target (what: "tool", "prompt", "resource") of
 * server, with the permission denied error (code: the one an unknown target of that kind
 * gets), and audits the denial. */
void client_access_deny(struct client *c, json_object *id, const char *method, int code, const char *what,
                        const char *target, const char *server);
