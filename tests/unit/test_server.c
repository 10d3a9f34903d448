/* Unit tests for server.c: its state x event table, cell by cell, and the ways through it
 * that take several events (a stop through each of its stages, a crash loop, a restart
 * asked while stopping).
 *
 * The server is a real one of a real supervisor, started through instance.c with real
 * pipes and MCP connection; only the launcher is the test's own. It is linked in place of
 * the exec launcher: this file defines run_exec_ops, the one symbol of launcher-exec.c, so the
 * linker never takes that object out of libmcpvisor_servers.a (as fuzz/fake-process.c
 * replaces process.c). A run is then no process but the test playing the server on the
 * run's pipes (fake-server.c); the launcher counts what it is asked (start, SIGTERM,
 * SIGKILL) and the run ends when the test says. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config-helpers.h"
#include "fake-server.h"
#include "run.h"
#include "jsonrpc.h"
#include "log.h"
#include "launcher.h"
#include "server.h"
#include "supervisor.h"
#include "unit-helpers.h"

/* ---- the test's launcher ---- */

static struct {
        int start_error;          /* the next start fails with it, once */
        struct run *current; /* the run the test plays, NULL when it has ended */
        unsigned starts, terminates, kills;
} L;

static int fake_start(struct run *in, const struct server_config *c, char **env, const struct run_stdio *stdio,
                      char **error) {
        int r = L.start_error;

        L.start_error = 0;
        close(stdio->err);
        if (r < 0) {
                close(stdio->in);
                close(stdio->out);
                return r;
        }
        in->launcher = calloc(1, sizeof(struct server_exit));
        cr_assert_not_null(in->launcher);
        server_adopt(run_event_base(in), stdio->in, stdio->out);
        L.current = in;
        L.starts++;
        return 0;
}

static int fake_terminate(struct run *in) {
        L.terminates++;
        return 0;
}

static int fake_kill(struct run *in) {
        L.kills++;
        return 0;
}

static void fake_kill_wait(struct run *in) {
}

static void fake_describe_end(const struct run *in, struct server_exit *ret) {
        *ret = *(const struct server_exit *)in->launcher;
}

static const char *fake_describe(const struct run *in, char *buf, size_t size) {
        snprintf(buf, size, "a run of the test's");
        return buf;
}

static pid_t fake_main_pid(const struct run *in) {
        return 0;
}

static void fake_usage(const struct run *in, struct run_usage *ret) {
        *ret = (struct run_usage){ .memory_current = RUN_USAGE_UNKNOWN, .memory_peak = RUN_USAGE_UNKNOWN,
                                   .cpu_usec = RUN_USAGE_UNKNOWN, .tasks = RUN_USAGE_UNKNOWN };
}

static const char *fake_target(const struct server_config *c) {
        return c->command;
}

/* The exec launcher's words, or another's for a test. */
static struct run_words fake_words;

static void fake_free(struct run *in) {
        free(in->launcher);
        in->launcher = NULL;
}

const struct run_ops run_exec_ops = {
        .name = "exec",
        .kind = LAUNCHER_EXEC,
        .words = &fake_words,
        .target = fake_target,
        .writes_stderr = true,
        .start = fake_start,
        .terminate = fake_terminate,
        .kill = fake_kill,
        .kill_wait = fake_kill_wait,
        .describe_end = fake_describe_end,
        .describe = fake_describe,
        .main_pid = fake_main_pid,
        .usage = fake_usage,
        .free = fake_free,
};

/* The run ends as a process does: code CLD_EXITED with an exit status, or CLD_KILLED
 * with a signal. */
static void run_ends(int code, int status) {
        struct run *in = L.current;

        cr_assert_not_null(in, "no run to end");
        *(struct server_exit *)in->launcher = (struct server_exit){ .code = code, .status = status };
        L.current = NULL;
        run_ended(in);
}

/* ---- the daemon around the server ---- */

static struct logger lg;
static struct jsonrpc_parser parser;
static struct supervisor sv;
static struct server *s;

/* Timers that never pass during a test: the table feeds SERVER_EV_TIMER itself. */
#define SLOW_TIMERS "\"startTimeout\":600,\"stopTimeout\":600,\"killTimeout\":600,\"restartDelay\":600,\"restartDelayMax\":600"
/* Timers the scenarios wait for. */
#define QUICK_TIMERS "\"startTimeout\":0.2,\"stopTimeout\":0.1,\"killTimeout\":0.1,\"restartDelay\":0.05,\"restartDelayMax\":0.05"
/* No pings: the table feeds their answers itself. */
#define SLOW SLOW_TIMERS ",\"healthInterval\":0"
#define QUICK QUICK_TIMERS ",\"healthInterval\":0"

