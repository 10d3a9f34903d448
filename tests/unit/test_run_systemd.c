/* Unit tests for launcher-systemd.c: the life of a run of the systemd launcher, every (state,
 * event) cell of it.
 *
 * The service manager's side is a bus of the test's own, linked in place of bus.c: this
 * file defines the functions of bus.h the launcher calls, so the linker never takes bus.o
 * out of libmcpvisor_servers.a (as unit.server replaces launcher-exec.c). Its calls are kept, not
 * sent; the test answers them, and reports the unit's state through its watch, in any
 * order it likes. instance.c is the test's too (run_ended() counted), as in unit.bus.
 * tests/unit/test_bus.c drives the same launcher over a manager speaking D-Bus. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bus.h"
#include "config.h"
#include "run.h"
#include "log.h"
#include "macro.h"
#include "launcher.h"
#include "run-as.h"
#include "server-cause.h"
#include "server-config.h"
#include "server.h"
#include "supervisor.h"
#include "unit-helpers.h"

#define UNIT "mcpvisor-s@23bba356-1.service"

/* ---- the test's bus ---- */

enum call_kind { CALL_START, CALL_READ, CALL_STOP, CALL_KILL, CALL_UNREF, CALL_KINDS };

struct bus_call {
        enum call_kind kind;
        bus_started_fn started;
        bus_unit_fn read;
        bus_done_fn done;
        void *userdata;
        bool live; /* neither answered nor cancelled */
};

struct bus_watch {
        bus_unit_fn fn;
        void *userdata;
        bool live;
};

struct bus {
        int unused;
};

#define MAX_CALLS 64

static struct {
        struct bus_call calls[MAX_CALLS]; /* never reused: a handle stays readable */
        unsigned n_calls;
        unsigned asked[CALL_KINDS];       /* calls made, with or without a callback */
        struct bus_watch watch;
        bus_lost_fn on_lost;
        void *lost_userdata;
        unsigned waits;                   /* bus_wait_collected() */
} B;

static struct bus the_bus;

static int call(enum call_kind kind, void *userdata, struct bus_call **ret) {
        struct bus_call *c;

        B.asked[kind]++;
        cr_assert_lt(B.n_calls, MAX_CALLS);
        c = &B.calls[B.n_calls++];
        *c = (struct bus_call){ .kind = kind, .userdata = userdata, .live = true };
        if (ret)
                *ret = c;
        return 0;
}

/* The last call of kind the launcher wanted answered (live, if only), or NULL. */
static struct bus_call *find_call(enum call_kind kind, bool live) {
        for (unsigned i = B.n_calls; i > 0; i--) {
                struct bus_call *c = &B.calls[i - 1];

                if (c->kind == kind && (c->started || c->read || c->done) && (c->live || !live))
                        return c;
        }
        return NULL;
}

/* The call of kind still waiting for its answer, if any. */
static struct bus_call *live_call(enum call_kind kind) {
        return find_call(kind, true);
}

enum manager_kind bus_manager(const struct bus *b) {
        return MANAGER_USER;
}

bool bus_can_add_ref(const struct bus *b) {
        return true;
}

void bus_set_lost(struct bus *b, bus_lost_fn on_lost, void *userdata) {
        B.on_lost = on_lost;
        B.lost_userdata = userdata;
}

int bus_start_transient_unit(struct bus *b, const struct unit_properties *p, bus_started_fn done, void *userdata,
                             struct bus_call **ret) {
        struct bus_call *c;

        cr_assert_str_eq(p->unit, UNIT);
        call(CALL_START, userdata, &c);
        c->started = done;
        if (ret)
                *ret = c;
        return 0;
}

int bus_read_unit(struct bus *b, const char *unit, bus_unit_fn fn, void *userdata, struct bus_call **ret) {
        struct bus_call *c;

        call(CALL_READ, userdata, &c);
        c->read = fn;
        if (ret)
                *ret = c;
        return 0;
}

static int done_call(enum call_kind kind, bus_done_fn done, void *userdata, struct bus_call **ret) {
        struct bus_call *c;

        call(kind, userdata, &c);
        c->done = done;
        c->live = done != NULL;
        if (ret)
                *ret = c;
        return 0;
}

