/* The systemd launcher: each start of a server is a transient unit of the service manager
 * that runs the daemon (mcpvisor-NAME@TAG-N.service, unit-properties.h), started over bus.c
 * with the server's ends of its pipes handed over as its stdin, stdout and stderr. The
 * daemon keeps reading the other ends as with exec (the <N> prefixes and flood limits of
 * stderr-reader.c), and supervision stays its own; this file only starts the unit, stops
 * or kills it when server.c escalates, and watches it until it is inactive or failed: all
 * of its processes gone. Then Result=, ExecMainCode= and ExecMainStatus= say how it ended,
 * with the manager's words for what code and status cannot tell (the OOM killer). */
#include "launcher.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bus.h"
#include "cgroup-usage.h"
#include "environment.h"
#include "run.h"
#include "log.h"
#include "macro.h"
#include "oom-watch.h"
#include "process.h"
#include "run-as.h"
#include "server-cause.h"
#include "server-config.h"
#include "server.h"
#include "supervisor.h"
#include "time-util.h"
#include "unit-properties.h"

#ifndef MCPVISOR_LIBEXECDIR
#define MCPVISOR_LIBEXECDIR "/usr/libexec/mcpvisor"
#endif

/* A read of the unit the manager answered with an error other than "no such unit" (no
 * answer in time, a busy or refusing manager) is tried again after 100 ms, then twice as
 * long each time: 6 tries over 3.1 s, then the run is given up and its unit stopped. */
#define READ_TRIES 6
#define READ_RETRY_USEC (100 * UINT64_C(1000))

/* At the daemon's exit: how long it waits for its units to be collected once killed. */
#define EXIT_WAIT_USEC (5 * UINT64_C(1000000))

struct systemd_run;

/* Where a run is in its life; set_state() is the only place it changes. A live run
 * (starting, running, ending) owns its unit's watch, its calls to the manager, the timer
 * of its next read and AddRef='s reference; an ended or abandoned one owns none of them,
 * so nothing of the manager's can reach it any more. */
enum run_state {
        RUN_STARTING,  /* StartTransientUnit asked, its job not done: what the watch says may be
                        * a predecessor's unit of the same name, and is forgotten at the job's end */
        RUN_RUNNING,   /* its start job done (or never answered, and the unit stopped): watched
                        * until the manager says it is inactive or failed */
        RUN_ENDING,    /* said inactive or failed: one read more has the last word */
        RUN_ENDED,     /* its end reported (run_ended()) */
        RUN_ABANDONED, /* killed at the daemon's exit: its end is never reported */
        RUN_STATE_COUNT,
};

struct run_systemd {
        struct bus *bus;     /* NULL: the daemon has no connection to the manager (error says why) */
        bool own_bus;        /* made by systemd_init, freed with this */
        char *error;
        const struct logger *log;
        char *helper;        /* mcpvisor-exec-credentials, absolute; NULL: none found */
        char *default_user;  /* User= of units under the system manager: the daemon's user */
        struct systemd_run *runs;
};

struct systemd_run {
        struct systemd_run *prev, *next;
        struct run_systemd *rs;
        struct run *in;
        char *unit;
        struct bus_call *start, *read, *stop, *kill;
        struct bus_watch *watch;
        struct event *retry;  /* the next read after one that failed */
        unsigned read_failures; /* in a row */
        char *control_group;
        char result[32];      /* Result=, "" while not known */
        int code, status;     /* ExecMainCode=, ExecMainStatus= */
        pid_t main_pid;
        enum run_state state;
        bool add_ref;         /* started with AddRef=: the reference is dropped as it stops being live */
        uint64_t tasks_refused; /* pids.events max, as last read */
        struct oom_watch *oom;  /* a hybrid host's v1 memory cgroup, watched for OOM kills */
        struct bus_call *oom_registrar; /* the manager's unit registering it, until its job ended */
        char *failure;        /* why it ended without running, or why it is no longer known; NULL for none */
        uint64_t memory_max;  /* the limits it was started with, for the words of its end */
        unsigned tasks_max;
};

static struct systemd_run *run_of(const struct run *in) {
        return in->launcher;
}

/* ---- its state ---- */

static const char *const state_names[RUN_STATE_COUNT] = {
        [RUN_STARTING] = "starting", [RUN_RUNNING] = "running", [RUN_ENDING] = "ending",
        [RUN_ENDED] = "ended",       [RUN_ABANDONED] = "abandoned",
};