#define MSEC (USEC_PER_SEC / 1000)

/* Server "a" with these settings (JSON members), restarted on failure. */
static void start_daemon(const char *settings) {
        char *text;

        cr_assert(asprintf(&text, "{\"mcpServers\":{\"a\":{\"command\":\"/bin/cat\",\"restart\":\"on-failure\",%s}}}",
                           settings) > 0);
        cr_assert_eq(parse(text), 0, "%s", text);
        free(text);
        cr_assert_eq(supervisor_init(&sv, loop_start(), &lg, &parser, &C, NULL, NULL), 0);
        s = supervisor_find(&sv, "a");
        cr_assert_not_null(s);
}

static void setup(void) {
        log_capture_start();
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
        L = (typeof(L)){ 0 };
        fake_words = run_process_words;
}

static void teardown(void) {
        if (s) { /* not a test of the tables alone */
                supervisor_done(&sv);
                server_stop();
                done();
        }
        jsonrpc_parser_done(&parser);
        log_capture_stop();
}

TestSuite(server, .init = setup, .fini = teardown, .timeout = 30);

static int64_t id_of(json_object *m) {
        json_object *id;

        cr_assert(json_object_object_get_ex(m, "id", &id), "no id: %s", json_object_to_json_string(m));
        return json_object_get_int64(id);
}

/* The first message of a start: server/discover, the era's probe, is answered as a legacy
 * server does (-32601) unless the start skipped it (a legacy era known); then the next. */
static json_object *server_reads_after_probe(void) {
        json_object *m = server_reads();
        char line[256];

        if (strcmp(str_field(m, "method") ?: "", "server/discover") != 0)
                return m;
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n",
                 (long long)id_of(m));
        json_object_put(m);
        server_says(line);
        return server_reads();
}

/* The server reads initialize and answers it with members (JSON) after its id. */
static void server_answers_initialize(const char *answer) {
        json_object *m = server_reads_after_probe();
        char line[512];

        cr_assert_str_eq(str_field(m, "method"), "initialize");
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,%s}\n", (long long)id_of(m), answer);
        json_object_put(m);
        server_says(line);
}

/* A server with nothing to list: the handshake ends with initialize. */
static void server_completes_handshake(void) {
        server_answers_initialize("\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                                  "\"serverInfo\":{\"name\":\"fake\",\"version\":\"1\"}}");
        WAIT_UNTIL(s->state != SERVER_STARTING);
}

static void server_refuses_handshake(void) {
        server_answers_initialize("\"error\":{\"code\":-32603,\"message\":\"not today\"}");
        WAIT_UNTIL(s->state != SERVER_STARTING);
}

static void handle(enum server_event ev) {
        server_handle(s, ev, "fed by the test");
}

/* For the messages: the states as the table has them (server_state_name() says
 * "stopping" for each stop stage), and the events. */
static const char *state_text(enum server_state state) {
        if (state == SERVER_STOP_TERM)
                return "stopping (SIGTERM sent)";
        if (state == SERVER_STOP_KILL)
                return "stopping (SIGKILL sent)";
        return server_state_name(state);
}

static const char *const event_text[SERVER_EV_COUNT] = {
        [SERVER_EV_START] = "start",         [SERVER_EV_STOP] = "stop",       [SERVER_EV_RESTART] = "restart",
        [SERVER_EV_READY] = "ready",         [SERVER_EV_START_FAILED] = "start failed",
        [SERVER_EV_PING_OK] = "ping ok",     [SERVER_EV_PING_FAILED] = "ping failed",
        [SERVER_EV_BROKEN] = "broken",       [SERVER_EV_VIOLATION] = "violation",
        [SERVER_EV_EXITED] = "exited",       [SERVER_EV_TIMER] = "timer",
};

