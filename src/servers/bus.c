/* The connection to the service manager, driven by the daemon's loop; see bus.h. */
#include "bus.h"

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "environment.h"
#include "log.h"
#include "macro.h"
#include "server-config.h"
#include "text.h"
#include "time-util.h"

#define MANAGER_NAME "org.freedesktop.systemd1"
#define MANAGER_PATH "/org/freedesktop/systemd1"
#define MANAGER_INTERFACE "org.freedesktop.systemd1.Manager"
#define UNIT_INTERFACE "org.freedesktop.systemd1.Unit"
#define SERVICE_INTERFACE "org.freedesktop.systemd1.Service"
#define PROPERTIES_INTERFACE "org.freedesktop.DBus.Properties"
#define UNIT_PATH_PREFIX "/org/freedesktop/systemd1/unit"
#define SYSTEM_PRIVATE "/run/systemd/private"
/* How long an unprivileged system service waits at start for its lingering user's
 * manager (user@UID.service, started by logind at boot). */
#define BUS_USER_MANAGER_WAIT_USEC (10 * UINT64_C(1000000))

/* Messages handled in one turn of the loop before it polls again: a burst of signals (a
 * reload restarting every server) must not hold the clients up. */
#define BUS_PROCESS_MAX 64

enum call_kind { CALL_START, CALL_READ, CALL_DONE };

struct bus_call {
        struct bus *bus;
        enum call_kind kind;
        sd_bus_slot *slots[2];
        sd_bus_message *first;  /* CALL_READ: the first of its two replies */
        char *job;              /* CALL_START: its job, once the manager answered */
        char *unit;
        bus_started_fn started;
        bus_unit_fn read;
        bus_done_fn done;
        void *userdata;
        bool dispatching;       /* its callback runs: it is freed when that returns */
        struct bus_call *prev, *next;
};

struct bus_watch {
        struct bus *bus;
        char *unit, *path;
        bus_unit_fn fn;
        void *userdata;
        struct bus_call *read;  /* a read of what the manager only invalidated */
        bool dispatching, freed;
        struct bus_watch *prev, *next;
};

struct bus {
        sd_bus *bus;
        struct event_base *base;
        const struct logger *log;
        struct event *io, *timer, *turn;
        enum manager_kind manager;
        bool direct;            /* the private socket: no broker, no sender names */
        bool lost;
        sd_bus_slot *job_match, *unit_match;
        struct bus_call *calls;
        struct bus_watch *watches;
        bus_lost_fn on_lost;
        void *lost_userdata;
};

/* ---- lists ---- */

#define LIST_PREPEND(head, item)                      \
        do {                                          \
                (item)->prev = NULL;                  \
                (item)->next = (head);                \
                if (head)                             \
                        (head)->prev = (item);        \
                (head) = (item);                      \
        } while (0)

#define LIST_REMOVE(head, item)                               \
        do {                                                  \
                if ((item)->prev)                             \
                        (item)->prev->next = (item)->next;    \
                else                                          \
                        (head) = (item)->next;                \
                if ((item)->next)                             \
                        (item)->next->prev = (item)->prev;    \
                (item)->prev = (item)->next = NULL;           \
        } while (0)

/* ---- where the manager is ---- */

enum manager_kind bus_manager_kind(char *const *env, uid_t euid) {
        return environment_get(env, "MANAGERPID") || euid != 0 ? MANAGER_USER : MANAGER_SYSTEM;
}

static bool is_socket(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* $XDG_RUNTIME_DIR/systemd/private; without it (a system service's environment),
 * /run/user/UID/systemd/private, where user@UID.service's manager listens. */
static char *user_private_path(char *const *env, uid_t euid) {
        const char *runtime = environment_get(env, "XDG_RUNTIME_DIR");
        char *path = NULL;

        if (runtime && runtime[0] != '/')
                return NULL;
        if (runtime ? asprintf(&path, "%s/systemd/private", runtime) < 0
                    : asprintf(&path, "/run/user/%u/systemd/private", (unsigned)euid) < 0)
                return NULL;
        return path;
}

char *bus_private_address(enum manager_kind kind, char *const *env, uid_t euid) {
        _cleanup_free_ char *path = NULL;
        char *address = NULL;

        if (kind == MANAGER_SYSTEM && euid == 0)
                path = strdup(SYSTEM_PRIVATE);
        else if (kind == MANAGER_USER)
                path = user_private_path(env, euid);
        if (!path || !is_socket(path) || asprintf(&address, "unix:path=%s", path) < 0)
                return NULL;
        return address;
}

/* The manager's error as one line: its message, else its name. */
static const char *error_text(const sd_bus_error *e, int r) {
        if (e && e->message)
                return e->message;
        if (e && e->name)
                return e->name;
        return strerror(r < 0 ? -r : r);
}

/* The manager knows no such unit: it is gone, or never was. Only these say so; a timeout,
 * a refusal or a busy manager say nothing of the unit. */
static bool error_is_not_found(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, "org.freedesktop.systemd1.NoSuchUnit", SD_BUS_ERROR_UNKNOWN_OBJECT);
}

/* No answer came in time (sd-bus's own timeout, or a broker's): the call may have been
 * carried out. */
static bool error_is_no_reply(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT);
}