int bus_stop_unit(struct bus *b, const char *unit, bus_done_fn done, void *userdata, struct bus_call **ret) {
        return done_call(CALL_STOP, done, userdata, ret);
}

int bus_kill_unit(struct bus *b, const char *unit, int signal, bus_done_fn done, void *userdata, struct bus_call **ret) {
        cr_assert_eq(signal, SIGKILL);
        return done_call(CALL_KILL, done, userdata, ret);
}

int bus_unref_unit(struct bus *b, const char *unit, bus_done_fn done, void *userdata, struct bus_call **ret) {
        return done_call(CALL_UNREF, done, userdata, ret);
}

void bus_call_cancel(struct bus_call *c) {
        if (c)
                c->live = false;
}

int bus_watch_unit(struct bus *b, const char *unit, bus_unit_fn fn, void *userdata, struct bus_watch **ret) {
        cr_assert_str_eq(unit, UNIT);
        cr_assert_not(B.watch.live, "one watch");
        B.watch = (struct bus_watch){ .fn = fn, .userdata = userdata, .live = true };
        *ret = &B.watch;
        return 0;
}

void bus_watch_free(struct bus_watch *w) {
        if (w)
                w->live = false;
}

int bus_wait_collected(struct bus *b, char *const *units, uint64_t timeout_usec, char **error) {
        cr_assert_str_eq(units[0], UNIT);
        cr_assert_null(units[1]);
        B.waits++;
        return 0;
}

/* What launcher-systemd.c's daemon-wide part would connect with, never called here: the test's
 * run_systemd is made over the test's bus. */
int bus_open(struct event_base *b, const struct logger *log, char *const *env, struct bus **ret, char **error) {
        cr_assert_fail("bus_open");
        return -ENOTCONN;
}

int bus_open_auto(struct event_base *b, const struct logger *log, char *const *env, struct bus **ret) {
        cr_assert_fail("bus_open_auto");
        return LAUNCHER_EXEC;
}

struct bus *bus_free(struct bus *b) {
        cr_assert_fail("bus_free");
        return NULL;
}

int bus_stop_leftovers(struct bus *b, const char *daemon_id, char **error) {
        cr_assert_fail("bus_stop_leftovers");
        return 0;
}

/* ---- the test's instance.c ---- */

static unsigned ended_runs;
static struct event_base *base;

void run_ended(struct run *in) {
        cr_assert_not(in->ended, "its end told twice");
        in->ended = true;
        ended_runs++;
}

struct event_base *run_event_base(const struct run *in) {
        return base;
}

/* The systemd launcher's daemon-wide part, kept here instead of in a supervisor. */
static struct run_systemd *systemd_part;

void **run_launcher_part_of(const struct run *in) {
        return (void **)&systemd_part;
}

/* ---- the run ---- */

static struct logger log_;
static struct config C;
static struct supervisor SV;
static struct server SRV;
static struct run IN;

static void setup(void) {
        log_capture_start();
        logger_init(&log_, LOG_DEBUG);
        base = loop_start();
}

static void teardown(void) {
        if (IN.launcher)
                run_systemd_ops.free(&IN);
        run_systemd_free(systemd_part);
        systemd_part = NULL;
        config_done(&C);
        loop_stop();
        log_capture_stop();
}

TestSuite(run_systemd, .init = setup, .fini = teardown, .timeout = 30);

/* Run 1 of server "s" ({"command": "/bin/true"}), its start asked. */
static void launch(void) {
        struct config_problems p = { 0 };
        const char *text = "{\"mcpServers\":{\"s\":{\"command\":\"/bin/true\"}}}";
        char *error = NULL, *env[] = { "PATH=/usr/bin:/bin", NULL };
        int in[2], out[2], err[2];

        cr_assert_eq(config_parse(text, strlen(text), &C, &p), 0);
        problems_done(&p);
        SV = (struct supervisor){ .base = base, .log = &log_, .daemon_env = env, .daemon_id = "/run/test.sock" };
        cr_assert_eq(run_systemd_new(&the_bus, &log_, &systemd_part), 0);
        SRV = (struct server){ .sv = &SV, .config = (struct server_config *)config_find_server(&C, "s") };
        IN = (struct run){ .server = &SRV, .number = 1, .ops = &run_systemd_ops };
        open_pipe(in, 0);
        open_pipe(out, 0);
        open_pipe(err, 0);
        cr_assert_eq(run_systemd_ops.start(&IN, SRV.config, env, &(struct run_stdio){ in[0], out[1], err[1] }, &error), 0,
                     "%s", error ? error : "");
        close(in[1]);
        close(out[0]);
        close(err[0]);
        cr_assert(live_call(CALL_START));
        cr_assert(B.watch.live, "watched before the start");
}