/* Puts the server in state the way the daemon gets there. */
static void reach(enum server_state state) {
        switch (state) {
        case SERVER_STOPPED:
                break;
        case SERVER_STARTING:
                handle(SERVER_EV_START);
                break;
        case SERVER_READY:
                reach(SERVER_STARTING);
                server_completes_handshake();
                break;
        case SERVER_UNHEALTHY:
                reach(SERVER_READY);
                handle(SERVER_EV_PING_FAILED);
                break;
        case SERVER_STOPPING:
                reach(SERVER_READY);
                handle(SERVER_EV_STOP);
                break;
        case SERVER_STOP_TERM:
                reach(SERVER_STOPPING);
                handle(SERVER_EV_TIMER);
                break;
        case SERVER_STOP_KILL:
                reach(SERVER_STOP_TERM);
                handle(SERVER_EV_TIMER);
                break;
        case SERVER_BACKOFF:
                reach(SERVER_READY);
                run_ends(CLD_EXITED, 1);
                break;
        case SERVER_FAILED:
                L.start_error = -ENOENT; /* a program that is not there: no retry */
                handle(SERVER_EV_START);
                break;
        default:
                cr_assert_fail("no way to state %d", state);
        }
        cr_assert_eq(s->state, state, "reached %s, not %s", state_text(s->state), state_text(state));
}

/* ---- every cell ---- */

/* What an event asked of the launcher and of the run's connection. */
enum {
        ASK_START = 1 << 0, /* a new run */
        ASK_CLOSE = 1 << 1, /* its stdin closed: the MCP stdio close begins */
        ASK_TERM = 1 << 2,  /* SIGTERM */
        ASK_KILL = 1 << 3,  /* SIGKILL */
};

struct cell {
        enum server_state from;
        enum server_event ev;
        enum server_state to;
        unsigned asks;
};

#define STOPPED SERVER_STOPPED
#define STARTING SERVER_STARTING
#define READY SERVER_READY
#define UNHEALTHY SERVER_UNHEALTHY
#define STOPPING SERVER_STOPPING
#define STOP_TERM SERVER_STOP_TERM
#define STOP_KILL SERVER_STOP_KILL
#define BACKOFF SERVER_BACKOFF
#define FAILED SERVER_FAILED

/* The cells where an event can arrive; SERVER_EV_EXITED is an exit status 1. */
static struct cell cells[] = {
        { STOPPED, SERVER_EV_START, STARTING, ASK_START },
        { STOPPED, SERVER_EV_STOP, STOPPED, 0 },
        { STOPPED, SERVER_EV_RESTART, STARTING, ASK_START },

        { STARTING, SERVER_EV_START, STARTING, 0 },
        { STARTING, SERVER_EV_STOP, STOPPING, ASK_CLOSE },
        { STARTING, SERVER_EV_RESTART, STOPPING, ASK_CLOSE },
        { STARTING, SERVER_EV_READY, READY, 0 },
        { STARTING, SERVER_EV_START_FAILED, STOPPING, ASK_CLOSE },
        { STARTING, SERVER_EV_BROKEN, STOPPING, ASK_CLOSE },
        { STARTING, SERVER_EV_VIOLATION, STOPPING, ASK_CLOSE },
        { STARTING, SERVER_EV_EXITED, BACKOFF, 0 },
        { STARTING, SERVER_EV_TIMER, STOPPING, ASK_CLOSE }, /* startTimeout */

        { READY, SERVER_EV_START, READY, 0 },
        { READY, SERVER_EV_STOP, STOPPING, ASK_CLOSE },
        { READY, SERVER_EV_RESTART, STOPPING, ASK_CLOSE },
        { READY, SERVER_EV_PING_OK, READY, 0 },
        { READY, SERVER_EV_PING_FAILED, UNHEALTHY, 0 }, /* the first of healthFailures */
        { READY, SERVER_EV_BROKEN, STOPPING, ASK_CLOSE },
        { READY, SERVER_EV_VIOLATION, STOPPING, ASK_CLOSE },
        { READY, SERVER_EV_EXITED, BACKOFF, 0 },

        { UNHEALTHY, SERVER_EV_START, UNHEALTHY, 0 },
        { UNHEALTHY, SERVER_EV_STOP, STOPPING, ASK_CLOSE },
        { UNHEALTHY, SERVER_EV_RESTART, STOPPING, ASK_CLOSE },
        { UNHEALTHY, SERVER_EV_PING_OK, READY, 0 },
        { UNHEALTHY, SERVER_EV_PING_FAILED, UNHEALTHY, 0 },
        { UNHEALTHY, SERVER_EV_BROKEN, STOPPING, ASK_CLOSE },
        { UNHEALTHY, SERVER_EV_VIOLATION, STOPPING, ASK_CLOSE },
        { UNHEALTHY, SERVER_EV_EXITED, BACKOFF, 0 },