/* ---- the loop ---- */

static void turn(struct bus *b);
static void on_io(evutil_socket_t fd, short what, void *userdata);

static struct bus_call *waiting_start(struct bus *b) {
        for (struct bus_call *c = b->calls; c; c = c->next)
                if (c->kind == CALL_START && c->job && !c->dispatching)
                        return c;
        return NULL;
}

/* Runs the callback of a call that ends; the call is freed after it, whatever it did. */
#define DISPATCH(c, invocation)                 \
        do {                                    \
                (c)->dispatching = true;        \
                invocation;                     \
                call_finish(c);                 \
        } while (0)

static void call_finish(struct bus_call *c);

/* Calls still waiting for a reply were answered with an error by sd-bus as the connection
 * closed; a start answered already waits for its job's signal, which will not come. The
 * owner hears last, and may free the bus then. */
static void lose(struct bus *b, int r) {
        struct bus_call *c;

        if (b->lost)
                return;
        b->lost = true;
        event_del(b->io);
        event_del(b->timer);
        event_del(b->turn);
        log_warning(b->log, "lost the connection to the service manager: %s", strerror(-r));
        while ((c = waiting_start(b)))
                DISPATCH(c, c->started(NULL, NULL, "lost the connection to the service manager", c->userdata));
        if (b->on_lost)
                b->on_lost(b->lost_userdata);
}

/* The events sd-bus waits for, and its next timeout, set on the loop's events again. */
static void rearm(struct bus *b) {
        int events = sd_bus_get_events(b->bus), fd = sd_bus_get_fd(b->bus);
        uint64_t until, now = now_usec();
        struct timeval tv;

        if (events < 0 || fd < 0) {
                lose(b, events < 0 ? events : fd);
                return;
        }
        event_del(b->io);
        if (event_assign(b->io, b->base, fd, ((events & POLLIN) ? EV_READ : 0) | ((events & POLLOUT) ? EV_WRITE : 0),
                         on_io, b) == 0)
                event_add(b->io, NULL);
        event_del(b->timer);
        if (sd_bus_get_timeout(b->bus, &until) >= 0 && until != UINT64_MAX) {
                tv = timeval_from_usec(until > now ? until - now : 0);
                evtimer_add(b->timer, &tv);
        }
}

static void on_io(evutil_socket_t fd, short what, void *userdata) {
        turn(userdata);
}

/* sd_bus_process() until it has nothing left (or BUS_PROCESS_MAX, then once more on the
 * next turn of the loop), then the events again. */
static void turn(struct bus *b) {
        int r = 0, i;

        if (b->lost)
                return;
        for (i = 0; i < BUS_PROCESS_MAX; i++) {
                r = sd_bus_process(b->bus, NULL);
                if (r <= 0)
                        break;
        }
        if (r < 0) {
                lose(b, r);
                return;
        }
        if (i == BUS_PROCESS_MAX)
                event_active(b->turn, 0, 0);
        rearm(b);
}

static int assign_io(struct bus *b) {
        int fd = sd_bus_get_fd(b->bus);

        if (fd < 0)
                return fd;
        b->io = event_new(b->base, fd, EV_READ, on_io, b);
        b->timer = evtimer_new(b->base, on_io, b);
        b->turn = event_new(b->base, -1, 0, on_io, b);
        return b->io && b->timer && b->turn ? 0 : -ENOMEM;
}

/* After a call was queued: sd-bus may have more to write, and a new reply timeout. */
static void kick(struct bus *b) {
        if (!b->lost)
                event_active(b->turn, 0, 0);
}

/* ---- calls ---- */

static void call_free(struct bus_call *c) {
        for (int i = 0; i < 2; i++)
                sd_bus_slot_unref(c->slots[i]);
        sd_bus_message_unref(c->first);
        free(c->job);
        free(c->unit);
        free(c);
}

static void call_finish(struct bus_call *c) {
        LIST_REMOVE(c->bus->calls, c);
        call_free(c);
}

void bus_call_cancel(struct bus_call *c) {
        if (c && !c->dispatching)
                call_finish(c);
}