static const char *state(void) {
        return run_systemd_state(&IN);
}

/* The manager's answers, and its reports through the watch. */
static void answer_start(const char *result, const char *error) {
        struct bus_call *c = live_call(CALL_START);

        cr_assert_not_null(c, "no start to answer");
        c->live = false;
        c->started(error ? NULL : "/org/freedesktop/systemd1/job/1", result, error, c->userdata);
}

static const struct bus_unit_status ACTIVE = { .unit = UNIT, .load_state = "loaded", .active_state = "active",
                                               .result = "success", .control_group = "/x.slice/" UNIT,
                                               .exec_main_pid = 4242, .has = BUS_HAS_EXEC_MAIN_PID };
/* exited with status 3 */
static const struct bus_unit_status FAILED = { .unit = UNIT, .load_state = "loaded", .active_state = "failed",
                                               .result = "exit-code", .exec_main_code = CLD_EXITED,
                                               .exec_main_status = 3,
                                               .has = BUS_HAS_EXEC_MAIN_CODE | BUS_HAS_EXEC_MAIN_STATUS };
/* what the manager loads to answer for a unit it collected */
static const struct bus_unit_status STUB = { .unit = UNIT, .load_state = "not-found", .active_state = "inactive",
                                             .result = "success",
                                             .has = BUS_HAS_EXEC_MAIN_CODE | BUS_HAS_EXEC_MAIN_STATUS };
static const struct bus_unit_status NOT_FOUND = { .unit = UNIT, .error = "Unit " UNIT " not loaded.",
                                                  .not_found = true };
static const struct bus_unit_status READ_ERROR = { .unit = UNIT, .error = "busy" };

static void report(const struct bus_unit_status *st) {
        cr_assert(B.watch.live, "no watch to report to");
        B.watch.fn(st, B.watch.userdata);
}

static void answer_read(const struct bus_unit_status *st) {
        struct bus_call *c = live_call(CALL_READ);

        cr_assert_not_null(c, "no read to answer");
        c->live = false;
        c->read(st, c->userdata);
}

static void answer_done(enum call_kind kind, const char *error) {
        struct bus_call *c = live_call(kind);

        cr_assert_not_null(c, "no call to answer");
        c->live = false;
        c->done(error, c->userdata);
}

/* ---- the cells ---- */

enum cell_state { STARTING, RUNNING, ENDING, ENDED, ABANDONED, STATES };

enum cell_event {
        EV_START_DONE,       /* its start job done */
        EV_START_FAILED,     /* the manager refused the start */
        EV_START_NO_REPLY,   /* no answer to the start in time */
        EV_ACTIVE,           /* the watch: active */
        EV_FAILED,           /* the watch: failed, exit status 3 */
        EV_STUB,             /* the watch: a not-found stub (the unit collected) */
        EV_READ_NOT_FOUND,   /* a read: no such unit */
        EV_READ_ERROR,       /* a read: an error that says nothing of the unit */
        EV_TERMINATE,        /* ops->terminate */
        EV_KILL,             /* ops->kill */
        EV_REFUSED,          /* a StopUnit the manager refused */
        EV_LOST,             /* the connection to the manager lost */
        EV_EXIT,             /* ops->kill_wait: the daemon exits */
        EVENTS,
};

static const char *const state_text[STATES] = { "starting", "running", "ending", "ended", "abandoned" };

static const char *const event_text[EVENTS] = {
        [EV_START_DONE] = "start done",   [EV_START_FAILED] = "start failed", [EV_START_NO_REPLY] = "start unanswered",
        [EV_ACTIVE] = "active",           [EV_FAILED] = "failed",             [EV_STUB] = "stub",
        [EV_READ_NOT_FOUND] = "read: no such unit", [EV_READ_ERROR] = "read: error",
        [EV_TERMINATE] = "terminate",     [EV_KILL] = "kill",                 [EV_REFUSED] = "stop refused",
        [EV_LOST] = "connection lost",    [EV_EXIT] = "daemon exit",
};