static bool state_live(enum run_state state) {
        return state == RUN_STARTING || state == RUN_RUNNING || state == RUN_ENDING;
}

static bool live(const struct systemd_run *x) {
        return state_live(x->state);
}

/* What may follow what: a run only goes forward, and once not live it stays where it is. */
static const bool moves[RUN_STATE_COUNT][RUN_STATE_COUNT] = {
        [RUN_STARTING] = { [RUN_RUNNING] = true, [RUN_ENDED] = true, [RUN_ABANDONED] = true },
        [RUN_RUNNING] = { [RUN_ENDING] = true, [RUN_ENDED] = true, [RUN_ABANDONED] = true },
        [RUN_ENDING] = { [RUN_ENDED] = true, [RUN_ABANDONED] = true },
};

/* Something that cannot happen in the run's state (a call answered that it no longer
 * has, a move backwards): a bug of the daemon's, stopped hard rather than run on with a
 * run whose state no longer says what it owns. Not assert(): release builds keep it. */
_Noreturn static void impossible(const struct systemd_run *x, const char *what) {
        log_emit(x->rs ? x->rs->log : NULL, LOG_CRIT, NULL, "bug: %s: %s in state %s", x->unit, what,
                 state_names[x->state]);
        abort();
}

/* What a state no longer owns, dropped as the run enters it: the start's call once it is
 * not starting; everything the manager could answer or report once it is not live, and
 * AddRef='s reference (which kept the unit for the daemon: dropped, CollectMode= collects
 * it). */
static void release(struct systemd_run *x, enum run_state state) {
        if (state != RUN_STARTING) {
                bus_call_cancel(x->start);
                x->start = NULL;
        }
        if (state_live(state))
                return;
        bus_watch_free(x->watch);
        x->watch = NULL;
        bus_call_cancel(x->read);
        bus_call_cancel(x->stop);
        bus_call_cancel(x->kill);
        x->read = x->stop = x->kill = NULL;
        if (x->retry)
                evtimer_del(x->retry);
        if (x->add_ref)
                (void)bus_unref_unit(x->rs->bus, x->unit, NULL, NULL, NULL);
}

/* The only place a run changes state: the move checked, what the old state owned and the
 * new one does not released, and the end told once, as the run enters it. */
static void set_state(struct systemd_run *x, enum run_state state) {
        enum run_state old = x->state;

        if (!moves[old][state]) {
                char what[64];

                snprintf(what, sizeof what, "a move to %s", state_names[state]);
                impossible(x, what);
        }
        x->state = state;
        log_debug(x->rs->log, "%s: %s -> %s", x->unit, state_names[old], state_names[state]);
        release(x, state);
        if (state == RUN_ENDED)
                run_ended(x->in);
}

/* ---- the end ---- */

static void end(struct systemd_run *x) {
        set_state(x, RUN_ENDED);
}

/* The first words of why it ended stand. */
static void fail(struct systemd_run *x, const char *fmt, ...) _printf_(2, 3);
static void fail(struct systemd_run *x, const char *fmt, ...) {
        va_list ap;

        if (!x->failure) {
                va_start(ap, fmt);
                if (vasprintf(&x->failure, fmt, ap) < 0)
                        x->failure = NULL;
                va_end(ap);
        }
        end(x);
}

static void read_unit(struct systemd_run *x);
static void on_retry(evutil_socket_t fd, short what, void *userdata);

/* The unit ended once its start ran and it is inactive or failed: nothing of it is left.
 * Result= and ExecMain*= came before (the manager sends the Service interface's changes
 * first), unless only invalidated: one read more has the last word, or finds the unit
 * collected already (CollectMode=), and then what the signals said stands. Whatever is
 * said after "inactive" or "failed" is that last word. */
static void check_end(struct systemd_run *x, bool dead) {
        switch (x->state) {
        case RUN_STARTING: /* a predecessor's, or forgotten once its job is done */
                return;
        case RUN_RUNNING:
                if (!dead)
                        return;
                set_state(x, RUN_ENDING);
                read_unit(x);
                return;
        case RUN_ENDING:
                end(x);
                return;
        default:
                impossible(x, "a report of its unit");
        }
}

/* pids.events max counts the forks refused at TasksMax=; read while the cgroup is there
 * (it goes with the unit), so the end can tell. */
static void sample_tasks(struct systemd_run *x) {
        struct cgroup_usage u;

        if (!x->tasks_max || !x->control_group || cgroup_usage_read_group(x->control_group, &u) < 0)
                return;
        if (u.tasks_refused != CGROUP_USAGE_UNKNOWN)
                x->tasks_refused = u.tasks_refused;
}

