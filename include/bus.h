/* The daemon's connection to the service manager that runs it, for the systemd launcher:
 * connecting (the manager's private socket when it may be used, else the bus), the sd-bus
 * connection driven by the daemon's libevent loop without ever blocking it, and the
 * manager's methods a server's unit needs, each asynchronous with a completion callback:
 * StartTransientUnit (which completes when its job does), reading and watching a unit's
 * state, StopUnit, KillUnit, UnrefUnit. Only bus_open() and bus_stop_leftovers() wait for
 * the manager, once, at start-up.
 *
 * MANAGERPID in the environment means a user manager runs the daemon (it sets it for its
 * services only): $XDG_RUNTIME_DIR/systemd/private when it exists, else the user bus.
 * Otherwise the system manager: /run/systemd/private as root, else the system bus, where
 * an unprivileged daemon needs polkit's grant for org.freedesktop.systemd1.manage-units.
 * The private socket is a direct connection: signals need no match there, but the manager
 * cannot track the daemon as a peer (AddRef=, unit-properties.h). Over the bus, signals
 * are taken from org.freedesktop.systemd1 only, so another client cannot fake a unit's
 * end. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "confinement.h"
#include "unit-properties.h"

struct event_base;
struct logger;
struct bus;
struct bus_call;
struct bus_watch;

/* A unit's state as a PropertiesChanged signal or a read reported it; the strings live
 * for the callback only. A field the report did not carry is NULL, or its bit is clear
 * in has. */
struct bus_unit_status {
        const char *unit;
        const char *load_state;   /* "loaded"; "not-found" when the manager collected the unit
                                   * already: the rest is then a stub's, not the unit's */
        const char *active_state; /* "activating", "active", "deactivating", "inactive", "failed" */
        const char *sub_state;
        const char *result;       /* "success", "exit-code", "signal", "core-dump", "oom-kill", "timeout", ... */
        const char *control_group; /* "/mcpvisor.slice/mcpvisor-fs@106bb1be-3.service" (cgroup-usage.h) */
        int32_t exec_main_code;   /* CLD_EXITED, CLD_KILLED, CLD_DUMPED; 0 while it runs */
        int32_t exec_main_status; /* its exit status or signal */
        uint32_t exec_main_pid;
        unsigned has;             /* BUS_HAS_* */
        const char *error;        /* a read that failed: the manager's error; nothing else is set */
        bool not_found;           /* the read failed because the manager knows no such unit
                                   * (NoSuchUnit, no such object); any other error (no answer
                                   * in time, a refusal, a busy manager) says nothing of the unit */
};

enum {
        BUS_HAS_EXEC_MAIN_CODE = 1 << 0,
        BUS_HAS_EXEC_MAIN_STATUS = 1 << 1,
        BUS_HAS_EXEC_MAIN_PID = 1 << 2,
};

/* A start's end: the job and how it ended (JobRemoved's result: "done", "failed",
 * "canceled", "timeout", "dependency", "skipped"), or error (the manager's answer to the
 * call, or the connection lost) with job and result NULL; or error with result
 * BUS_START_NO_REPLY when no answer came in time: the unit may have started then. */
#define BUS_START_NO_REPLY "no-reply"
typedef void (*bus_started_fn)(const char *job, const char *result, const char *error, void *userdata);
typedef void (*bus_unit_fn)(const struct bus_unit_status *status, void *userdata);
/* error is NULL on success. */
typedef void (*bus_done_fn)(const char *error, void *userdata);
/* The connection is gone; every call in flight was answered with an error first. */
typedef void (*bus_lost_fn)(void *userdata);

/* The manager that starts the units of a process with this environment and effective
 * uid: the user manager that runs it (MANAGERPID); else the system manager for root; else
 * (an unprivileged daemon under the system manager, or none) its own user's manager,
 * user@UID.service: StartTransientUnit over the system bus would need polkit's grant for
 * org.freedesktop.systemd1.manage-units, root-equivalent whatever the unit, which no
 * package should give (packaging/README.md). */
enum manager_kind bus_manager_kind(char *const *env, uid_t euid);

/* The manager's private socket as an sd-bus address ("unix:path=..."), when this process
 * may use it (the system one as root only; a user manager's is $XDG_RUNTIME_DIR/systemd/
 * private, or /run/user/UID/systemd/private without XDG_RUNTIME_DIR) and it exists; NULL
 * otherwise (use the bus). */
char *bus_private_address(enum manager_kind kind, char *const *env, uid_t euid);