/* Puts the run in state the way the daemon gets there. A run that ended or was abandoned
 * had a stop asked while running, so that there is a stop to answer afterwards. */
static void reach(enum cell_state st) {
        launch();
        if (st != STARTING) {
                answer_start("done", NULL);
                answer_read(&ACTIVE);
        }
        if (st == ENDED || st == ABANDONED)
                cr_assert_eq(run_systemd_ops.terminate(&IN), 0);
        if (st == ENDING || st == ENDED)
                report(&FAILED);
        if (st == ENDED)
                answer_read(&FAILED);
        if (st == ABANDONED)
                run_systemd_ops.kill_wait(&IN);
        cr_assert_str_eq(state(), state_text[st]);
}

/* What an event asked of the manager. */
enum {
        ASK_READ = 1 << 0,
        ASK_STOP = 1 << 1,
        ASK_KILL = 1 << 2,
        ASK_UNREF = 1 << 3, /* AddRef= dropped: the run stopped being live */
};

struct cell {
        enum cell_state from;
        enum cell_event ev;
        enum cell_state to;
        unsigned asks;
        char reason[128]; /* of its end, when it ends: "" for code and status alone (kept in
                           * the cell: a parameter's pointer would not survive Criterion's
                           * copy to the test's process) */
};

#define GONE "its unit " UNIT " is gone"
#define LOST_TEXT "lost the connection to the service manager"

/* The cells where an event can arrive. READ_* in a state with no read of its own come
 * after a stop the manager refused (which asks for the read), as the daemon gets there. */
static struct cell cells[] = {
        { STARTING, EV_START_DONE, RUNNING, ASK_READ, "" },
        { STARTING, EV_START_FAILED, ENDED, ASK_UNREF, "the service manager did not start unit " UNIT ": refused" },
        { STARTING, EV_START_NO_REPLY, RUNNING, ASK_STOP, "" },
        { STARTING, EV_ACTIVE, STARTING, 0, "" },
        { STARTING, EV_FAILED, STARTING, 0, "" }, /* a predecessor's, or forgotten at the job's end */
        { STARTING, EV_STUB, STARTING, 0, "" },
        { STARTING, EV_READ_NOT_FOUND, ENDED, ASK_STOP | ASK_READ | ASK_UNREF, "" },
        { STARTING, EV_READ_ERROR, STARTING, ASK_STOP | ASK_READ, "" },
        { STARTING, EV_TERMINATE, STARTING, ASK_STOP, "" },
        { STARTING, EV_KILL, STARTING, ASK_KILL, "" },
        { STARTING, EV_REFUSED, STARTING, ASK_STOP | ASK_READ, "" },
        { STARTING, EV_LOST, ENDED, ASK_UNREF, "the service manager did not start unit " UNIT ": " LOST_TEXT },
        { STARTING, EV_EXIT, ABANDONED, ASK_KILL | ASK_STOP | ASK_UNREF, "" },

        { RUNNING, EV_ACTIVE, RUNNING, 0, "" },
        { RUNNING, EV_FAILED, ENDING, ASK_READ, "" },
        { RUNNING, EV_STUB, ENDED, ASK_UNREF, GONE " (collected by the service manager)" },
        { RUNNING, EV_READ_NOT_FOUND, ENDED, ASK_STOP | ASK_READ | ASK_UNREF, GONE " (Unit " UNIT " not loaded.)" },
        { RUNNING, EV_READ_ERROR, RUNNING, ASK_STOP | ASK_READ, "" },
        { RUNNING, EV_TERMINATE, RUNNING, ASK_STOP, "" },
        { RUNNING, EV_KILL, RUNNING, ASK_KILL, "" },
        { RUNNING, EV_REFUSED, RUNNING, ASK_STOP | ASK_READ, "" },
        { RUNNING, EV_LOST, ENDED, ASK_UNREF, LOST_TEXT " that runs its unit " UNIT },
        { RUNNING, EV_EXIT, ABANDONED, ASK_KILL | ASK_STOP | ASK_UNREF, "" },