static bool state_is(const char *s, const char *a, const char *b) {
        return s && (strcmp(s, a) == 0 || (b && strcmp(s, b) == 0));
}

/* The report says the unit is inactive or failed: all of its processes are gone. */
static bool says_dead(const struct bus_unit_status *st) {
        return state_is(st->active_state, "inactive", "failed");
}

static void on_oom_registered(const char *job, const char *result, const char *error, void *userdata) {
        struct systemd_run *x = userdata;

        x->oom_registrar = NULL;
        if (error || strcmp(result, "done") != 0) {
                log_warning(x->rs->log, "%s: the service manager's unit did not register its OOM watch (%s): an OOM kill "
                                        "of it will be told as a SIGKILL",
                            x->unit, error ? error : result);
                return;
        }
        oom_watch_registered(x->oom);
        log_debug(x->rs->log, "%s: its v1 memory cgroup is watched for OOM kills (registered by the service manager)", x->unit);
}

/* cgroup.event_control is read-only to a daemon under ProtectControlGroups=yes (the
 * shipped unit): a oneshot unit of the manager's, to which it is writable, registers the
 * daemon's eventfd in its stead. A root daemon's manager only: the file is root's. */
static int register_oom_by_manager(struct systemd_run *x) {
        struct unit_properties p = { 0 };
        const char *event_control;
        int efd, control, r;

        if (geteuid() != 0 || bus_manager(x->rs->bus) != MANAGER_SYSTEM)
                return -EROFS;
        oom_watch_handover(x->oom, &efd, &control, &event_control);
        r = unit_properties_build_oom_registrar(x->unit, event_control, efd, control, &p);
        if (r == 0)
                r = bus_start_transient_unit(x->rs->bus, &p, on_oom_registered, x, &x->oom_registrar);
        unit_properties_done(&p);
        return r;
}

/* On a host of the hybrid layout the manager does not tell an OOM kill (Result=oom-kill
 * comes from the unified tree's memory.events, and the memory controller is on v1): the
 * kernel tells the daemon itself. Tried once the cgroup is known (the manager made it in
 * every hierarchy before the fork), for runs with memoryMax; -ENOENT is a unified host,
 * where the manager tells. */
static void watch_oom(struct systemd_run *x) {
        int r;

        if (!x->memory_max || x->memory_max == CONFINEMENT_INFINITY || !x->control_group)
                return;
        r = oom_watch_new(run_event_base(x->in), CGROUP_ROOT "/memory", x->control_group, &x->oom);
        if (r == 0)
                r = oom_watch_register(x->oom);
        if (r == -EROFS)
                r = register_oom_by_manager(x);
        if (r < 0 && r != -ENOENT)
                log_warning(x->rs->log, "%s: cannot watch its v1 memory cgroup for OOM kills (%s): an OOM kill of it will "
                                        "be told as a SIGKILL",
                            x->unit, strerror(-r));
        if (r < 0) {
                oom_watch_free(x->oom);
                x->oom = NULL;
        }
}

/* A report of the unit's state, from a watch or a read: kept, then the end checked. The
 * manager sends the Service interface's changes before the Unit's, so Result= and
 * ExecMain*= are known when ActiveState= says it ended. */
static void take_status(struct systemd_run *x, const struct bus_unit_status *st) {
        bool cgroup_known = x->control_group != NULL;

        if (st->result)
                snprintf(x->result, sizeof x->result, "%s", st->result);
        if (st->control_group && st->control_group[0] && (!x->control_group || strcmp(x->control_group, st->control_group))) {
                free(x->control_group);
                x->control_group = strdup(st->control_group);
        }
        if (st->has & BUS_HAS_EXEC_MAIN_CODE)
                x->code = st->exec_main_code;
        if (st->has & BUS_HAS_EXEC_MAIN_STATUS)
                x->status = st->exec_main_status;
        if ((st->has & BUS_HAS_EXEC_MAIN_PID) && st->exec_main_pid)
                x->main_pid = (pid_t)st->exec_main_pid;
        sample_tasks(x);
        if (!cgroup_known) /* tried once, as the cgroup becomes known: it does not move */
                watch_oom(x);
}

/* The manager no longer knows the unit once it ran (collected already), so it ended: what
 * the signals said stands. */
static void unit_gone(struct systemd_run *x, const char *why) {
        if (x->state == RUN_RUNNING && x->code == 0)
                fail(x, "its unit %s is gone (%s)", x->unit, why);
        else
                end(x);
}