/* Connects to the manager that runs the daemon (env: the daemon's environment), attaches
 * the connection to base and subscribes to the manager's signals (this waits for its
 * answer: start-up only). 0, or a negative errno with *error (malloc'd) saying what was
 * tried and what failed. */
int bus_open(struct event_base *base, const struct logger *log, char *const *env, struct bus **ret, char **error);

/* The same over a connected socket (a test's own manager): direct as the private socket.
 * fd is the connection's from the call on, even when it fails. */
int bus_open_fd(struct event_base *base, const struct logger *log, int fd, enum manager_kind kind, struct bus **ret,
                char **error);

/* "auto": LAUNCHER_SYSTEMD with *ret connected when the daemon was started by a service
 * manager ($INVOCATION_ID) and bus_open() reaches the manager of bus_manager_kind() (for
 * an unprivileged system service, its user's manager must run: lingering); else
 * LAUNCHER_EXEC, *ret NULL, and the reason logged once. */
int bus_open_auto(struct event_base *base, const struct logger *log, char *const *env, struct bus **ret);

/* Never from one of the bus's callbacks (on_lost is the exception: it comes last). No
 * callback is called for what was in flight. */
struct bus *bus_free(struct bus *b);

enum manager_kind bus_manager(const struct bus *b);
/* Whether the manager can track the daemon as a peer (a bus, not the private socket):
 * unit_input.add_ref. */
bool bus_can_add_ref(const struct bus *b);
/* How long a call waits for its answer (sd-bus's default: 25 s); tests shorten it. */
int bus_set_call_timeout(struct bus *b, uint64_t usec);
/* on_lost is called once if the connection drops. */
void bus_set_lost(struct bus *b, bus_lost_fn on_lost, void *userdata);

/* Starts the transient unit p describes ("fail" mode: an existing unit of the name is an
 * error). done is called once, when its job ended, or with the error. *ret (may be NULL)
 * can cancel it until then; it is freed once done returned. */
int bus_start_transient_unit(struct bus *b, const struct unit_properties *p, bus_started_fn done, void *userdata,
                             struct bus_call **ret);

/* Reads the unit's state (its Unit and Service properties); fn is called once. */
int bus_read_unit(struct bus *b, const char *unit, bus_unit_fn fn, void *userdata, struct bus_call **ret);

/* StopUnit(unit, "replace"): SIGTERM to its cgroup, SIGKILL after TimeoutStopUSec=. */
int bus_stop_unit(struct bus *b, const char *unit, bus_done_fn done, void *userdata, struct bus_call **ret);
/* KillUnit(unit, "all", signal): every process of the unit. */
int bus_kill_unit(struct bus *b, const char *unit, int signal, bus_done_fn done, void *userdata, struct bus_call **ret);
/* UnrefUnit(unit): drops AddRef='s reference, so the unit is collected once inactive. */
int bus_unref_unit(struct bus *b, const char *unit, bus_done_fn done, void *userdata, struct bus_call **ret);

/* NULL-safe; the callback is not called. A handle is valid until its callback returned
 * (cancelling it from inside that callback is allowed and changes nothing). */
void bus_call_cancel(struct bus_call *c);

/* fn is called with each change of the unit's state (PropertiesChanged), and with a read
 * when the manager only says a property changed. One watch per unit: -EEXIST. */
int bus_watch_unit(struct bus *b, const char *unit, bus_unit_fn fn, void *userdata, struct bus_watch **ret);
/* NULL-safe; may be called from the watch's own callback. */
void bus_watch_free(struct bus_watch *w);

/* At start-up, before any server runs: stops the units named UNIT_PATTERN whose
 * Environment= holds MCPVISOR_DAEMON=daemon_id (a dead predecessor's on the same socket,
 * environment.h), and waits until the manager collected them (at most
 * BUS_LEFTOVER_WAIT_USEC), since the new runs may be given their names. Returns how many
 * were stopped, or a negative errno with *error (malloc'd). */
#define BUS_LEFTOVER_WAIT_USEC (30 * UINT64_C(1000000))
int bus_stop_leftovers(struct bus *b, const char *daemon_id, char **error);

/* Waits (blocking: the daemon's exit, without its loop) until the manager no longer has
 * any of the NULL-terminated units loaded, at most timeout_usec. 0, -ETIMEDOUT with *error
 * naming what is still there, or another negative errno with *error (malloc'd). */
int bus_wait_collected(struct bus *b, char *const *units, uint64_t timeout_usec, char **error);