        /* said failed (exit status 3), its last read asked: whatever comes now is the end */
        { ENDING, EV_ACTIVE, ENDED, ASK_UNREF, "" },
        { ENDING, EV_FAILED, ENDED, ASK_UNREF, "" },
        { ENDING, EV_STUB, ENDED, ASK_UNREF, "" },
        { ENDING, EV_READ_NOT_FOUND, ENDED, ASK_UNREF, "" },
        { ENDING, EV_READ_ERROR, ENDING, 0, "" }, /* read again later */
        { ENDING, EV_TERMINATE, ENDING, ASK_STOP, "" },
        { ENDING, EV_KILL, ENDING, ASK_KILL, "" },
        { ENDING, EV_REFUSED, ENDING, ASK_STOP, "" }, /* its last read is already asked */
        { ENDING, EV_LOST, ENDED, ASK_UNREF, LOST_TEXT " that runs its unit " UNIT },
        { ENDING, EV_EXIT, ABANDONED, ASK_KILL | ASK_STOP | ASK_UNREF, "" },

        /* nothing of the manager's reaches it: asked to stop, it says it has ended */
        { ENDED, EV_TERMINATE, ENDED, 0, "" },
        { ENDED, EV_KILL, ENDED, 0, "" },
        { ENDED, EV_LOST, ENDED, 0, "" },
        { ENDED, EV_EXIT, ENDED, 0, "" },

        { ABANDONED, EV_TERMINATE, ABANDONED, 0, "" },
        { ABANDONED, EV_KILL, ABANDONED, 0, "" },
        { ABANDONED, EV_LOST, ABANDONED, 0, "" },
        { ABANDONED, EV_EXIT, ABANDONED, 0, "" },
};

/* The cells of events that cannot arrive in the state: the start is answered once; an
 * ended or abandoned run has no watch, no read, no stop left. The test's bus answers
 * anyway, as a bus with a bug would: the launcher logs the bug and stops the daemon. */
#define NEVER(state, event) { .from = (state), .ev = (event) }
#define NOTHING_LEFT(state)                                                                           \
        NEVER(state, EV_START_DONE), NEVER(state, EV_START_FAILED), NEVER(state, EV_START_NO_REPLY), \
                NEVER(state, EV_ACTIVE), NEVER(state, EV_FAILED), NEVER(state, EV_STUB),             \
                NEVER(state, EV_READ_NOT_FOUND), NEVER(state, EV_READ_ERROR), NEVER(state, EV_REFUSED)
static struct cell impossible[] = {
        NEVER(RUNNING, EV_START_DONE), NEVER(RUNNING, EV_START_FAILED), NEVER(RUNNING, EV_START_NO_REPLY),
        NEVER(ENDING, EV_START_DONE),  NEVER(ENDING, EV_START_FAILED),  NEVER(ENDING, EV_START_NO_REPLY),
        NOTHING_LEFT(ENDED),
        NOTHING_LEFT(ABANDONED),
};

static unsigned cell_count(const struct cell *list, size_t n, enum cell_state st, enum cell_event ev) {
        unsigned k = 0;

        for (size_t i = 0; i < n; i++)
                k += list[i].from == st && list[i].ev == ev;
        return k;
}

Test(run_systemd, every_cell_tested_once) {
        for (int st = 0; st < STATES; st++)
                for (int ev = 0; ev < EVENTS; ev++)
                        cr_expect_eq(cell_count(cells, ARRAY_SIZE(cells), st, ev) +
                                             cell_count(impossible, ARRAY_SIZE(impossible), st, ev),
                                     1, "%s x %s", state_text[st], event_text[ev]);
}

/* A read waiting for its answer, asked as the daemon asks one: after a stop the manager
 * refused. */
static void have_a_read(void) {
        if (live_call(CALL_READ))
                return;
        cr_assert_eq(run_systemd_ops.terminate(&IN), 0);
        answer_done(CALL_STOP, "refused");
        cr_assert_not_null(live_call(CALL_READ), "a refused stop asks for a read");
}