/* A "not-found" stub: the manager loads one to answer for a unit it collected already
 * (inactive, Result=success, ExecMain*=0); its zeros are never the unit's end. */
static bool is_stub(const struct bus_unit_status *st) {
        return state_is(st->load_state, "not-found", NULL);
}

/* A report from the watch, or a read's. */
static void on_unit(const struct bus_unit_status *st, void *userdata) {
        struct systemd_run *x = userdata;

        if (!live(x))
                impossible(x, "a report of its unit");
        if (is_stub(st)) {
                if (x->state != RUN_STARTING)
                        unit_gone(x, "collected by the service manager");
                return;
        }
        take_status(x, st);
        check_end(x, says_dead(st));
}

/* Reads failed READ_TRIES times in a row: the run is given up, and its unit stopped, since
 * it may still run (a new start has another name). */
static void give_up(struct systemd_run *x, const char *error) {
        log_warning(x->rs->log, "cannot read the state of unit %s (%s): stopping it", x->unit, error);
        (void)bus_stop_unit(x->rs->bus, x->unit, NULL, NULL, NULL);
        fail(x, "the service manager did not say how its unit %s is (%s)", x->unit, error);
}

/* An error that says nothing of the unit: read again, later. */
static void retry_read(struct systemd_run *x, const char *error) {
        uint64_t delay = READ_RETRY_USEC << x->read_failures;
        struct timeval tv = timeval_from_usec(delay);

        if (++x->read_failures >= READ_TRIES) {
                give_up(x, error);
                return;
        }
        log_debug(x->rs->log, "%s: reading its state failed (%s): again in %g s", x->unit, error, (double)delay / 1e6);
        if (!x->retry && !(x->retry = evtimer_new(run_event_base(x->in), on_retry, x))) {
                give_up(x, "out of memory");
                return;
        }
        evtimer_add(x->retry, &tv);
}

/* A read after the start, or after a stop or kill the manager refused. Once the unit ran,
 * the manager knowing no such unit means it is gone; any other error, that the manager
 * could not answer now. */
static void on_read(const struct bus_unit_status *st, void *userdata) {
        struct systemd_run *x = userdata;

        x->read = NULL;
        if (!live(x))
                impossible(x, "the answer to a read");
        if (st->error && !st->not_found) {
                retry_read(x, st->error);
                return;
        }
        x->read_failures = 0;
        if (st->error) {
                unit_gone(x, st->error);
                return;
        }
        on_unit(st, x);
}

static void read_unit(struct systemd_run *x) {
        if (!x->read && (!x->retry || !evtimer_pending(x->retry, NULL)) &&
            bus_read_unit(x->rs->bus, x->unit, on_read, x, &x->read) < 0)
                fail(x, "cannot read the state of its unit %s", x->unit);
}

static void on_retry(evutil_socket_t fd, short what, void *userdata) {
        struct systemd_run *x = userdata;

        if (!live(x))
                impossible(x, "the timer of a read");
        read_unit(x);
}

static int systemd_terminate(struct run *in);

/* The manager did not answer the start in time: the unit may have started anyway, and
 * would be left running unwatched. It is stopped, and the run ends once the manager says
 * the unit is inactive or gone (a stop of a unit never started is refused, and the read
 * that follows finds none). */
static void start_unanswered(struct systemd_run *x, const char *error) {
        free(x->failure);
        if (asprintf(&x->failure, "the service manager did not answer the start of unit %s (%s); stopped, in case it started",
                     x->unit, error) < 0)
                x->failure = NULL;
        set_state(x, RUN_RUNNING);
        if (systemd_terminate(x->in) < 0)
                end(x);
}

static void on_started(const char *job, const char *result, const char *error, void *userdata) {
        struct systemd_run *x = userdata;

        x->start = NULL;
        if (x->state != RUN_STARTING)
                impossible(x, "the answer to its start");
        if (error && result && strcmp(result, BUS_START_NO_REPLY) == 0) {
                start_unanswered(x, error);
                return;
        }
        if (error) {
                fail(x, "the service manager did not start unit %s: %s", x->unit, error);
                return;
        }
        if (strcmp(result, "done") != 0) {
                /* The unit is collected at once (CollectMode=); Result= came before. */
                fail(x, "unit %s failed to start (job %s%s%s)", x->unit, result, x->result[0] ? ", Result=" : "",
                     x->result);
                return;
        }
        /* What came before may be a predecessor's unit of the same name, stopped at start-up
         * (bus_stop_leftovers()): its signals were queued before this answer. Forgotten;
         * a read says where this one is. */
        set_state(x, RUN_RUNNING);
        x->code = x->status = 0;
        x->result[0] = '\0';
        read_unit(x);
}

