/* resources/subscribe across clients: each URI is subscribed at its server once, while
 * any client wants it (at each instance of a server run as instances, for its own clients); notifications/resources/updated goes only to the clients that
 * subscribed and may still read it. Each client's subscription is decided for it (joining
 * another client's takes the same decision as starting one), and again at a reload. A restarted server is subscribed again when it is ready. */
#pragma once

#include <stddef.h>
#include <sys/queue.h>

#include "idmap.h"

struct client;
struct server;
struct jsonrpc_msg;

/* One client's hold on one subscription: listed both in the subscription and in the
 * client, so that a client leaving costs what it subscribed to, not every subscription. */
struct subscriber {
        struct subscription *sub;
        struct client *client;
        size_t index;                   /* in sub->subscribers */
        LIST_ENTRY(subscriber) by_client;
};

struct subscription {
        TAILQ_ENTRY(subscription) entry;
        char *uri;
        struct subscription *same_hash; /* next one whose URI has the same hash */
        struct server *server;
        struct subscriber **subscribers;
        size_t n_subscribers, cap;
};

TAILQ_HEAD(subscription_list, subscription);

/* Every subscription the daemon holds: a field of the daemon that only this module reads
 * and writes. */
struct subscriptions {
        struct subscription_list all;
        struct idmap by_uri;            /* found by name_hash() of their URI, collisions chained */
};

void subscriptions_init(struct subscriptions *subs);
void subscriptions_done(struct subscriptions *subs);
/* c subscribes to uri, served by s (resources/subscribe, method-subscribe.c, after the
 * access decision for c): the first client's subscription is told to s. -EXDEV: another
 * server holds the subscription to uri now; -EOPNOTSUPP: s does not offer subscriptions;
 * -ENOMEM. A second subscription of c to uri is one. */
int subscriptions_add(struct subscriptions *subs, struct client *c, struct server *s, const char *uri);
/* c's subscription to uri ends, if it holds one (resources/unsubscribe); the last one is
 * ended at its server. */
void subscriptions_remove(struct subscriptions *subs, struct client *c, const char *uri);
/* c's access was decided anew (a reload): drops its holds on the URIs it may no longer
 * read; a subscription no client holds is ended at its server. */
void subscriptions_client_redecide(struct subscriptions *subs, struct client *c);
/* Drops the client from the subscriptions it holds (c->subscriptions), and only those. */
void subscriptions_client_gone(struct subscriptions *subs, struct client *c);
/* A server is about to be freed: its subscriptions end (clients get no more updates). */
void subscriptions_server_gone(struct subscriptions *subs, const struct server *s);
/* Resubscribes its URIs on a server that became ready. */
void subscriptions_server_ready(struct subscriptions *subs, struct server *s);
/* A server's notifications/resources/updated. */
void subscriptions_updated(struct subscriptions *subs, struct server *s, struct jsonrpc_msg *m);