/* An event as its source sends it. */
static void feed(enum cell_event ev) {
        switch (ev) {
        case EV_START_DONE:
                answer_start("done", NULL);
                break;
        case EV_START_FAILED:
                answer_start(NULL, "refused");
                break;
        case EV_START_NO_REPLY:
                answer_start(BUS_START_NO_REPLY, "no reply");
                break;
        case EV_ACTIVE:
                report(&ACTIVE);
                break;
        case EV_FAILED:
                report(&FAILED);
                break;
        case EV_STUB:
                report(&STUB);
                break;
        case EV_READ_NOT_FOUND:
                have_a_read();
                answer_read(&NOT_FOUND);
                break;
        case EV_READ_ERROR:
                have_a_read();
                answer_read(&READ_ERROR);
                break;
        case EV_TERMINATE:
                (void)run_systemd_ops.terminate(&IN);
                break;
        case EV_KILL:
                (void)run_systemd_ops.kill(&IN);
                break;
        case EV_REFUSED:
                if (!live_call(CALL_STOP))
                        cr_assert_eq(run_systemd_ops.terminate(&IN), 0);
                answer_done(CALL_STOP, "refused");
                break;
        case EV_LOST:
                /* as bus.c: a start waiting for its answer hears first, then the owner */
                if (live_call(CALL_START))
                        answer_start(NULL, LOST_TEXT);
                B.on_lost(B.lost_userdata);
                break;
        case EV_EXIT:
                run_systemd_ops.kill_wait(&IN);
                break;
        default:
                cr_assert_fail("no event %d", ev);
        }
}

ParameterizedTestParameters(run_systemd, cell) {
        return cr_make_param_array(struct cell, cells, ARRAY_SIZE(cells));
}

ParameterizedTest(struct cell *c, run_systemd, cell) {
        const char *from = state_text[c->from], *ev = event_text[c->ev];
        unsigned asked[CALL_KINDS], ended;
        struct server_exit e;

        reach(c->from);
        memcpy(asked, B.asked, sizeof asked);
        ended = ended_runs;
        feed(c->ev);
        cr_assert_str_eq(state(), state_text[c->to], "%s x %s: %s, not %s", from, ev, state(), state_text[c->to]);
        cr_assert_eq(B.asked[CALL_READ] - asked[CALL_READ], !!(c->asks & ASK_READ), "%s x %s: reads", from, ev);
        cr_assert_eq(B.asked[CALL_STOP] - asked[CALL_STOP], !!(c->asks & ASK_STOP), "%s x %s: stops", from, ev);
        cr_assert_eq(B.asked[CALL_KILL] - asked[CALL_KILL], !!(c->asks & ASK_KILL), "%s x %s: kills", from, ev);
        cr_assert_eq(B.asked[CALL_UNREF] - asked[CALL_UNREF], !!(c->asks & ASK_UNREF), "%s x %s: unrefs", from, ev);
        cr_assert_eq(ended_runs - ended, c->from != ENDED && c->to == ENDED, "%s x %s: its end told", from, ev);
        cr_assert_eq(B.asked[CALL_UNREF], c->to == ENDED || c->to == ABANDONED, "%s x %s: AddRef= dropped once", from, ev);
        if (c->to == ENDED || c->to == ABANDONED) {
                /* nothing of the manager's can reach it any more */
                cr_assert_not(B.watch.live, "%s x %s: watched", from, ev);
                for (int k = 0; k < CALL_UNREF; k++)
                        cr_assert_null(live_call(k), "%s x %s: a call of kind %d left", from, ev, k);
        }
        if (c->to == RUNNING || c->to == ENDING)
                cr_assert_null(live_call(CALL_START), "%s x %s: its start is answered", from, ev);
        if (c->to == ENDED && c->from != ENDED) {
                run_systemd_ops.describe_end(&IN, &e);
                cr_assert_str_eq(e.reason ? e.reason : "", c->reason, "%s x %s", from, ev);
                server_exit_done(&e);
        }
        if (c->ev == EV_EXIT && c->from != ENDED && c->from != ABANDONED)
                cr_assert_eq(B.waits, 1, "waited until collected");
}

ParameterizedTestParameters(run_systemd, impossible_cell_stops_the_daemon) {
        return cr_make_param_array(struct cell, impossible, ARRAY_SIZE(impossible));
}

/* How the test ends when the daemon stopped itself for a bug, as it says it does. */
#define EXIT_BUG_SAID 42