static struct bus_call *call_new(struct bus *b, enum call_kind kind, const char *unit, void *userdata) {
        struct bus_call *c = calloc(1, sizeof *c);

        if (!c)
                return NULL;
        *c = (struct bus_call){ .bus = b, .kind = kind, .userdata = userdata, .unit = unit ? strdup(unit) : NULL };
        if (unit && !c->unit) {
                free(c);
                return NULL;
        }
        LIST_PREPEND(b->calls, c);
        return c;
}

static int on_done_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct bus_call *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        DISPATCH(c, if (c->done) c->done(e ? error_text(e, 0) : NULL, c->userdata));
        return 0;
}

static int on_start_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct bus_call *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        const char *job = NULL;
        int r = e ? -EIO : sd_bus_message_read(m, "o", &job);

        if (r >= 0 && (c->job = strdup(job)))
                return 0; /* its end comes with JobRemoved */
        DISPATCH(c, c->started(NULL, e && error_is_no_reply(e) ? BUS_START_NO_REPLY : NULL,
                               e ? error_text(e, 0) : "the manager's answer could not be read", c->userdata));
        return 0;
}

static int call_async(struct bus *b, struct bus_call *c, int slot, sd_bus_message *m, sd_bus_message_handler_t handler) {
        int r = sd_bus_call_async(b->bus, &c->slots[slot], m, handler, c, 0);

        if (r >= 0)
                kick(b);
        return r;
}

static int new_manager_call(struct bus *b, const char *method, sd_bus_message **ret) {
        if (b->lost)
                return -ENOTCONN;
        return sd_bus_message_new_method_call(b->bus, ret, MANAGER_NAME, MANAGER_PATH, MANAGER_INTERFACE, method);
}

/* A call made, the handle given out or owned by the bus until it is answered. */
static int launch(struct bus *b, struct bus_call *c, sd_bus_message *m, sd_bus_message_handler_t handler,
                  struct bus_call **ret) {
        int r = call_async(b, c, 0, m, handler);

        sd_bus_message_unref(m);
        if (r < 0) {
                call_finish(c);
                return r;
        }
        if (ret)
                *ret = c;
        return 0;
}

/* The call for message m, built (*r) or not: NULL, with m dropped, when building it failed
 * or memory ran out (*r then says which). */
static struct bus_call *call_for(struct bus *b, sd_bus_message *m, int *r, enum call_kind kind, const char *unit,
                                 void *userdata) {
        struct bus_call *c = NULL;

        if (*r >= 0 && !(c = call_new(b, kind, unit, userdata)))
                *r = -ENOMEM;
        if (*r < 0)
                sd_bus_message_unref(m);
        return c;
}

int bus_start_transient_unit(struct bus *b, const struct unit_properties *p, bus_started_fn done, void *userdata,
                             struct bus_call **ret) {
        sd_bus_message *m = NULL;
        struct bus_call *c;
        int r = new_manager_call(b, "StartTransientUnit", &m);

        if (r >= 0)
                r = sd_bus_message_append(m, "ss", p->unit, "fail");
        if (r >= 0)
                r = unit_properties_append(p, m);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (!(c = call_for(b, m, &r, CALL_START, p->unit, userdata)))
                return r;
        c->started = done;
        return launch(b, c, m, on_start_reply, ret);
}

/* A Manager method of a unit, answered without a value anyone needs; takes m. */
static int unit_call(struct bus *b, sd_bus_message *m, int r, const char *unit, bus_done_fn done, void *userdata,
                     struct bus_call **ret) {
        struct bus_call *c = call_for(b, m, &r, CALL_DONE, unit, userdata);

        if (!c)
                return r;
        c->done = done;
        return launch(b, c, m, on_done_reply, ret);
}

int bus_stop_unit(struct bus *b, const char *unit, bus_done_fn done, void *userdata, struct bus_call **ret) {
        sd_bus_message *m = NULL;
        int r = new_manager_call(b, "StopUnit", &m);

        if (r >= 0)
                r = sd_bus_message_append(m, "ss", unit, "replace");
        return unit_call(b, m, r, unit, done, userdata, ret);
}

int bus_kill_unit(struct bus *b, const char *unit, int signal, bus_done_fn done, void *userdata, struct bus_call **ret) {
        sd_bus_message *m = NULL;
        int r = new_manager_call(b, "KillUnit", &m);

        if (r >= 0)
                r = sd_bus_message_append(m, "ssi", unit, "all", (int32_t)signal);
        return unit_call(b, m, r, unit, done, userdata, ret);
}