        /* reached by a stop: the exit leaves it stopped */
        { STOPPING, SERVER_EV_START, STOPPING, 0 },
        { STOPPING, SERVER_EV_STOP, STOPPING, 0 },
        { STOPPING, SERVER_EV_RESTART, STOPPING, 0 },
        { STOPPING, SERVER_EV_BROKEN, STOPPING, 0 },
        { STOPPING, SERVER_EV_VIOLATION, STOPPING, 0 },
        { STOPPING, SERVER_EV_EXITED, STOPPED, 0 },
        { STOPPING, SERVER_EV_TIMER, STOP_TERM, ASK_TERM }, /* stopTimeout */

        { STOP_TERM, SERVER_EV_START, STOP_TERM, 0 },
        { STOP_TERM, SERVER_EV_STOP, STOP_TERM, 0 },
        { STOP_TERM, SERVER_EV_RESTART, STOP_TERM, 0 },
        { STOP_TERM, SERVER_EV_BROKEN, STOP_TERM, 0 },
        { STOP_TERM, SERVER_EV_VIOLATION, STOP_TERM, 0 },
        { STOP_TERM, SERVER_EV_EXITED, STOPPED, 0 },
        { STOP_TERM, SERVER_EV_TIMER, STOP_KILL, ASK_KILL }, /* killTimeout */

        { STOP_KILL, SERVER_EV_START, STOP_KILL, 0 },
        { STOP_KILL, SERVER_EV_STOP, STOP_KILL, 0 },
        { STOP_KILL, SERVER_EV_RESTART, STOP_KILL, 0 },
        { STOP_KILL, SERVER_EV_BROKEN, STOP_KILL, 0 },
        { STOP_KILL, SERVER_EV_VIOLATION, STOP_KILL, 0 },
        { STOP_KILL, SERVER_EV_EXITED, STOPPED, 0 },
        { STOP_KILL, SERVER_EV_TIMER, STOP_KILL, ASK_KILL }, /* still there 10 s after SIGKILL */

        { BACKOFF, SERVER_EV_START, STARTING, ASK_START },
        { BACKOFF, SERVER_EV_STOP, STOPPED, 0 },
        { BACKOFF, SERVER_EV_RESTART, STARTING, ASK_START },
        { BACKOFF, SERVER_EV_TIMER, STARTING, ASK_START }, /* the restart */

        { FAILED, SERVER_EV_START, STARTING, ASK_START },
        { FAILED, SERVER_EV_STOP, STOPPED, 0 },
        { FAILED, SERVER_EV_RESTART, STARTING, ASK_START },
};

/* The cells of events that cannot arrive in the state: server.c's act_no_* log the bug
 * and stop the daemon. */
#define NEVER(state, event) { .from = (state), .ev = (event) }
static struct cell impossible[] = {
        NEVER(STOPPED, SERVER_EV_READY), NEVER(STOPPED, SERVER_EV_START_FAILED), NEVER(STOPPED, SERVER_EV_PING_OK),
        NEVER(STOPPED, SERVER_EV_PING_FAILED), NEVER(STOPPED, SERVER_EV_BROKEN), NEVER(STOPPED, SERVER_EV_VIOLATION),
        NEVER(STOPPED, SERVER_EV_EXITED), NEVER(STOPPED, SERVER_EV_TIMER),

        NEVER(STARTING, SERVER_EV_PING_OK), NEVER(STARTING, SERVER_EV_PING_FAILED),

        NEVER(READY, SERVER_EV_READY), NEVER(READY, SERVER_EV_START_FAILED), NEVER(READY, SERVER_EV_TIMER),

        NEVER(UNHEALTHY, SERVER_EV_READY), NEVER(UNHEALTHY, SERVER_EV_START_FAILED), NEVER(UNHEALTHY, SERVER_EV_TIMER),

        NEVER(STOPPING, SERVER_EV_READY), NEVER(STOPPING, SERVER_EV_START_FAILED), NEVER(STOPPING, SERVER_EV_PING_OK),
        NEVER(STOPPING, SERVER_EV_PING_FAILED),

