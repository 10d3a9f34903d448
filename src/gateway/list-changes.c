/* Coalesced list_changed notifications; see list-changes.h. */
#include "list-changes.h"

#include <event2/event.h>

#include "client.h"
#include "daemon-handle.h"
#include "list-wait.h"
#include "sub-listen.h"
#include "log.h"
#include "registry.h"
#include "time-util.h"
#include "view.h"

#define BIT(k) (1u << (k))

/* One notification per list a client can be told about; resources and templates share one. */
static const struct notice {
        const char *method;
        unsigned kinds;
} notices[] = {
        { "notifications/tools/list_changed", BIT(CATALOG_TOOLS) },
        { "notifications/prompts/list_changed", BIT(CATALOG_PROMPTS) },
        { "notifications/resources/list_changed", BIT(CATALOG_RESOURCES) | BIT(CATALOG_TEMPLATES) },
};

void list_seen_record(struct list_seen *seen, enum catalog_kind kind, uint64_t signature, bool first_page) {
        if (first_page) {
                seen->signature[kind] = signature;
                seen->listed |= BIT(kind);
                seen->mixed &= ~BIT(kind);
                seen->told &= ~BIT(kind);
        } else if ((seen->listed & BIT(kind)) && seen->signature[kind] != signature) {
                seen->mixed |= BIT(kind);
        }
}

bool list_seen_should_tell(const struct list_seen *seen, enum catalog_kind kind, uint64_t current) {
        if (!(seen->listed & BIT(kind)) || (seen->told & BIT(kind)))
                return false;
        return (seen->mixed & BIT(kind)) || seen->signature[kind] != current;
}

void list_seen_told(struct list_seen *seen, unsigned kinds) {
        seen->told |= kinds & seen->listed;
}

/* The signature of kind as c's view shows it now (0, matching no copy, when out of memory). */
static uint64_t current_signature(struct client *c, enum catalog_kind kind) {
        struct client_lists l;

        return client_lists_get(c, &l) == 0 ? client_lists_signature(&l, kind) : 0;
}

/* The kinds of n that c should be told about. A request of c's for a list that is waiting
 * to be answered (list-wait.h) will bring it the list as it is then: nothing to tell. */
static unsigned kinds_to_tell(struct client *c, const struct notice *n) {
        const struct list_waits *lw = daemon_list_waits(c->daemon);
        unsigned kinds = 0;

        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                if ((n->kinds & BIT(k)) && list_seen_should_tell(&c->session.lists_seen, k, current_signature(c, k)) &&
                    !list_waiters_has(lw, c, k))
                        kinds |= BIT(k);
        return kinds;
}

/* For daemon_broadcast_to(): a yes is sent at once, so it is recorded as told here. */
static bool tell_if_stale(struct client *c, void *arg) {
        unsigned kinds = kinds_to_tell(c, arg);

        if (kinds == 0)
                return false;
        list_seen_told(&c->session.lists_seen, kinds);
        return true;
}

static void on_window_end(evutil_socket_t fd, short what, void *userdata) {
        struct daemon *d = userdata;

        /* Read or not, the lists are brought up to date once per window, so they let go of
         * the items of servers that left them (and of replaced catalogs) within one. */
        (void)registry_sync(daemon_registry(d));
        for (size_t i = 0; i < ARRAY_SIZE(notices); i++) {
                unsigned count = daemon_broadcast_to(d, notices[i].method, NULL, tell_if_stale, (void *)&notices[i]);

                if (count > 0)
                        log_debug(daemon_logger(d), "%s sent to %u client%s holding an out-of-date list", notices[i].method,
                                  count, count == 1 ? "" : "s");
        }
        sub_listen_lists_changed(d);
}

int list_changes_init(struct list_changes *lc, struct event_base *base, struct daemon *d) {
        *lc = (struct list_changes){ .window = LIST_CHANGES_WINDOW_USEC };
        lc->timer = evtimer_new(base, on_window_end, d);
        return lc->timer ? 0 : -ENOMEM;
}

void list_changes_done(struct list_changes *lc) {
        if (lc->timer)
                event_free(lc->timer);
        lc->timer = NULL;
}

void list_changes_set_window(struct list_changes *lc, uint64_t usec) {
        lc->window = usec;
}

/* The window starts at the first change and is not pushed back by later ones, so a server
 * whose lists change all the time still has them announced once per window. */
static void arm(struct list_changes *lc) {
        struct timeval tv = timeval_from_usec(lc->window);

        if (!evtimer_pending(lc->timer, NULL))
                evtimer_add(lc->timer, &tv);
}

void list_changes_registry_changed(struct list_changes *lc, unsigned kinds) {
        if (kinds != 0)
                arm(lc);
}

void list_changes_answered(struct client *c, enum catalog_kind kind, bool first_page) {
        uint64_t current = current_signature(c, kind);

        list_seen_record(&c->session.lists_seen, kind, current, first_page);
        /* A later page of a list that changed since the first (a page held back by listWait
         * past the window) leaves the client a copy to be told of, with no change to come. */
        if (list_seen_should_tell(&c->session.lists_seen, kind, current))
                arm(daemon_list_changes(c->daemon));
}

void list_changes_client_operating(struct client *c) {
        for (size_t i = 0; i < ARRAY_SIZE(notices); i++)
                if (kinds_to_tell(c, &notices[i]) != 0) {
                        arm(daemon_list_changes(c->daemon));
                        return;
                }
}
