/* What a client has of its own: its instances of the servers run per client or per user
 * (pool.h), made on its first need, and a registry over them (the same module and naming
 * as the shared one: server__tool) with views of it, kept in a part of the client that is
 * allocated only once it has an instance: a client that uses no such server pays nothing.
 * client-access.c shows a client the shared registry's view and then this one, and is the
 * one place that decides who hears from an instance: its owner's clients alone. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "registry.h"
#include "view.h"

struct client;
struct daemon;
struct pool;
struct server;

struct client_instances {
        struct registry registry;  /* over servers */
        struct views views;        /* what each class sees of it (the client's own, as it changes) */
        struct server **servers;   /* the registry's source: the client's instances now */
        size_t n_servers;
        json_object *refused;      /* server name -> why it has no instance of it (maxInstances) */
};

/* c's instances of every server run as instances that its class may see: made (or a spare
 * adopted) and started, or kept from being stopped for idleness. Called on every need: a
 * list, a call, a read. */
void client_instances_need(struct client *c);
/* c's part, NULL when it has no instance. */
struct client_instances *client_instances_of(const struct client *c);
void client_instances_free(struct client_instances *ci);
/* Whether s serves c: c's own per-client instance, or its user's per-user one. False for
 * a shared server, a spare, and another owner's instance. */
bool client_owns(const struct client *c, const struct server *s);
/* Whether c's class may use the server of pool p (the rules allow the server as a whole):
 * what initialize tells of it before c has an instance. */
bool client_sees_pool(struct client *c, const struct pool *p);
/* Servers changed (kinds as registry_mark()): every client's own lists are marked. */
void client_instances_changed(struct daemon *d, unsigned kinds);
/* The access policy changed: every client's own views are dropped. */
void client_instances_policy_changed(struct daemon *d);
/* c is being freed: its per-client instances stop, and its user's per-user ones after
 * instanceIdle when it was that user's last client. */
void client_instances_gone(struct client *c);
/* The one client that owns s, for a request of s's made with no call in flight: a
 * per-client instance's client, or a per-user instance's user's only client (NULL when it
 * has several, or none; and for a shared server or a spare). */
struct client *client_instances_owner(struct daemon *d, const struct server *s);
/* Why c has no instance of the server whose prefix name carries (the limit reached), or NULL. */
const char *client_instances_refusal(const struct client *c, const char *name);