        NEVER(STOP_TERM, SERVER_EV_READY), NEVER(STOP_TERM, SERVER_EV_START_FAILED), NEVER(STOP_TERM, SERVER_EV_PING_OK),
        NEVER(STOP_TERM, SERVER_EV_PING_FAILED),

        NEVER(STOP_KILL, SERVER_EV_READY), NEVER(STOP_KILL, SERVER_EV_START_FAILED), NEVER(STOP_KILL, SERVER_EV_PING_OK),
        NEVER(STOP_KILL, SERVER_EV_PING_FAILED),

        NEVER(BACKOFF, SERVER_EV_READY), NEVER(BACKOFF, SERVER_EV_START_FAILED), NEVER(BACKOFF, SERVER_EV_PING_OK),
        NEVER(BACKOFF, SERVER_EV_PING_FAILED), NEVER(BACKOFF, SERVER_EV_BROKEN), NEVER(BACKOFF, SERVER_EV_VIOLATION),
        NEVER(BACKOFF, SERVER_EV_EXITED),

        NEVER(FAILED, SERVER_EV_READY), NEVER(FAILED, SERVER_EV_START_FAILED), NEVER(FAILED, SERVER_EV_PING_OK),
        NEVER(FAILED, SERVER_EV_PING_FAILED), NEVER(FAILED, SERVER_EV_BROKEN), NEVER(FAILED, SERVER_EV_VIOLATION),
        NEVER(FAILED, SERVER_EV_EXITED), NEVER(FAILED, SERVER_EV_TIMER),
};

static unsigned cell_count(const struct cell *list, size_t n, enum server_state state, enum server_event ev) {
        unsigned k = 0;

        for (size_t i = 0; i < n; i++)
                k += list[i].from == state && list[i].ev == ev;
        return k;
}

Test(server, every_cell_tested_once) {
        for (int st = 0; st < SERVER_STATE_COUNT; st++)
                for (int ev = 0; ev < SERVER_EV_COUNT; ev++)
                        cr_expect_eq(cell_count(cells, ARRAY_SIZE(cells), st, ev) +
                                             cell_count(impossible, ARRAY_SIZE(impossible), st, ev),
                                     1, "%s x %s", state_text(st), event_text[ev]);
}

/* An event as its source sends it: the handshake's ends come over the connection, an
 * exit from the launcher; the others straight, as health.c, server-conn.c and the timer do. */
static void feed(enum server_event ev) {
        switch (ev) {
        case SERVER_EV_READY:
                server_completes_handshake();
                break;
        case SERVER_EV_START_FAILED:
                server_refuses_handshake();
                break;
        case SERVER_EV_EXITED:
                run_ends(CLD_EXITED, 1);
                break;
        default:
                handle(ev);
                break;
        }
}

ParameterizedTestParameters(server, cell) {
        return cr_make_param_array(struct cell, cells, ARRAY_SIZE(cells));
}

ParameterizedTest(struct cell *c, server, cell) {
        const char *from = state_text(c->from), *ev = event_text[c->ev];
        unsigned starts, terminates, kills;

        start_daemon(SLOW);
        reach(c->from);
        starts = L.starts;
        terminates = L.terminates;
        kills = L.kills;
        feed(c->ev);
        cr_assert_eq(s->state, c->to, "%s x %s: %s, not %s", from, ev, state_text(s->state), state_text(c->to));
        cr_assert_eq(L.starts - starts, !!(c->asks & ASK_START), "%s x %s: starts", from, ev);
        cr_assert_eq(L.terminates - terminates, !!(c->asks & ASK_TERM), "%s x %s: SIGTERM", from, ev);
        cr_assert_eq(L.kills - kills, !!(c->asks & ASK_KILL), "%s x %s: SIGKILL", from, ev);
        if (c->asks & ASK_CLOSE)
                WAIT_UNTIL(server_saw_eof());
        cr_assert_eq(server_running(s), L.current != NULL, "a run while the launcher has one");
}

ParameterizedTestParameters(server, impossible_cell_stops_the_daemon) {
        return cr_make_param_array(struct cell, impossible, ARRAY_SIZE(impossible));
}

/* How the test ends when the daemon stopped itself for a bug, as it says it does. */
#define EXIT_BUG_SAID 42

/* The abort() of server.c's impossible(), after it logged the bug (any other abort, a
 * double free say, fails the test); the log capture is given back, there being no fini. */