/* StopUnit or KillUnit answered. A refusal is the manager's; whether the unit still runs,
 * a read tells. */
static void on_signalled(const char *error, void *userdata, struct bus_call **slot) {
        struct systemd_run *x = userdata;

        *slot = NULL;
        if (!live(x))
                impossible(x, "the answer to a stop or kill");
        if (error) {
                log_debug(x->rs->log, "%s: %s", x->unit, error);
                read_unit(x);
        }
}

static void on_stopped(const char *error, void *userdata) {
        on_signalled(error, userdata, &((struct systemd_run *)userdata)->stop);
}

static void on_killed(const char *error, void *userdata) {
        on_signalled(error, userdata, &((struct systemd_run *)userdata)->kill);
}

/* ---- starting ---- */

static void close_stdio(const struct run_stdio *stdio) {
        close(stdio->in);
        close(stdio->out);
        close(stdio->err);
}

static int build_unit(struct run_systemd *rs, const struct run *in, const struct server_config *c, char **env,
                      const struct run_stdio *stdio, struct unit_properties *p, char **error) {
        const struct supervisor *sv = in->server->sv;
        _cleanup_free_ char *program = NULL;
        struct unit_input ui;
        int r;

        r = confinement_check_manager(&c->confinement, bus_manager(rs->bus), error);
        if (r < 0)
                return r;
        r = run_as_check(in->server->run_as, c->name, geteuid(), bus_manager(rs->bus) == MANAGER_USER, error);
        if (r < 0)
                return r;
        r = environment_find_server_program(c, environment_get(env, "PATH"), &program, error);
        if (r < 0)
                return r;
        ui = (struct unit_input){
                .server = c,
                .manager = bus_manager(rs->bus),
                .daemon_id = sv->daemon_id,
                .run = in->number,
                .program = program,
                .daemon_env = sv->daemon_env,
                .credentials_dir = sv->credentials_dir,
                .credential_helper = rs->helper,
                .default_user = rs->default_user,
                .run_as = in->server->run_as,
                .add_ref = bus_can_add_ref(rs->bus),
                .stdio = { stdio->in, stdio->out, stdio->err },
        };
        r = unit_properties_build(&ui, p, error);
        /* What the entry asks cannot be a unit: a start again would fail the same. */
        return r == -EINVAL ? -EPERM : r;
}

static void systemd_run_free(struct systemd_run *x) {
        if (!x)
                return;
        bus_call_cancel(x->start);
        bus_call_cancel(x->read);
        bus_call_cancel(x->stop);
        bus_call_cancel(x->kill);
        bus_call_cancel(x->oom_registrar);
        bus_watch_free(x->watch);
        if (x->retry)
                event_free(x->retry);
        if (x->rs) {
                if (x->prev)
                        x->prev->next = x->next;
                else if (x->rs->runs == x)
                        x->rs->runs = x->next;
                if (x->next)
                        x->next->prev = x->prev;
        }
        oom_watch_free(x->oom);
        free(x->control_group);
        free(x->failure);
        free(x->unit);
        free(x);
}

static int systemd_start(struct run *in, const struct server_config *c, char **env, const struct run_stdio *stdio,
                         char **error) {
        struct run_systemd *rs = *run_launcher_part_of(in);
        struct unit_properties p = { 0 };
        struct systemd_run *x = NULL;
        int r;

        if (!rs || !rs->bus) {
                close_stdio(stdio);
                if (asprintf(error, "launcher \"systemd\" needs the service manager, and mcpvisord has no connection to it (%s)",
                             rs && rs->error ? rs->error
                                             : "not made: it is made at start, for a configuration that "
                                               "names this launcher; restart mcpvisord") < 0)
                        *error = NULL;
                return -ENOTCONN;
        }
        r = build_unit(rs, in, c, env, stdio, &p, error);
        if (r == 0 && (!(x = calloc(1, sizeof *x)) || !(x->unit = strdup(p.unit))))
                r = -ENOMEM;
        if (r == 0) {
                *x = (struct systemd_run){ .rs = rs, .in = in, .unit = x->unit, .state = RUN_STARTING,
                                           .memory_max = c->confinement.memory_max,
                                           .tasks_max = c->confinement.tasks_max,
                                           .add_ref = unit_properties_find(&p, "AddRef") != NULL };
                /* Watched first, so no change of its state comes before the watch. */
                r = bus_watch_unit(rs->bus, x->unit, on_unit, x, &x->watch);
        }
        if (r == 0)
                r = bus_start_transient_unit(rs->bus, &p, on_started, x, &x->start);
        /* sd-bus holds its own copies of the descriptors now. */
        unit_properties_done(&p);
        close_stdio(stdio);
        if (r < 0) {
                if (x && !*error && asprintf(error, "cannot ask the service manager to start unit %s: %s", x->unit,
                                             strerror(-r)) < 0)
                        *error = NULL;
                systemd_run_free(x);
                return r;
        }
        x->next = rs->runs;
        if (rs->runs)
                rs->runs->prev = x;
        rs->runs = x;
        in->launcher = x;
        return 0;
}