int bus_unref_unit(struct bus *b, const char *unit, bus_done_fn done, void *userdata, struct bus_call **ret) {
        sd_bus_message *m = NULL;
        int r = new_manager_call(b, "UnrefUnit", &m);

        if (r >= 0)
                r = sd_bus_message_append(m, "s", unit);
        return unit_call(b, m, r, unit, done, userdata, ret);
}

/* ---- a unit's state ---- */

/* The value of one property of interest, when its type is the expected one. */
static int read_property(sd_bus_message *m, const char *name, struct bus_unit_status *st) {
        static const struct {
                const char *name, *type;
                size_t offset;
                unsigned bit;
        } wanted[] = {
                { "LoadState", "s", offsetof(struct bus_unit_status, load_state), 0 },
                { "ActiveState", "s", offsetof(struct bus_unit_status, active_state), 0 },
                { "SubState", "s", offsetof(struct bus_unit_status, sub_state), 0 },
                { "Result", "s", offsetof(struct bus_unit_status, result), 0 },
                { "ControlGroup", "s", offsetof(struct bus_unit_status, control_group), 0 },
                { "ExecMainCode", "i", offsetof(struct bus_unit_status, exec_main_code), BUS_HAS_EXEC_MAIN_CODE },
                { "ExecMainStatus", "i", offsetof(struct bus_unit_status, exec_main_status), BUS_HAS_EXEC_MAIN_STATUS },
                { "ExecMainPID", "u", offsetof(struct bus_unit_status, exec_main_pid), BUS_HAS_EXEC_MAIN_PID },
        };
        const char *contents;
        char type;
        int r;

        for (size_t i = 0; i < ARRAY_SIZE(wanted); i++) {
                if (strcmp(name, wanted[i].name) != 0)
                        continue;
                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r < 0 || strcmp(contents, wanted[i].type) != 0)
                        break;
                r = sd_bus_message_read(m, "v", wanted[i].type, (char *)st + wanted[i].offset);
                if (r >= 0)
                        st->has |= wanted[i].bit;
                return r;
        }
        return sd_bus_message_skip(m, "v");
}