static void on_abort(int sig) {
        bool said = strstr(logged(), "[a] bug: ") != NULL;

        log_capture_stop();
        _exit(said ? EXIT_BUG_SAID : EXIT_FAILURE);
}

ParameterizedTest(struct cell *c, server, impossible_cell_stops_the_daemon, .exit_code = EXIT_BUG_SAID) {
        start_daemon(SLOW);
        reach(c->from);
        signal(SIGABRT, on_abort);
        handle(c->ev);
        cr_assert_fail("%s x %s was taken", state_text(c->from), event_text[c->ev]);
}

/* ---- ways through the table ---- */

/* Not in the log. */
static void refute_log(const char *needle) {
        cr_assert_null(strstr(logged(), needle), "logged \"%s\":\n%s", needle, logged());
}

static void expect_log(const char *needle) {
        cr_assert_not_null(strstr(logged(), needle), "did not log \"%s\":\n%s", needle, logged());
}

Test(server, start_to_ready) {
        start_daemon(SLOW);
        handle(SERVER_EV_START);
        cr_assert_eq(s->state, SERVER_STARTING);
        server_completes_handshake();
        cr_assert_eq(s->state, SERVER_READY);
        cr_assert(server_serving(s));
        expect_log("[a] starting -> ready: 0 tools, 0 prompts, 0 resources, 0 templates");
}

/* At least 0.1 s, but libevent counts a timer from the time it read when the loop last
 * woke, which may be a few milliseconds before the stop was asked. */
#define STOP_MIN (90 * MSEC)

/* The MCP stdio close, each stage on its own timer, all of it "stopping" to users: one
 * line when it begins, none between stages, state_since from the stop on. */
Test(server, stop_goes_through_each_stage_on_its_timeout) {
        uint64_t asked, since;

        start_daemon(QUICK);
        reach(SERVER_READY);
        asked = now_usec();
        handle(SERVER_EV_STOP);
        since = s->state_since;
        cr_assert_eq(s->state, SERVER_STOPPING);
        WAIT_UNTIL(server_saw_eof());
        cr_assert_eq(L.terminates, 0, "SIGTERM before stopTimeout");

        WAIT_UNTIL(L.terminates == 1);
        cr_assert_geq(now_usec() - asked, STOP_MIN, "SIGTERM before stopTimeout (0.1 s)");
        cr_assert_eq(s->state, SERVER_STOP_TERM);
        cr_assert_eq(L.kills, 0);
        cr_assert_str_eq(server_state_name(s->state), "stopping");
        cr_assert(server_stopping(s));

        WAIT_UNTIL(L.kills == 1);
        cr_assert_geq(now_usec() - asked, 2 * STOP_MIN, "SIGKILL before stopTimeout + killTimeout");
        cr_assert_eq(s->state, SERVER_STOP_KILL);
        cr_assert_str_eq(server_state_name(s->state), "stopping");
        cr_assert_eq(s->state_since, since, "a stop stage is no new state to users");

        run_ends(CLD_KILLED, SIGKILL);
        cr_assert_eq(s->state, SERVER_STOPPED);
        cr_assert_eq(s->last_exit.signal_sent, SIGKILL);
        cr_assert_eq(L.terminates, 1);
        cr_assert_eq(L.kills, 1);
        expect_log("[a] ready -> stopping: fed by the test\n");
        expect_log("[a] still running 0.1 s after its stdin was closed; sending SIGTERM");
        expect_log("[a] still running 0.1 s after SIGTERM; sending SIGKILL");
        expect_log("[a] stopping -> stopped: fed by the test");
        refute_log("stopping -> stopping");
}

/* Each step of a stop is logged in the words of the run's launcher: a run of the HTTP
 * launcher has a session, not a stdin, and no signals or pid. */
Test(server, stop_is_told_in_the_launchers_words) {
        fake_words = *run_http_ops.words;
        start_daemon(QUICK);
        reach(SERVER_READY);
        handle(SERVER_EV_STOP);
        WAIT_UNTIL(L.kills == 1);
        cr_assert_eq(s->state, SERVER_STOP_KILL);
        handle(SERVER_EV_TIMER); /* no end after the kill: said, and killed again */
        cr_assert_eq(L.kills, 2);
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_STOPPED);
        cr_assert_eq(s->last_exit.signal_sent, 0, "no signal said to have been sent");
        expect_log("[a] started /bin/cat as a run of the test's (instance 1)");
        expect_log("[a] closed its session; waiting 0.1 s for it to end\n");
        expect_log("[a] still running 0.1 s after its session was closed; ending its transfers\n");
        expect_log("[a] still running 0.1 s after ending its transfers; ending them again\n");
        expect_log("[a] a run of the test's has not ended after its transfers ended\n");
        refute_log("stdin");
        refute_log("SIGTERM");
        refute_log("SIGKILL");
        refute_log("pid ");
}