/* ---- the close sequence's steps ---- */

/* SIGTERM to the unit's cgroup; the manager sends SIGKILL itself after TimeoutStopUSec=
 * (killTimeout), should server.c's own SIGKILL not come first. */
static int systemd_terminate(struct run *in) {
        struct systemd_run *x = run_of(in);

        if (!live(x))
                return -ESRCH;
        if (x->stop)
                return 0;
        return bus_stop_unit(x->rs->bus, x->unit, on_stopped, x, &x->stop);
}

static int systemd_kill(struct run *in) {
        struct systemd_run *x = run_of(in);

        if (!live(x))
                return -ESRCH;
        bus_call_cancel(x->kill);
        x->kill = NULL;
        return bus_kill_unit(x->rs->bus, x->unit, SIGKILL, on_killed, x, &x->kill);
}

/* KillUnit(SIGKILL), and StopUnit for a unit still starting; its end will not be reported. */
static void kill_at_exit(struct systemd_run *x) {
        (void)bus_kill_unit(x->rs->bus, x->unit, SIGKILL, NULL, NULL, NULL);
        (void)bus_stop_unit(x->rs->bus, x->unit, NULL, NULL, NULL);
        set_state(x, RUN_ABANDONED);
}

/* The daemon exits without its loop. The first call kills every run's unit, so they end
 * together rather than one after another, then waits (blocking, at most EXIT_WAIT_USEC)
 * until the manager collected them all: nothing of the daemon's is loaded once it exited,
 * and a next daemon on the socket finds no unit of the names it will give. */
static void systemd_kill_wait(struct run *in) {
        struct systemd_run *x = run_of(in), *y;
        struct run_systemd *rs = x->rs;
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ char **units = NULL;
        size_t n = 0;
        int r;

        if (!live(x))
                return;
        for (y = rs->runs; y; y = y->next)
                n += live(y);
        units = calloc(n + 1, sizeof *units);
        n = 0;
        for (y = rs->runs; y; y = y->next)
                if (live(y)) {
                        if (units)
                                units[n++] = y->unit;
                        kill_at_exit(y);
                }
        if (!units)
                return;
        r = bus_wait_collected(rs->bus, units, EXIT_WAIT_USEC, &error);
        if (r < 0)
                log_warning(rs->log, "at exit, after killing its units: %s", error ? error : strerror(-r));
}

/* "768M", "1.5G": a size as the configuration gives it. */
static void size_text(uint64_t bytes, char *buf, size_t size) {
        static const char units[] = "KMGT";
        double v = (double)bytes;
        int u = -1;

        while (u < 3 && v >= 1024.0) {
                v /= 1024.0;
                u++;
        }
        if (u < 0)
                snprintf(buf, size, "%" PRIu64, bytes);
        else
                snprintf(buf, size, "%g%c", v, units[u]);
}

/* The reason for e, said instead of its code and status; "" for none. The failure is
 * said whole (a unit's name and the manager's error), the rest are a few words of ours. */
static void describe_reason(const struct systemd_run *x, struct server_exit *e) {
        char limit[32], plain[64], buf[192] = "";

        if (x->failure) {
                server_exit_set_reason(e, x->failure);
                return;
        }
        if (strcmp(x->result, "oom-kill") == 0 || oom_watch_killed(x->oom)) {
                if (x->memory_max && x->memory_max != CONFINEMENT_INFINITY) {
                        size_text(x->memory_max, limit, sizeof limit);
                        snprintf(buf, sizeof buf, "killed by the OOM killer (memoryMax %s)", limit);
                } else {
                        snprintf(buf, sizeof buf, "killed by the OOM killer");
                }
        } else if (x->tasks_refused > 0 && !server_exit_clean(e)) {
                snprintf(buf, sizeof buf, "%s (tasksMax %u refused %" PRIu64 " fork%s)",
                         process_describe_exit(e->code, e->status, plain, sizeof plain), x->tasks_max,
                         x->tasks_refused, x->tasks_refused == 1 ? "" : "s");
        }
        server_exit_set_reason(e, buf);
}

