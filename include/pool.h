/* One configured server run as instances: one per user ("per-user") or per client
 * ("per-client"), each a struct server of its own in the supervisor's servers (so that
 * stopping them all, STATUS=, the status answer and the reaper see them as any other),
 * made on its owner's first need and stopped when its owner is gone: a per-client
 * instance with its client, a per-user one instanceIdle seconds after its user's last
 * client left. A pool keeps spareInstances started with no owner yet, hands one over on
 * the next need and starts a replacement at once; instances and spares together are at
 * most maxInstances.
 *
 * The instances share the pool's settings by reference (server_config_ref()); a reload
 * that changes them stops every instance (each is made again, with the new settings, on
 * its owner's next need) and one that removes the entry stops them all. An instance the
 * pool lets go is marked removed and stopped; the supervisor frees it once it has ended,
 * as it frees a server a reload removed.
 *
 * A per-user instance of a user other than the daemon's runs as that user: its server's
 * run_as (run-as.h), resolved when it is made, which its launcher checks and acts on at
 * each start; the instance's own, freed with it. Spares run as the daemon's user, and are
 * handed only to it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server.h"

struct event;
struct supervisor;

struct pool_member {
        struct server *server;
        struct event *idle;   /* per-user: armed while its user has no client left */
        struct pool *pool;
};

struct pool {
        struct supervisor *sv;
        struct server_config *config; /* owned: one reference, and one per instance */
        struct pool_member **members; /* its instances and spares, not yet let go */
        size_t n, size;
        char *instructions;           /* what its instances' last handshake said they are for
                                       * (the program's, the same for each), kept while none
                                       * runs; NULL: none said any yet */
};

/* A pool for config (taken). NULL when out of memory (config freed). */
struct pool *pool_new(struct supervisor *sv, struct server_config *config);
/* Frees the pool; its instances, still in the supervisor's servers, are the supervisor's. */
void pool_free(struct pool *p);
const char *pool_name(const struct pool *p);

/* The owner an instance of p would have for a client numbered client_id of uid. */
struct server_owner pool_owner_for(const struct pool *p, uint64_t client_id, uid_t uid);
/* owner's instance of p, or NULL when it has none. */
struct server *pool_find(const struct pool *p, const struct server_owner *owner);
/* owner's instance of p: the one it has, else a spare handed over (and a replacement
 * started), else a new one queued to start. 0 and *ret; -EUSERS past maxInstances,
 * -ESHUTDOWN while the daemon stops, -ENOMEM; *error (malloc'd, may be NULL) says so, for
 * the client, naming the server and the limit. An idle timer of the instance is disarmed. */
int pool_instance(struct pool *p, const struct server_owner *owner, struct server **ret, char **error);
/* Starts spares up to spareInstances, room permitting. */
void pool_fill_spares(struct pool *p);
/* Lets go of owner's instance (all of them when owner is NULL; spares too then): each is
 * stopped, logged with why, and freed by the supervisor once ended. Returns how many. */
size_t pool_stop(struct pool *p, const struct server_owner *owner, const char *why);
/* Client client_id is gone: its per-client instance stops. */
void pool_client_gone(struct pool *p, uint64_t client_id);
/* uid's last client is gone: its per-user instance stops instanceIdle seconds from now,
 * unless it is needed again before. */
void pool_user_left(struct pool *p, uid_t uid);
/* A reload gives p next (taken): the same settings keep every instance; others stop them
 * all (the caller makes spares anew: pool_fill_spares()). */
void pool_reconfigure(struct pool *p, struct server_config *next);
/* Its instance (or spare) s finished a handshake: its instructions are kept as the pool's. */
void pool_instance_ready(struct pool *p, const struct server *s);
/* The instructions its instances gave, for an initialize that comes before the client has
 * an instance of its own; NULL when none gave any. */
const char *pool_instructions(const struct pool *p);
/* Instances and spares it holds now. */
size_t pool_size(const struct pool *p);
/* "user alice (1000)", "client 17", "spare": whom s serves, for the status and logs. */
void pool_describe_owner(const struct server_owner *owner, char *buf, size_t size);