/* An a{sv} of properties into st. */
static int read_properties(sd_bus_message *m, struct bus_unit_status *st) {
        const char *name;
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");

        while (r > 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                if ((r = sd_bus_message_read(m, "s", &name)) < 0 || (r = read_property(m, name, st)) < 0 ||
                    (r = sd_bus_message_exit_container(m)) < 0)
                        return r;
                r = 1;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int on_read_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct bus_call *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        struct bus_unit_status st = { .unit = c->unit };

        if (!e && !c->first) {
                c->first = sd_bus_message_ref(m);
                return 0;
        }
        if (e) {
                st.error = error_text(e, 0);
                st.not_found = error_is_not_found(e);
        } else if (read_properties(c->first, &st) < 0 || read_properties(m, &st) < 0)
                st = (struct bus_unit_status){ .unit = c->unit, .error = "the manager's answer could not be read" };
        DISPATCH(c, c->read(&st, c->userdata));
        return 0;
}

static int get_all(struct bus *b, struct bus_call *c, int slot, const char *path, const char *interface) {
        sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(b->bus, &m, MANAGER_NAME, path, PROPERTIES_INTERFACE, "GetAll");

        if (r >= 0)
                r = sd_bus_message_append(m, "s", interface);
        if (r >= 0)
                r = call_async(b, c, slot, m, on_read_reply);
        sd_bus_message_unref(m);
        return r;
}

int bus_read_unit(struct bus *b, const char *unit, bus_unit_fn fn, void *userdata, struct bus_call **ret) {
        _cleanup_free_ char *path = NULL;
        struct bus_call *c;
        int r;

        if (b->lost)
                return -ENOTCONN;
        r = sd_bus_path_encode(UNIT_PATH_PREFIX, unit, &path);
        if (r < 0)
                return r;
        if (!(c = call_new(b, CALL_READ, unit, userdata)))
                return -ENOMEM;
        c->read = fn;
        r = get_all(b, c, 0, path, UNIT_INTERFACE);
        if (r >= 0)
                r = get_all(b, c, 1, path, SERVICE_INTERFACE);
        if (r < 0) {
                call_finish(c);
                return r;
        }
        if (ret)
                *ret = c;
        return 0;
}

/* ---- watches ---- */

static struct bus_watch *find_watch(struct bus *b, const char *path) {
        for (struct bus_watch *w = b->watches; w; w = w->next)
                if (!w->freed && strcmp(w->path, path) == 0)
                        return w;
        return NULL;
}

static void watch_destroy(struct bus_watch *w) {
        LIST_REMOVE(w->bus->watches, w);
        bus_call_cancel(w->read);
        free(w->unit);
        free(w->path);
        free(w);
}

void bus_watch_free(struct bus_watch *w) {
        if (!w)
                return;
        if (w->dispatching) {
                w->freed = true;
                return;
        }
        watch_destroy(w);
}

int bus_watch_unit(struct bus *b, const char *unit, bus_unit_fn fn, void *userdata, struct bus_watch **ret) {
        _cleanup_free_ char *path = NULL;
        struct bus_watch *w;
        int r = sd_bus_path_encode(UNIT_PATH_PREFIX, unit, &path);

        if (r < 0)
                return r;
        if (find_watch(b, path))
                return -EEXIST;
        w = calloc(1, sizeof *w);
        if (!w || !(w->unit = strdup(unit))) {
                free(w);
                return -ENOMEM;
        }
        w->bus = b;
        w->path = TAKE_PTR(path);
        w->fn = fn;
        w->userdata = userdata;
        LIST_PREPEND(b->watches, w);
        if (ret)
                *ret = w;
        return 0;
}

static void watch_report(struct bus_watch *w, const struct bus_unit_status *st) {
        w->dispatching = true;
        w->fn(st, w->userdata);
        w->dispatching = false;
        if (w->freed)
                watch_destroy(w);
}

static void on_watch_read(const struct bus_unit_status *st, void *userdata) {
        struct bus_watch *w = userdata;

        w->read = NULL; /* freed once this returns */
        watch_report(w, st);
}

/* Whether the invalidated names (an "as" being read) hold one of ours. */
static int invalidated_wanted(sd_bus_message *m) {
        static const char *const names[] = { "ActiveState", "SubState", "Result", "ControlGroup", "ExecMainCode",
                                             "ExecMainStatus", "ExecMainPID" };
        char **list = NULL;
        bool wanted = false;
        int r = sd_bus_message_read_strv(m, &list);

        for (char **n = list; n && *n; n++)
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        wanted = wanted || strcmp(*n, names[i]) == 0;
        for (char **n = list; n && *n; n++)
                free(*n);
        free(list);
        return r < 0 ? r : wanted;
}

/* PropertiesChanged(interface, changed, invalidated) of any unit: to its watch, if any. */
static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct bus *b = userdata;
        struct bus_watch *w = sd_bus_message_get_path(m) ? find_watch(b, sd_bus_message_get_path(m)) : NULL;
        struct bus_unit_status st = { 0 };
        const char *interface;
        int r;

        if (!w)
                return 0;
        st.unit = w->unit;
        if (sd_bus_message_read(m, "s", &interface) < 0 || read_properties(m, &st) < 0)
                return 0;
        r = invalidated_wanted(m);
        if (r > 0 && !w->read)
                (void)bus_read_unit(b, w->unit, on_watch_read, w, &w->read);
        if (st.active_state || st.sub_state || st.result || st.control_group || st.has)
                watch_report(w, &st);
        return 0;
}

/* JobRemoved(id, job, unit, result): the end of a start. */
static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct bus *b = userdata;
        const char *job, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        for (struct bus_call *c = b->calls; c; c = c->next)
                if (c->kind == CALL_START && c->job && !c->dispatching && strcmp(c->job, job) == 0) {
                        DISPATCH(c, c->started(job, result, NULL, c->userdata));
                        break;
                }
        return 0;
}

/* ---- connecting ---- */

static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct bus *b = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (e)
                log_warning(b->log, "the service manager's signals cannot be received (%s): servers' ends will be noticed late",
                            error_text(e, 0));
        return 0;
}

/* Over a broker, only the manager's own signals (a match by its name makes the broker
 * filter); a direct connection carries no sender, and only the manager is at its end. */
static int add_matches(struct bus *b) {
        _cleanup_free_ char *rule = NULL;
        const char *sender = b->direct ? NULL : MANAGER_NAME;
        int r;

        r = sd_bus_match_signal_async(b->bus, &b->job_match, sender, MANAGER_PATH, MANAGER_INTERFACE, "JobRemoved",
                                      on_job_removed, on_match_installed, b);
        if (r < 0)
                return r;
        if (asprintf(&rule, "type='signal',%s%s%sinterface='" PROPERTIES_INTERFACE "',member='PropertiesChanged',"
                            "path_namespace='" UNIT_PATH_PREFIX "'",
                     sender ? "sender='" : "", sender ? sender : "", sender ? "'," : "") < 0)
                return -ENOMEM;
        return sd_bus_add_match_async(b->bus, &b->unit_match, rule, on_properties_changed, on_match_installed, b);
}

