/* The daemon's side of a server's MCP start. Its era first: unless told, server/discover
 * is sent with our _meta (the modern era's probe, MCP 2026-07-28); a DiscoverResult naming
 * our modern version makes the server modern (no initialize: every request on the
 * connection carries our _meta from then on, child_set_meta()), and any other error, or
 * no answer within the probe's timeout, a legacy one, sent initialize on the same process.
 * A legacy server: initialize (our latest version; any version we support is accepted
 * back), notifications/initialized. Then each list the server's capabilities allow, following cursors up to HANDSHAKE_MAX_PAGES pages and keeping at most
 * max_items of each (the server's maxCatalogItems; past it one warning, no more pages). The
 * result is a catalog; the whole sequence runs again after every restart. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"

#define HANDSHAKE_MAX_PAGES 100

struct child;
struct logger;

/* Which era of MCP a server speaks: the initialize-based one, or the modern one (each
 * request names its version in its _meta). */
enum mcp_era { MCP_ERA_UNKNOWN, MCP_ERA_LEGACY, MCP_ERA_MODERN };

extern const char *const mcp_era_names[]; /* "unknown", "legacy", "modern" */

enum handshake_step {
        HANDSHAKE_DISCOVER,   /* server/discover sent: the probe, or a modern server's start */
        HANDSHAKE_INITIALIZE, /* initialize sent */
        HANDSHAKE_LISTS,      /* its lists being fetched */
};

/* r: 0 (the catalog is complete) or negative with why set (static or in h->error). */
typedef void (*handshake_done_fn)(int r, const char *why, void *userdata);

struct handshake {
        struct child *child;
        const struct logger *log;
        const char *name;
        unsigned max_items;              /* kept per list; more is cut */
        struct catalog catalog;          /* being filled */
        enum handshake_step step;
        enum mcp_era era;                /* what it speaks: UNKNOWN until the probe says */
        bool probe;                      /* its era is to be found: an error to server/discover is an answer */
        uint64_t probe_usec;             /* the probe's wait for an answer */
        json_object *capabilities;       /* offered: initialize's, or each modern request's */
        int kind;                        /* list being fetched, -1 before the lists */
        unsigned pages;
        unsigned refused;                /* items of this list left out (catalog.h) */
        int64_t request;                 /* outstanding request id, 0 none */
        handshake_done_fn done;
        void *userdata;
        char error[256];
        unsigned kinds;                  /* the lists to fetch: bits of 1 << catalog_kind */
        bool running;
};

void handshake_init(struct handshake *h);
/* Starts on a fresh connection, offering the client capabilities given (consumed; NULL:
 * none), in era (MCP_ERA_UNKNOWN: probed, waiting probe_usec for the probe's answer);
 * done is called once, unless cancelled first. */
int handshake_start(struct handshake *h, struct child *ch, const char *name, unsigned max_items,
                    json_object *capabilities, enum mcp_era era, uint64_t probe_usec, const struct logger *log,
                    handshake_done_fn done, void *userdata);
/* Waiting for the probe's answer: a run that ends now ended on server/discover. */
bool handshake_probing(const struct handshake *h);
/* Fetches the lists in kinds (1 << catalog_kind bits) again, after the server said they
 * changed; the rest of current is kept. done is called as for a start. */
int handshake_refresh(struct handshake *h, struct child *ch, const struct catalog *current, unsigned kinds,
                      const char *name, unsigned max_items, const struct logger *log, handshake_done_fn done,
                      void *userdata);
/* The server has been sent notifications/initialized and is fetched its lists: from here
 * on it may be sent notifications. */
bool handshake_initialized(const struct handshake *h);
/* Stops waiting; a late answer is dropped. */
void handshake_cancel(struct handshake *h);
/* Moves the finished catalog out. */
void handshake_take(struct handshake *h, struct catalog *ret);
void handshake_done(struct handshake *h);