/* The exec launcher's words, and no pid where the launcher has none to give. */
Test(server, kill_again_names_the_run_as_its_launcher_does) {
        start_daemon(SLOW);
        reach(SERVER_STOP_KILL);
        handle(SERVER_EV_TIMER);
        expect_log("[a] a run of the test's has not ended after SIGKILL (stuck in the kernel?)\n");
        refute_log("pid 0");
        run_ends(CLD_KILLED, SIGKILL);
}

/* An exit after SIGTERM is said to have come after it (the status answer's facts). */
Test(server, exit_after_sigterm_says_so) {
        start_daemon(SLOW);
        reach(SERVER_STOP_TERM);
        run_ends(CLD_KILLED, SIGTERM);
        cr_assert_eq(s->state, SERVER_STOPPED);
        cr_assert_eq(s->last_exit.signal_sent, SIGTERM);
        cr_assert_eq(s->last_exit.stop_timeout, 600);
}

Test(server, start_timeout) {
        start_daemon(QUICK);
        handle(SERVER_EV_START);
        json_object_put(server_reads()); /* initialize, never answered */
        WAIT_UNTIL(s->state == SERVER_STOPPING);
        cr_assert_str_eq(server_state_cause(s), "startTimeout (0.2 s) passed before it was ready");
        WAIT_UNTIL(server_saw_eof());
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_BACKOFF, "a start that timed out failed, however it exited");
}

Test(server, exit_during_start_backs_off) {
        start_daemon(SLOW);
        handle(SERVER_EV_START);
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_BACKOFF, "an exit before ready is a failure, even 0");
        cr_assert_not_null(strstr(server_state_cause(s), "before it was ready"), "%s", server_state_cause(s));
}

Test(server, exit_while_ready_restarts_after_backoff) {
        start_daemon(QUICK);
        reach(SERVER_READY);
        run_ends(CLD_EXITED, 1);
        cr_assert_eq(s->state, SERVER_BACKOFF);
        cr_assert_str_eq(server_state_cause(s), "exit status 1; restarting in 0.05 s");
        WAIT_UNTIL(s->state == SERVER_STARTING);
        cr_assert_eq(L.starts, 2);
        server_completes_handshake();
        cr_assert_eq(s->state, SERVER_READY);
        cr_assert_eq(s->starts, 2, "one restart");
}

/* A legacy server that ends on the probe (an unknown method before initialize) is still
 * served: its next start initializes at once, not probed again, so it does not loop. */
Test(server, ended_on_probe_initializes_without_it_next) {
        json_object *m;

        start_daemon(QUICK);
        handle(SERVER_EV_START);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "server/discover");
        json_object_put(m);
        run_ends(CLD_EXITED, 1);
        cr_assert_eq(s->state, SERVER_BACKOFF);
        cr_assert_eq(s->era_learned, MCP_ERA_LEGACY);
        WAIT_UNTIL(s->state == SERVER_STARTING);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "initialize", "probed again: %s", json_object_to_json_string(m));
        json_object_put(m);
}

/* A modern server: discover answered, ready without initialize, health checked with
 * server/discover (no ping in its era), and the era kept for its next starts. */
Test(server, modern_server_ready_and_checked_with_discover) {
        json_object *m;
        char line[512];

        start_daemon(QUICK_TIMERS ",\"healthInterval\":0.05");
        handle(SERVER_EV_START);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "server/discover");
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\"],"
                 "\"capabilities\":{}}}\n",
                 (long long)id_of(m));
        json_object_put(m);
        server_says(line);
        WAIT_UNTIL(s->state == SERVER_READY);
        cr_assert_eq(s->era, MCP_ERA_MODERN);
        cr_assert_eq(s->era_learned, MCP_ERA_MODERN);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "server/discover", "the health check: %s", json_object_to_json_string(m));
        json_object_put(m);
}