/* Subscribe(), so that the manager sends the signals at all (waits: start-up only). */
static int subscribe(struct bus *b, char **error) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(b->bus, MANAGER_NAME, MANAGER_PATH, MANAGER_INTERFACE, "Subscribe", &e, NULL, NULL);

        if (r < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.systemd1.AlreadySubscribed"))
                text_error(error, "Subscribe(): %s", error_text(&e, r));
        else
                r = 0;
        sd_bus_error_free(&e);
        return r;
}

static int attach(struct event_base *base, const struct logger *log, sd_bus *sdbus, enum manager_kind kind, bool direct,
                  struct bus **ret, char **error) {
        struct bus *b = calloc(1, sizeof *b);
        int r;

        if (!b) {
                sd_bus_flush_close_unref(sdbus);
                return -ENOMEM;
        }
        *b = (struct bus){ .bus = sdbus, .base = base, .log = log, .manager = kind, .direct = direct };
        r = subscribe(b, error);
        if (r >= 0 && (r = add_matches(b)) < 0)
                text_error(error, "cannot watch the service manager's signals: %s", strerror(-r));
        if (r >= 0 && (r = assign_io(b)) < 0)
                text_error(error, "cannot watch the connection: %s", strerror(-r));
        if (r < 0) {
                bus_free(b);
                return r;
        }
        kick(b);
        *ret = b;
        return 0;
}

static int connect_direct(const char *address, sd_bus **ret) {
        sd_bus *sdbus = NULL;
        int r = sd_bus_new(&sdbus);

        if (r >= 0)
                r = sd_bus_set_address(sdbus, address);
        if (r >= 0)
                r = sd_bus_start(sdbus);
        if (r < 0) {
                sd_bus_unref(sdbus);
                return r;
        }
        *ret = sdbus;
        return 0;
}

/* An unprivileged daemon the system manager runs (mcpvisor.service, User=mcpvisor) has
 * its own user's manager when user@UID.service runs: lingering starts it at boot, maybe
 * after the daemon was socket-activated, so a lingering user's is waited for a while. */
static char *wait_user_manager(char *const *env, uid_t euid, const char *name) {
        _cleanup_free_ char *linger = NULL;
        uint64_t deadline = now_usec() + BUS_USER_MANAGER_WAIT_USEC;
        char *address;

        if (asprintf(&linger, "/var/lib/systemd/linger/%s", name) < 0 || access(linger, F_OK) < 0)
                return NULL;
        while (!(address = bus_private_address(MANAGER_USER, env, euid)) && now_usec() < deadline)
                usleep(50000);
        return address;
}

static int no_user_manager(uid_t euid, const char *name, char **error) {
        text_error(error, "cannot reach the user manager of %s (uid %u): no /run/user/%u/systemd/private "
                          "(user@%u.service does not run: loginctl enable-linger %s starts it now and at boot; or the "
                          "service does not see /run/user: ProtectHome=tmpfs with BindReadOnlyPaths=-/run/user shows it)",
                   name, (unsigned)euid, (unsigned)euid, (unsigned)euid, name);
        return -ENOENT;
}

int bus_open(struct event_base *base, const struct logger *log, char *const *env, struct bus **ret, char **error) {
        uid_t euid = geteuid();
        enum manager_kind kind = bus_manager_kind(env, euid);
        _cleanup_free_ char *address = bus_private_address(kind, env, euid);
        const char *manager = kind == MANAGER_USER ? "the user manager" : "the system manager";
        _cleanup_free_ char *detail = NULL;
        sd_bus *sdbus = NULL;
        int r;

        if (!address && kind == MANAGER_USER && !environment_get(env, "MANAGERPID") &&
            !environment_get(env, "XDG_RUNTIME_DIR") && !environment_get(env, "DBUS_SESSION_BUS_ADDRESS")) {
                struct passwd *pw = getpwuid(euid);

                address = pw ? wait_user_manager(env, euid, pw->pw_name) : NULL;
                if (!address)
                        return no_user_manager(euid, pw ? pw->pw_name : "USER", error);
        }
        if (address)
                r = connect_direct(address, &sdbus);
        else
                r = kind == MANAGER_USER ? sd_bus_open_user(&sdbus) : sd_bus_open_system(&sdbus);
        if (r < 0) {
                text_error(error, "cannot connect to %s (%s): %s", manager, address ? address + strlen("unix:path=")
                                                                                    : kind == MANAGER_USER ? "the user bus" : "the system bus",
                          strerror(-r));
                return r;
        }
        r = attach(base, log, sdbus, kind, address != NULL, ret, &detail);
        if (r < 0)
                text_error(error, "cannot use %s: %s", manager, detail ? detail : strerror(-r));
        return r;
}