/* The abort() of launcher-systemd.c's impossible(), after it logged the bug (any other abort
 * fails the test); the log capture is given back, there being no fini. */
static void on_abort(int sig) {
        bool said = strstr(logged(), "bug: " UNIT ": ") != NULL;

        log_capture_stop();
        _exit(said ? EXIT_BUG_SAID : EXIT_FAILURE);
}

/* The event delivered on the handle the launcher had for it, answered or cancelled. */
static void feed_anyway(enum cell_event ev) {
        struct bus_call *c;

        switch (ev) {
        case EV_START_DONE:
        case EV_START_FAILED:
        case EV_START_NO_REPLY:
                c = find_call(CALL_START, false);
                cr_assert(c && !c->live);
                if (ev == EV_START_DONE)
                        c->started("/org/freedesktop/systemd1/job/1", "done", NULL, c->userdata);
                else
                        c->started(NULL, ev == EV_START_NO_REPLY ? BUS_START_NO_REPLY : NULL, "late", c->userdata);
                break;
        case EV_ACTIVE:
        case EV_FAILED:
        case EV_STUB:
                cr_assert_not(B.watch.live);
                B.watch.fn(ev == EV_ACTIVE ? &ACTIVE : ev == EV_FAILED ? &FAILED : &STUB, B.watch.userdata);
                break;
        case EV_READ_NOT_FOUND:
        case EV_READ_ERROR:
                c = find_call(CALL_READ, false);
                cr_assert(c && !c->live);
                c->read(ev == EV_READ_NOT_FOUND ? &NOT_FOUND : &READ_ERROR, c->userdata);
                break;
        case EV_REFUSED:
                c = find_call(CALL_STOP, false);
                cr_assert(c && !c->live);
                c->done("refused", c->userdata);
                break;
        default:
                cr_assert_fail("%s can always arrive", event_text[ev]);
        }
}

ParameterizedTest(struct cell *c, run_systemd, impossible_cell_stops_the_daemon, .exit_code = EXIT_BUG_SAID) {
        reach(c->from);
        signal(SIGABRT, on_abort);
        feed_anyway(c->ev);
        cr_assert_fail("%s x %s was taken", state_text[c->from], event_text[c->ev]);
}

/* ---- ways through ---- */

/* A unit that failed: its end as the manager said it, read once more; AddRef= dropped. */
Test(run_systemd, end_in_the_managers_words) {
        struct server_exit e;

        reach(ENDED);
        run_systemd_ops.describe_end(&IN, &e);
        cr_assert_eq(e.code, CLD_EXITED);
        cr_assert_eq(e.status, 3);
        cr_assert_null(e.reason);
        cr_assert_eq(run_systemd_ops.main_pid(&IN), 4242);
        cr_assert(strstr(logged(), UNIT ": running -> ending"), "%s", logged());
        cr_assert(strstr(logged(), UNIT ": ending -> ended"), "%s", logged());
}

/* What came before the start's job was done is forgotten then: a predecessor's unit of
 * the same name said "failed" while this one started. */
Test(run_systemd, reports_before_the_job_are_forgotten) {
        struct server_exit e;

        launch();
        report(&ACTIVE);
        report(&FAILED);
        answer_start("done", NULL);
        cr_assert_str_eq(state(), "running");
        answer_read(&ACTIVE);
        cr_assert_str_eq(state(), "running");
        cr_assert_eq(ended_runs, 0);
        cr_assert_eq(run_systemd_ops.terminate(&IN), 0);
        report(&(struct bus_unit_status){ .unit = UNIT, .load_state = "loaded", .active_state = "inactive",
                                          .exec_main_code = CLD_KILLED, .exec_main_status = SIGTERM,
                                          .has = BUS_HAS_EXEC_MAIN_CODE | BUS_HAS_EXEC_MAIN_STATUS });
        answer_read(&STUB);
        cr_assert_eq(ended_runs, 1);
        run_systemd_ops.describe_end(&IN, &e);
        cr_assert_eq(e.code, CLD_KILLED, "the stub's zeros are not its end");
        cr_assert_eq(e.status, SIGTERM);
}

/* A user manager runs its own user's units only: another user's run is refused before
 * anything is asked of it, in words that say why, and for good (-EPERM: failed, no
 * restart). The daemon's own user's is not. */