static void systemd_describe_end(const struct run *in, struct server_exit *ret) {
        const struct systemd_run *x = run_of(in);

        *ret = (struct server_exit){ .code = x->code, .status = x->status };
        if (ret->code == 0) /* never ran, or its end unknown: said by the reason */
                *ret = (struct server_exit){ .code = CLD_EXITED, .status = 255 };
        describe_reason(x, ret);
}

static const char *systemd_describe(const struct run *in, char *buf, size_t size) {
        const struct systemd_run *x = run_of(in);

        snprintf(buf, size, "unit %s", x ? x->unit : "?");
        return buf;
}

static pid_t systemd_main_pid(const struct run *in) {
        const struct systemd_run *x = run_of(in);

        return x ? x->main_pid : 0;
}

static void systemd_usage(const struct run *in, struct run_usage *ret) {
        const struct systemd_run *x = run_of(in);
        struct cgroup_usage u;

        *ret = (struct run_usage){ .unit = x ? x->unit : NULL, .memory_current = RUN_USAGE_UNKNOWN,
                                   .memory_peak = RUN_USAGE_UNKNOWN, .cpu_usec = RUN_USAGE_UNKNOWN,
                                   .tasks = RUN_USAGE_UNKNOWN };
        if (!x || !live(x) || !x->control_group || cgroup_usage_read_group(x->control_group, &u) < 0)
                return;
        /* CGROUP_USAGE_UNKNOWN and RUN_USAGE_UNKNOWN are the same value. */
        ret->memory_current = u.memory_current;
        ret->memory_peak = u.memory_peak;
        ret->cpu_usec = u.cpu_usec;
        ret->tasks = u.tasks;
}

const char *run_systemd_state(const struct run *in) {
        const struct systemd_run *x = run_of(in);

        return x ? state_names[x->state] : NULL;
}

static const char *systemd_target(const struct server_config *c) {
        return c->command;
}

/* The unit has the run's pipes; StopUnit has the manager send SIGTERM to its cgroup. */
static const struct run_words systemd_words = {
        .input = "stdin",
        .terminate = "stopping its unit (SIGTERM)",
        .terminated = "SIGTERM",
        .kill = "sending SIGKILL to its unit",
        .killed = "SIGKILL",
        .stuck = " (stuck in the kernel?)",
        .terminate_signal = SIGTERM,
        .kill_signal = SIGKILL,
};

static void systemd_init(void **part, const struct run_setup *setup);
static void systemd_done(void *part);

static void systemd_free(struct run *in) {
        systemd_run_free(in->launcher);
        in->launcher = NULL;
}

const struct run_ops run_systemd_ops = {
        .name = "systemd",
        .kind = LAUNCHER_SYSTEMD,
        .words = &systemd_words,
        .init = systemd_init,
        .done = systemd_done,
        .target = systemd_target,
        .writes_stderr = true, /* the unit's stderr is the run's pipe */
        .start = systemd_start,
        .terminate = systemd_terminate,
        .kill = systemd_kill,
        .kill_wait = systemd_kill_wait,
        .reap = NULL, /* the manager's child, not the daemon's */
        .describe_end = systemd_describe_end,
        .describe = systemd_describe,
        .main_pid = systemd_main_pid,
        .usage = systemd_usage,
        .free = systemd_free,
};

/* ---- the daemon-wide part ---- */

/* Every run ends: no end of a unit can be heard any more. Their pipes close with them,
 * which a server reading its stdin takes as the end; a unit left running is stopped by
 * the next daemon's bus_stop_leftovers(). */
static void on_lost(void *userdata) {
        struct run_systemd *rs = userdata;
        struct systemd_run *x, *next;

        for (x = rs->runs; x; x = next) {
                next = x->next;
                if (live(x))
                        fail(x, "lost the connection to the service manager that runs its unit %s", x->unit);
        }
}