int bus_open_fd(struct event_base *base, const struct logger *log, int fd, enum manager_kind kind, struct bus **ret,
                char **error) {
        sd_bus *sdbus = NULL;
        int r = sd_bus_new(&sdbus);

        if (r < 0 || (r = sd_bus_set_fd(sdbus, fd, fd)) < 0)
                close(fd); /* not the connection's yet */
        if (r >= 0)
                r = sd_bus_start(sdbus);
        if (r < 0) {
                text_error(error, "cannot start the connection: %s", strerror(-r));
                sd_bus_unref(sdbus);
                return r;
        }
        return attach(base, log, sdbus, kind, true, ret, error);
}

int bus_open_auto(struct event_base *base, const struct logger *log, char *const *env, struct bus **ret) {
        _cleanup_free_ char *error = NULL;

        *ret = NULL;
        if (!environment_get(env, "INVOCATION_ID")) {
                log_notice(log, "servers run as the daemon's children (launcher \"auto\": mcpvisord was not started by a service manager)");
                return LAUNCHER_EXEC;
        }
        if (bus_open(base, log, env, ret, &error) < 0) {
                log_notice(log, "servers run as the daemon's children (launcher \"auto\": %s)", error ? error : "out of memory");
                return LAUNCHER_EXEC;
        }
        /* StartTransientUnit over the system bus would need polkit's grant, root-equivalent
         * whatever the unit (packaging/README.md): an unprivileged system service starts
         * its units in its own user's manager instead, which needs none. Said once. */
        if (!environment_get(env, "MANAGERPID") && geteuid() != 0)
                log_notice(log, "servers run as units of the user manager of uid %u (launcher \"auto\": an unprivileged "
                                "mcpvisord under the system manager uses its own user's, which needs no polkit grant)",
                           (unsigned)geteuid());
        return LAUNCHER_SYSTEMD;
}

struct bus *bus_free(struct bus *b) {
        if (!b)
                return NULL;
        while (b->calls)
                call_finish(b->calls);
        while (b->watches)
                watch_destroy(b->watches);
        sd_bus_slot_unref(b->job_match);
        sd_bus_slot_unref(b->unit_match);
        if (b->io)
                event_free(b->io);
        if (b->timer)
                event_free(b->timer);
        if (b->turn)
                event_free(b->turn);
        /* What is queued (a last StopUnit) is written out, unless the connection never
         * got going: sd_bus_flush() would wait for its authentication. */
        if (sd_bus_is_ready(b->bus) > 0)
                (void)sd_bus_flush(b->bus);
        sd_bus_close_unref(b->bus);
        free(b);
        return NULL;
}

enum manager_kind bus_manager(const struct bus *b) {
        return b->manager;
}

bool bus_can_add_ref(const struct bus *b) {
        return !b->direct;
}

int bus_set_call_timeout(struct bus *b, uint64_t usec) {
        return sd_bus_set_method_call_timeout(b->bus, usec);
}

void bus_set_lost(struct bus *b, bus_lost_fn on_lost, void *userdata) {
        b->on_lost = on_lost;
        b->lost_userdata = userdata;
}

/* ---- a dead predecessor's units ---- */

/* How many times a unit's Environment= is asked for before the start-up gives up. */
#define LEFTOVER_READ_TRIES 3

/* The unit's Environment= into *env: 1; 0 when the unit is gone meanwhile or no service;
 * another error is asked again (the manager may be busy), then returned with *error. */
static int read_environment(struct bus *b, const char *unit, const char *path, char ***env, char **error) {
        for (int i = 1;; i++) {
                sd_bus_error e = SD_BUS_ERROR_NULL;
                int r = sd_bus_get_property_strv(b->bus, MANAGER_NAME, path, SERVICE_INTERFACE, "Environment", &e, env);
                bool gone = r < 0 && (error_is_not_found(&e) ||
                                      sd_bus_error_has_names(&e, SD_BUS_ERROR_UNKNOWN_INTERFACE, SD_BUS_ERROR_UNKNOWN_PROPERTY));

                if (r < 0 && !gone && r != -ENOMEM && i == LEFTOVER_READ_TRIES)
                        text_error(error, "cannot read the environment of %s: %s", unit, error_text(&e, r));
                sd_bus_error_free(&e);
                if (r >= 0 || gone || r == -ENOMEM || i == LEFTOVER_READ_TRIES)
                        return r >= 0 ? 1 : gone ? 0 : r;
                usleep(100000);
        }
}