/* "protocol": "legacy": no probe at all. */
Test(server, legacy_configured_is_not_probed) {
        json_object *m;

        start_daemon(QUICK ",\"protocol\":\"legacy\"");
        handle(SERVER_EV_START);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "initialize");
        json_object_put(m);
}

/* startLimitBurst starts within startLimitInterval, each ending in a failure: failed. */
Test(server, crash_loop_fails_at_start_limit) {
        start_daemon(QUICK ",\"startLimitBurst\":3,\"startLimitInterval\":600");
        handle(SERVER_EV_START);
        for (unsigned i = 1; i < 3; i++) {
                run_ends(CLD_EXITED, 1);
                cr_assert_eq(s->state, SERVER_BACKOFF, "after exit %u", i);
                WAIT_UNTIL(s->state == SERVER_STARTING);
        }
        run_ends(CLD_EXITED, 1);
        cr_assert_eq(s->state, SERVER_FAILED);
        cr_assert_eq(L.starts, 3);
        expect_log("started 3 times within 600 s, giving up (startLimitBurst)");
        run_for(200 * MSEC);
        cr_assert_eq(L.starts, 3, "started again after failing");
}

/* Closed its stdout while serving: its exit status says whether it failed. */
Test(server, closed_stdout_then_exit_0_is_no_failure) {
        start_daemon(SLOW);
        reach(SERVER_READY);
        server_closes_stdout();
        WAIT_UNTIL(s->state == SERVER_STOPPING);
        cr_assert_str_eq(server_state_cause(s), "closed its stdout");
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_STOPPED, "restart on-failure after a clean exit");
}

Test(server, closed_stdout_then_exit_1_is_a_failure) {
        start_daemon(SLOW);
        reach(SERVER_READY);
        server_closes_stdout();
        WAIT_UNTIL(s->state == SERVER_STOPPING);
        run_ends(CLD_EXITED, 1);
        cr_assert_eq(s->state, SERVER_BACKOFF);
}

/* While starting, it is a failure however it exits. */
Test(server, closed_stdout_while_starting_is_a_failure) {
        start_daemon(SLOW);
        handle(SERVER_EV_START);
        server_closes_stdout();
        WAIT_UNTIL(s->state == SERVER_STOPPING);
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_BACKOFF);
}

/* healthFailures pings in a row unanswered: the run is ended as a failure. */
Test(server, unanswered_pings_end_the_run) {
        start_daemon(SLOW_TIMERS ",\"healthInterval\":0.05,\"healthTimeout\":0.1,\"healthFailures\":2");
        reach(SERVER_READY);
        WAIT_UNTIL(s->state == SERVER_UNHEALTHY);
        WAIT_UNTIL(s->state == SERVER_STOPPING);
        cr_assert_str_eq(server_state_cause(s), "2 health checks failed in a row: no answer to ping within healthTimeout (0.1 s)");
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_BACKOFF);
}

Test(server, restart_while_stopping_starts_it_after_the_exit) {
        start_daemon(SLOW);
        reach(SERVER_STOPPING);
        handle(SERVER_EV_RESTART);
        cr_assert_eq(s->state, SERVER_STOPPING);
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_STARTING);
        cr_assert_eq(L.starts, 2);
}

Test(server, stop_while_stopping_to_restart_keeps_it_stopped) {
        start_daemon(SLOW);
        reach(SERVER_READY);
        handle(SERVER_EV_RESTART);
        handle(SERVER_EV_STOP);
        run_ends(CLD_EXITED, 0);
        cr_assert_eq(s->state, SERVER_STOPPED);
        cr_assert_eq(L.starts, 1);
}

Test(server, start_while_backoff_starts_at_once) {
        start_daemon(SLOW);
        reach(SERVER_BACKOFF);
        handle(SERVER_EV_START);
        cr_assert_eq(s->state, SERVER_STARTING);
        cr_assert_eq(L.starts, 2);
        server_completes_handshake();
        cr_assert_eq(s->state, SERVER_READY);
}

Test(server, stop_while_failed) {
        start_daemon(SLOW);
        reach(SERVER_FAILED);
        handle(SERVER_EV_STOP);
        cr_assert_eq(s->state, SERVER_STOPPED);
        cr_assert_str_eq(server_state_cause(s), "fed by the test");
        cr_assert_eq(L.starts, 0);
}