/* The installed helper, else the one beside the running mcpvisord (a build tree). */
static char *find_helper(void) {
        char self[PATH_MAX], *slash, *path = NULL;
        ssize_t n;

        if (access(MCPVISOR_LIBEXECDIR "/" UNIT_CREDENTIAL_HELPER, X_OK) == 0)
                return strdup(MCPVISOR_LIBEXECDIR "/" UNIT_CREDENTIAL_HELPER);
        n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
                return NULL;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (!slash)
                return NULL;
        *slash = '\0';
        if (asprintf(&path, "%s/%s", self, UNIT_CREDENTIAL_HELPER) < 0)
                return NULL;
        if (access(path, X_OK) < 0) {
                free(path);
                return NULL;
        }
        return path;
}

int run_systemd_new(struct bus *bus, const struct logger *log, struct run_systemd **ret) {
        struct run_systemd *rs = calloc(1, sizeof *rs);
        struct passwd *pw;

        if (!rs)
                return -ENOMEM;
        rs->bus = bus;
        rs->log = log;
        rs->helper = find_helper();
        if (!rs->helper)
                log_notice(log, "%s not found in %s: servers with credentials in env cannot run as units",
                           UNIT_CREDENTIAL_HELPER, MCPVISOR_LIBEXECDIR);
        /* A transient unit runs as root unless told: should a non-root daemon's units ever be
         * the system manager's (bus.c sends it to its own user's manager), they run as it.
         * A root daemon's say User=root all the same: the manager sets HOME, USER, LOGNAME
         * and SHELL only for a unit with User=, and a server finds its caches under HOME. */
        if (bus_manager(bus) == MANAGER_SYSTEM) {
                pw = getpwuid(geteuid());
                if (!pw || !(rs->default_user = strdup(pw->pw_name))) {
                        free(rs->helper);
                        free(rs);
                        return pw ? -ENOMEM : -ESRCH;
                }
        }
        bus_set_lost(bus, on_lost, rs);
        *ret = rs;
        return 0;
}

void run_systemd_free(struct run_systemd *rs) {
        if (!rs)
                return;
        for (struct systemd_run *x = rs->runs; x; x = x->next)
                x->rs = NULL;
        if (rs->bus)
                bus_set_lost(rs->bus, NULL, NULL);
        if (rs->own_bus)
                bus_free(rs->bus);
        free(rs->error);
        free(rs->helper);
        free(rs->default_user);
        free(rs);
}

/* The connection to the service manager when some server may be run by it: "auto" is
 * decided here (bus_open_auto()), once; a launcher named "systemd" that cannot connect
 * keeps why, for each start of its servers to say. */
static int connect_manager(const struct run_setup *setup, struct bus **ret, char **error) {
        struct supervisor *sv = setup->sv;
        int r;

        *ret = NULL;
        if (setup->by_auto)
                sv->launcher_auto = bus_open_auto(sv->base, sv->log, sv->daemon_env, ret);
        if (*ret || !setup->named)
                return 0;
        r = bus_open(sv->base, sv->log, sv->daemon_env, ret, error);
        if (r < 0) {
                if (!*error)
                        *error = strdup(strerror(-r));
                log_error(sv->log, "servers with launcher \"systemd\" cannot start: %s", *error ? *error : strerror(-r));
        }
        return r;
}

static void systemd_init(void **part, const struct run_setup *setup) {
        struct supervisor *sv = setup->sv;
        _cleanup_free_ char *error = NULL;
        struct run_systemd *rs = NULL;
        struct bus *bus;
        int r;

        r = connect_manager(setup, &bus, &error);
        if (r == 0 && !bus) /* "auto" is exec here, and no server names systemd */
                return;
        if (r == 0) {
                r = run_systemd_new(bus, sv->log, &rs);
                if (r < 0) {
                        log_error(sv->log, "cannot set up the systemd launcher: %s", strerror(-r));
                        bus = bus_free(bus);
                        error = strdup(strerror(-r));
                }
        }
        if (!rs) { /* kept to say why its servers cannot start */
                rs = calloc(1, sizeof *rs);
                if (!rs)
                        return;
                rs->error = TAKE_PTR(error);
                *part = rs;
                return;
        }
        rs->own_bus = true;
        *part = rs;
        if (!setup->daemon_id) /* no MCP socket to be known by: nothing was marked as ours */
                return;
        r = bus_stop_leftovers(bus, setup->daemon_id, &error);
        if (r < 0)
                log_warning(sv->log, "%s", error ? error : strerror(-r));
        else if (r > 0)
                log_notice(sv->log, "stopped %d unit%s a previous mcpvisord on this socket left", r, r == 1 ? "" : "s");
}

static void systemd_done(void *part) {
        run_systemd_free(part);
}