Test(run_systemd, another_user_refused_under_a_user_manager) {
        struct config_problems p = { 0 };
        const char *text = "{\"mcpServers\":{\"s\":{\"command\":\"/bin/true\"}}}";
        char *error = NULL, *env[] = { "PATH=/usr/bin:/bin", NULL }, *want = NULL;
        struct run_as other = { .uid = geteuid() + 1, .gid = 1, .user = (char *)"alice", .home = (char *)"/home/alice" };
        int in[2], out[2], err[2];

        cr_assert_eq(config_parse(text, strlen(text), &C, &p), 0);
        problems_done(&p);
        SV = (struct supervisor){ .base = base, .log = &log_, .daemon_env = env, .daemon_id = "/run/test.sock" };
        cr_assert_eq(run_systemd_new(&the_bus, &log_, &systemd_part), 0);
        SRV = (struct server){ .sv = &SV, .config = (struct server_config *)config_find_server(&C, "s"), .run_as = &other };
        IN = (struct run){ .server = &SRV, .number = 1, .ops = &run_systemd_ops };
        open_pipe(in, 0);
        open_pipe(out, 0);
        open_pipe(err, 0);
        cr_assert_eq(run_systemd_ops.start(&IN, SRV.config, env, &(struct run_stdio){ in[0], out[1], err[1] }, &error),
                     -EPERM);
        cr_assert_null(live_call(CALL_START), "nothing asked of the manager");
        cr_assert_null(IN.launcher);
        if (geteuid() == 0)
                cr_assert(asprintf(&want, "cannot run 's' as user alice: mcpvisord starts its servers through the user "
                                          "service manager of root, which runs them as root only") > 0);
        else
                cr_assert(asprintf(&want, "cannot run 's' as user alice: mcpvisord runs as ") > 0);
        cr_assert_not_null(strstr(error, want), "%s", error);
        free(want);
        free(error);
        error = NULL;
        close(in[1]);
        close(out[0]);
        close(err[0]);

        /* its own user: started as ever, without User= */
        other.uid = geteuid();
        open_pipe(in, 0);
        open_pipe(out, 0);
        open_pipe(err, 0);
        cr_assert_eq(run_systemd_ops.start(&IN, SRV.config, env, &(struct run_stdio){ in[0], out[1], err[1] }, &error), 0,
                     "%s", error ? error : "");
        cr_assert(live_call(CALL_START));
        close(in[1]);
        close(out[0]);
        close(err[0]);
}

/* The manager's error is said whole, however long, and as valid UTF-8: a long unit name
 * and a long error together do not fit a line's worth of bytes. */
Test(run_systemd, a_long_start_error_is_said_whole) {
        char error[400];
        struct server_exit e;

        memset(error, 'x', sizeof error - 1);
        error[sizeof error - 1] = '\0';
        error[200] = '\xff'; /* not UTF-8 */
        launch();
        answer_start(NULL, error);
        cr_assert_str_eq(state(), "ended");
        run_systemd_ops.describe_end(&IN, &e);
        cr_assert_not_null(e.reason);
        cr_assert_eq(strlen(e.reason), strlen("the service manager did not start unit " UNIT ": ") + sizeof error - 1,
                     "%zu: %s", strlen(e.reason), e.reason);
        cr_assert(strstr(e.reason, "x?x"), "%s", e.reason);
        cr_assert_eq(e.reason[strlen(e.reason) - 1], 'x');
        server_exit_done(&e);
}

/* Reads failing: again after 0.1 s, then twice as long, until the sixth; then the run is
 * given up and its unit stopped. */
Test(run_systemd, read_errors_give_up) {
        struct server_exit e;

        reach(RUNNING);
        have_a_read();
        for (int k = 0; k < 6; k++) {
                WAIT_UNTIL(live_call(CALL_READ) != NULL);
                answer_read(&READ_ERROR);
        }
        cr_assert_str_eq(state(), "ended");
        cr_assert_eq(B.asked[CALL_STOP], 2, "the refused one, and the one of giving up");
        run_systemd_ops.describe_end(&IN, &e);
        cr_assert_str_eq(e.reason, "the service manager did not say how its unit " UNIT " is (busy)");
}