/* Whether the unit's Environment= names daemon_id as its daemon. */
static int unit_is_ours(struct bus *b, const char *unit, const char *path, const char *daemon_id, char **error) {
        _cleanup_free_ char *marker = NULL;
        char **env = NULL;
        int r = read_environment(b, unit, path, &env, error);
        bool ours = false;

        if (r <= 0)
                return r;
        if (asprintf(&marker, ENV_DAEMON "=%s", daemon_id) < 0)
                marker = NULL;
        for (char **v = env; v && *v; v++) {
                ours = ours || (marker && strcmp(*v, marker) == 0);
                free(*v);
        }
        free(env);
        return marker ? ours : -ENOMEM;
}

static int stop_now(struct bus *b, const char *unit, char **error) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(b->bus, MANAGER_NAME, MANAGER_PATH, MANAGER_INTERFACE, "StopUnit", &e, NULL, "ss", unit,
                                   "replace");

        if (r < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
                text_error(error, "cannot stop %s: %s", unit, error_text(&e, r));
        else
                r = 0;
        sd_bus_error_free(&e);
        return r;
}

/* ListUnitsByPatterns([], [UNIT_PATTERN]), the reply positioned at its array. */
static int list_units(struct bus *b, sd_bus_message **ret, char **error) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL;
        int r = new_manager_call(b, "ListUnitsByPatterns", &m);

        if (r >= 0)
                r = sd_bus_message_append(m, "as", 0);
        if (r >= 0)
                r = sd_bus_message_append(m, "as", 1, UNIT_PATTERN);
        if (r >= 0)
                r = sd_bus_call(b->bus, m, 0, &e, ret);
        if (r < 0)
                text_error(error, "cannot list the units " UNIT_PATTERN ": %s", error_text(&e, r));
        sd_bus_message_unref(m);
        sd_bus_error_free(&e);
        return r;
}

/* Appends a copy of name to the NULL-terminated *list of *n names. */
static int push_name(char ***list, int *n, const char *name) {
        char **l = realloc(*list, (size_t)(*n + 2) * sizeof *l);

        if (!l)
                return -ENOMEM;
        *list = l;
        l[*n] = strdup(name);
        if (!l[*n])
                return -ENOMEM;
        l[++*n] = NULL;
        return 0;
}

/* Whether the manager still lists a unit named in units (loaded: not yet collected). */
static int any_listed(struct bus *b, char *const *units, char **error) {
        const char *unit;
        sd_bus_message *reply = NULL;
        int r = list_units(b, &reply, error), found = 0;

        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        while (r > 0 && !found &&
               (r = sd_bus_message_read(reply, "(ssssssouso)", &unit, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                        NULL)) > 0)
                for (char *const *u = units; *u; u++)
                        found = found || strcmp(*u, unit) == 0;
        sd_bus_message_unref(reply);
        return r < 0 ? r : found;
}

int bus_wait_collected(struct bus *b, char *const *units, uint64_t timeout_usec, char **error) {
        uint64_t deadline = now_usec() + timeout_usec;
        int r;

        while ((r = any_listed(b, units, error)) > 0 && now_usec() < deadline)
                usleep(20000);
        if (r > 0)
                text_error(error, "%s%s still loaded after %g s", units[0], units[1] ? " and others" : "",
                          (double)timeout_usec / 1e6);
        kick(b); /* what came meanwhile waits in sd-bus's queue for the loop */
        return r > 0 ? -ETIMEDOUT : r;
}

int bus_stop_leftovers(struct bus *b, const char *daemon_id, char **error) {
        const char *unit, *path;
        sd_bus_message *reply = NULL;
        char **stopped = NULL;
        int r = list_units(b, &reply, error), n = 0;

        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        while (r > 0 && (r = sd_bus_message_read(reply, "(ssssssouso)", &unit, NULL, NULL, NULL, NULL, NULL, &path, NULL, NULL,
                                                 NULL)) > 0) {
                int ours = unit_is_ours(b, unit, path, daemon_id, error);

                if (ours > 0)
                        ours = stop_now(b, unit, error) ?: push_name(&stopped, &n, unit);
                if (ours < 0) {
                        r = ours;
                        break;
                }
        }
        if (r < 0 && !*error)
                text_error(error, "cannot read the units " UNIT_PATTERN ": %s", strerror(-r));
        sd_bus_message_unref(reply);
        /* A new run may be given the name of one the predecessor left (its numbers start
         * at 1 again), and StartTransientUnit refuses a name still loaded: wait until they
         * are collected, which takes at most their TimeoutStopUSec= (killTimeout). */
        if (r >= 0 && n > 0)
                r = bus_wait_collected(b, stopped, BUS_LEFTOVER_WAIT_USEC, error);
        for (int i = 0; i < n; i++)
                free(stopped[i]);
        free(stopped);
        kick(b);
        return r < 0 ? r : n;
}
