/* The daemon's side of a server's MCP start: initialize (our latest version; any version
 * we support is accepted back), notifications/initialized, then each list the server's
 * capabilities allow, following cursors up to HANDSHAKE_MAX_PAGES pages and keeping at most
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

/* r: 0 (the catalog is complete) or negative with why set (static or in h->error). */
typedef void (*handshake_done_fn)(int r, const char *why, void *userdata);

struct handshake {
        struct child *child;
        const struct logger *log;
        const char *name;
        unsigned max_items;              /* kept per list; more is cut */
        struct catalog catalog;          /* being filled */
        int kind;                        /* list being fetched, -1 during initialize */
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
 * none); done is called once, unless cancelled first. */
int handshake_start(struct handshake *h, struct child *ch, const char *name, unsigned max_items,
                    json_object *capabilities, const struct logger *log, handshake_done_fn done, void *userdata);
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
