/* notifications/{tools,prompts,resources}/list_changed to clients, coalesced and only where
 * needed. A registry change only arms one timer; when it fires, each initialized client
 * that holds a list the registry no longer matches gets one notification for it. One timer
 * serves every kind: a firing compares every list of every client by content, whatever
 * changed, and two firings are at least a window apart. So:
 *
 *   - changes within LIST_CHANGES_WINDOW_USEC of the first one make one notification per
 *     list, and a client hears of a list at most once per window;
 *   - a client is told once per list it fetched: told, it knows its copy is out of date, so
 *     later changes are not announced again until it fetches the list anew;
 *   - "holds" is by content: a client's copy is the registry's signature of the list (a
 *     hash of what clients see) when its first page was answered. A client that listed
 *     after the change, or whose list came back to what it holds (a server restarted
 *     within the window with the same tools), is told nothing;
 *   - a client that never asked for a list is not told about it (its first answer will be
 *     current), nor is one whose request for it is waiting (list-wait.h): that answer is
 *     built after the change;
 *   - resources and resource templates share notifications/resources/list_changed: it is
 *     sent when either list the client holds is stale. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "macro.h"

struct daemon;
struct client;
struct event;
struct event_base;

/* Long enough to gather servers that become ready together (a daemon starting a dozen
 * servers sees their handshakes end within tens of milliseconds), short enough that a
 * person does not notice the delay. */
#define LIST_CHANGES_WINDOW_USEC (USEC_PER_SEC / 10)

/* What a client was last given of each list: a field of its session, written only by
 * list_seen_record() (through list_changes_answered()). */
struct list_seen {
        uint64_t signature[CATALOG_KIND_COUNT]; /* the registry's, when the first page was answered */
        unsigned listed;                        /* bit per kind: a first page was answered */
        unsigned mixed;                         /* bit per kind: a later page came from another version */
        unsigned told;                          /* bit per kind: list_changed sent since that first page */
};

struct list_changes {
        struct event *timer;                    /* pending: a change is waiting to be announced */
        uint64_t window;                        /* usec; LIST_CHANGES_WINDOW_USEC */
};

/* The timer's callback gets d. Returns -ENOMEM. */
int list_changes_init(struct list_changes *lc, struct event_base *base, struct daemon *d);
void list_changes_done(struct list_changes *lc);
/* For the fuzz harness, whose timers fire only when its script says so. */
void list_changes_set_window(struct list_changes *lc, uint64_t usec);

/* What clients see of these kinds (bits 1 << kind) may have changed: arm the timer; at its
 * end the registry is read, so rebuilt, and only clients whose copy differs are told. */
void list_changes_registry_changed(struct list_changes *lc, unsigned kinds);
/* A list answer was sent to c, from the registry as it is now; first_page: it began at the
 * first item. */
void list_changes_answered(struct client *c, enum catalog_kind kind, bool first_page);
/* c sent notifications/initialized: a list it fetched before, while the timer fired without
 * it, is announced at the next firing. */
void list_changes_client_operating(struct client *c);

/* The pure part, for list_changes_answered() and the tests. A later page whose signature is
 * not the first page's marks the copy as mixed, stale whatever happens next; a first page
 * starts a new copy, not told yet. */
void list_seen_record(struct list_seen *seen, enum catalog_kind kind, uint64_t signature, bool first_page);
/* True if the client holds a copy of kind that is not the current list (whose signature is
 * current), and was not told so yet. */
bool list_seen_should_tell(const struct list_seen *seen, enum catalog_kind kind, uint64_t current);
/* The client was told that its copies of kinds (bits 1 << kind) are out of date. */
void list_seen_told(struct list_seen *seen, unsigned kinds);
