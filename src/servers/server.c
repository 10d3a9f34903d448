/* One supervised server: the state x event table and its actions; see server.h. */
#include "server.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server-conn.h"
#include "run.h"
#include "jsonrpc.h"
#include "log.h"
#include "process.h"
#include "supervisor.h"
#include "time-util.h"

/* After SIGKILL the exit is near; if it does not come, say so at this interval. */
#define KILL_WAIT_USEC (10 * USEC_PER_SEC)

/* What users see of a state: the stop stages are one state to them, as systemd shows its
 * service's stop-sigterm and stop-sigkill as one "deactivating". */
static enum server_state shown_state(enum server_state state) {
        return state == SERVER_STOP_TERM || state == SERVER_STOP_KILL ? SERVER_STOPPING : state;
}

const char *server_state_name(enum server_state state) {
        static const char *const names[SERVER_STATE_COUNT] = {
                [SERVER_STOPPED] = "stopped",     [SERVER_STARTING] = "starting", [SERVER_READY] = "ready",
                [SERVER_UNHEALTHY] = "unhealthy", [SERVER_STOPPING] = "stopping", [SERVER_BACKOFF] = "backoff",
                [SERVER_FAILED] = "failed",
        };

        return names[shown_state(state)];
}

bool server_stopping(const struct server *s) {
        return shown_state(s->state) == SERVER_STOPPING;
}

bool server_state_listed(enum server_state state) {
        return state == SERVER_READY || state == SERVER_UNHEALTHY;
}

bool server_running(const struct server *s) {
        return s->run != NULL;
}

struct child *server_child(const struct server *s) {
        return s->run ? s->run->child : NULL;
}

uint64_t server_run_number(const struct server *s) {
        return s->run ? s->run->number : 0;
}

struct child *server_run_child(const struct server *s, uint64_t number) {
        return s->run && s->run->number == number ? s->run->child : NULL;
}

const char *server_prefix(const struct server *s) {
        return s->config->prefix ? s->config->prefix : s->config->name;
}

bool server_serving(const struct server *s) {
        return (s->state == SERVER_READY || s->state == SERVER_UNHEALTHY) && s->run && s->run->child;
}

unsigned server_caps_for(const struct server *s, unsigned client_caps) {
        return client_caps | (s->config->roots.n > 0 ? 1u << CLIENT_CAP_ROOTS : 0);
}

void server_resource_subscription(struct server *s, const char *uri, bool on) {
        json_object *params;

        if (!server_serving(s))
                return;
        if (s->era == MCP_ERA_MODERN) {
                if (server_listen_uri(&s->listen, uri, on) < 0)
                        server_log(s, LOG_WARNING, "cannot listen for updates of %s: out of memory", uri);
                return;
        }
        params = json_object_new_object();
        json_object_object_add(params, "uri", json_object_new_string(uri));
        (void)child_request(s->run->child, on ? "resources/subscribe" : "resources/unsubscribe", params, 0, NULL, NULL);
}

const char *server_state_cause(const struct server *s) {
        return s->cause ? s->cause : "";
}

char *server_cause_now(const struct server *s) {
        uint64_t now = now_usec();
        _cleanup_free_ char *why = NULL;
        char *text = NULL;

        if (s->state != SERVER_BACKOFF)
                return strdup(server_state_cause(s));
        why = server_cause_text(&s->why);
        /* the restart may be due in this very iteration: never a delay that has passed */
        if (s->restart_at <= now) {
                if (asprintf(&text, "%s; restarting now", why ? why : "a failure") < 0)
                        return NULL;
        } else if (asprintf(&text, "%s; restarting in %.1f s", why ? why : "a failure",
                            (double)(s->restart_at - now) / (double)USEC_PER_SEC) < 0)
                return NULL;
        return text;
}

char *server_describe(const struct server *s) {
        _cleanup_free_ char *cause = server_cause_now(s);
        char *text = NULL;

        if (asprintf(&text, "%s%s%s", server_state_name(s->state), cause && *cause ? ": " : "", cause ? cause : "") < 0)
                return NULL;
        return text;
}

const char *server_last_stderr(const struct server *s, uint64_t *ret_at) {
        if (s->run && s->run->err.last[0]) {
                *ret_at = s->run->err.last_at;
                return s->run->err.last;
        }
        *ret_at = s->last_stderr_at;
        return s->last_stderr[0] ? s->last_stderr : NULL;
}

void server_log(const struct server *s, int priority, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int r;

        if (priority > s->sv->log->max_priority)
                return;
        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r >= 0)
                log_emit(s->sv->log, priority, &(struct log_subject){ .server = s->config->name }, "%s", text);
}

static int state_priority(enum server_state state) {
        switch (state) {
        case SERVER_FAILED:
                return LOG_ERR;
        case SERVER_UNHEALTHY:
        case SERVER_BACKOFF:
                return LOG_WARNING;
        default:
                return LOG_INFO;
        }
}

static void replace_cause(struct server *s, const char *cause) {
        free(s->cause);
        s->cause = strdup(cause ? cause : ""); /* out of memory: no cause, which reads as "" */
}

/* The only place a server changes state: logged once, with its cause and, in the log
 * only, a note ("; last stderr line: ..."), which the status answer has apart. */
static void change_state(struct server *s, enum server_state state, const char *cause, const char *note) {
        enum server_state old = s->state;

        replace_cause(s, cause);
        if (old == state)
                return;
        s->state = state;
        if (shown_state(old) == shown_state(state)) /* the next stop stage: nothing users see moved */
                return;
        s->state_since = now_usec();
        server_log(s, state_priority(state), "%s -> %s%s%s%s", server_state_name(old), server_state_name(state),
                   *server_state_cause(s) ? ": " : "", server_state_cause(s), note ? note : "");
        /* What clients see changes only when it enters or leaves the registry's lists. */
        if (server_state_listed(old) != server_state_listed(state))
                supervisor_server_changed(s->sv, s, CATALOG_ALL_KINDS, server_state_listed(old));
        else
                supervisor_server_changed(s->sv, s, 0, false);
}

static void set_state(struct server *s, enum server_state state, const char *cause) {
        change_state(s, state, cause, NULL);
}

/* The next stop stage, for the cause of the one before. */
static void next_stop_stage(struct server *s, enum server_state stage) {
        _cleanup_free_ char *cause = strdup(server_state_cause(s));

        set_state(s, stage, cause);
}

/* A state whose cause is s->why. */
static void set_state_why(struct server *s, enum server_state state) {
        _cleanup_free_ char *text = server_cause_text(&s->why);

        set_state(s, state, text);
}

static void arm_timer(struct server *s, uint64_t usec) {
        struct timeval tv = timeval_from_usec(usec);

        evtimer_add(s->timer, &tv);
}

static void disarm_timer(struct server *s) {
        evtimer_del(s->timer);
}

static const char *seconds(double v, char *buf, size_t size) {
        snprintf(buf, size, "%g s", v);
        return buf;
}

/* ---- actions ---- */

typedef void (*server_action)(struct server *s, const char *detail);

/* A start of a server that runs (or is starting) asks for nothing more. */
static void act_already_running(struct server *s, const char *detail) {
}

/* Its connection fails while it is being closed: expected, as closing its stdin is how it
 * is asked to end; its exit decides what follows. */
static void act_ignore_closing(struct server *s, const char *detail) {
}

/* An event that cannot arrive in the current state (each act_no_* below says why): a bug
 * of the daemon's, stopped hard as pgbouncer and systemd do rather than run on with a
 * server whose state no longer says what it does. */
_Noreturn static void impossible(struct server *s, const char *event, const char *detail) {
        server_log(s, LOG_CRIT, "bug: %s in state %s%s%s", event, server_state_name(s->state), detail ? ": " : "",
                   detail ? detail : "");
        abort();
}

/* The handshake's end (ready, or failed) comes only while starting: act_spawn begins it,
 * and every way out of starting ends or cancels it (act_ready, begin_stop, end_run). */
static void act_no_handshake(struct server *s, const char *detail) {
        impossible(s, "the end of a handshake that is not running", detail);
}

/* A ping's answer comes only while ready or unhealthy: act_ready starts the health checks,
 * and every way out of those states stops them (begin_stop, end_run). */
static void act_no_health(struct server *s, const char *detail) {
        impossible(s, "the answer to a ping that was not sent", detail);
}

/* Its connection and its end come only from its current run; without one there is none
 * (a retired run's connection is freed with it, and its end was reported already). */
static void act_no_run(struct server *s, const char *detail) {
        impossible(s, "news of a run it does not have", detail);
}

/* The timer is armed only for starting, stopping and backoff; every way out of those
 * states disarms or re-arms it (evtimer_del() takes back a timeout already due, too). */
static void act_no_deadline(struct server *s, const char *detail) {
        impossible(s, "a deadline it did not set", detail);
}

static void on_handshake(int r, const char *why, void *userdata) {
        struct server *s = userdata;

        if (r == 0)
                server_handle(s, SERVER_EV_READY, NULL);
        else
                server_handle(s, SERVER_EV_START_FAILED, why);
}

static void after_run(struct server *s, bool failure);
static void start_refresh(struct server *s);

static bool permanent_spawn_error(int r) {
        return r == -ENOENT || r == -EACCES || r == -ENOEXEC || r == -ENOTDIR || r == -ELOOP || r == -EPERM ||
               r == -ENAMETOOLONG || r == -EISDIR;
}

/* The daemon ran short of descriptors or processes for a moment: nothing the server did. */
static bool transient_spawn_error(int r) {
        return r == -EMFILE || r == -ENFILE || r == -EAGAIN;
}

static void on_child_message(struct child *ch, struct jsonrpc_msg *m, void *userdata);
static void on_child_broken(struct child *ch, const char *why, bool violation, void *userdata);
static const struct child_ops child_ops = { .message = on_child_message, .broken = on_child_broken };

/* What the daemon offers to ask of clients on this server's behalf (upcall.h).
 * Configured roots are the daemon's to answer, and a reload that changes them says so. */
static json_object *offered_capabilities(const struct server *s) {
        json_object *caps = json_object_new_object();

        for (int i = 0; i < CLIENT_CAP_COUNT; i++) {
                json_object *cap;

                if (!(s->config->client_capabilities & (1u << i)))
                        continue;
                cap = json_object_new_object();
                if (i == CLIENT_CAP_ROOTS && s->config->roots.n > 0)
                        json_object_object_add(cap, "listChanged", json_object_new_boolean(true));
                json_object_object_add(caps, client_capability_names[i], cap);
        }
        return caps;
}

static void init_backoff(struct server *s) {
        const struct server_config *c = s->config;

        backoff_init(&s->backoff, usec_from_seconds(c->restart_delay), usec_from_seconds(c->restart_delay_max),
                     60 * USEC_PER_SEC, c->start_limit_burst, usec_from_seconds(c->start_limit_interval));
}

/* Takes the settings a reload left waiting. The old ones may still be named by the last
 * run's connection and stderr reader, which are freed after this loop iteration: so are
 * they (supervisor_retire_config). */
static void adopt_next_config(struct server *s) {
        supervisor_retire_config(s->sv, s->config);
        s->config = TAKE_PTR(s->next_config);
        s->era_learned = MCP_ERA_UNKNOWN; /* another program, maybe: probed again */
        init_backoff(s);
}

/* A start that failed for the daemon's lack of descriptors or processes is retried with
 * backoff and does not count toward startLimitBurst: the server did nothing wrong. Warned
 * once per shortage; the state's cause says it meanwhile. */
static void spawn_short(struct server *s, int r, const char *error) {
        s->starts--;
        backoff_unstart(&s->backoff);
        if (!s->spawn_short)
                server_log(s, LOG_WARNING, "cannot start: %s; not counted toward startLimitBurst",
                           error ? error : strerror(-r));
        else
                server_log(s, LOG_DEBUG, "still cannot start: %s", strerror(-r));
        s->spawn_short = true;
}

/* The era a start speaks in: the configured one, else what an earlier run's probe found
 * (MCP_ERA_UNKNOWN: probe). */
static enum mcp_era era_to_speak(const struct server *s) {
        switch (s->config->protocol) {
        case SERVER_PROTOCOL_LEGACY: return MCP_ERA_LEGACY;
        case SERVER_PROTOCOL_MODERN: return MCP_ERA_MODERN;
        default: return s->era_learned;
        }
}

/* Its run ends (broken, exited, out of time) while the probe waits: a legacy server that
 * cannot bear an unknown method before initialize. Its next starts initialize at once
 * rather than end on the probe again. */
static void note_probe_end(struct server *s) {
        if (!handshake_probing(&s->handshake))
                return;
        s->era_learned = MCP_ERA_LEGACY;
        server_log(s, LOG_NOTICE, "its run ended on the server/discover probe: taken for a legacy server, "
                                  "initialized without the probe from its next start (set \"protocol\": \"legacy\" to say so)");
}

static void act_spawn(struct server *s, const char *detail) {
        _cleanup_free_ char *error = NULL;
        uint64_t number = supervisor_next_run(s->sv);
        char what[192];
        int r;

        if (s->next_config)
                adopt_next_config(s);
        s->queued = false; /* what was queued is done: this run has the newest settings */
        disarm_timer(s);
        s->starts++;
        backoff_started(&s->backoff, now_usec());
        s->stderr_from_last_run = false;
        s->refresh_pending = 0;
        r = run_start(s, number, &child_ops, &s->run, &error);
        if (r < 0) {
                s->run = NULL;
                server_cause_set(&s->why, SERVER_CAUSE_SPAWN, error);
                s->why.error = -r;
                if (transient_spawn_error(r))
                        spawn_short(s, r, error);
                if (permanent_spawn_error(r))
                        set_state_why(s, SERVER_FAILED);
                else
                        after_run(s, true);
                return;
        }
        server_log(s, s->spawn_short ? LOG_NOTICE : LOG_DEBUG, "started %s as %s (instance %" PRIu64 ")%s",
                   run_target(s->run), run_describe(s->run, what, sizeof what), number,
                   s->spawn_short ? " after the shortage" : "");
        s->spawn_short = false;
        set_state(s, SERVER_STARTING, detail);
        arm_timer(s, usec_from_seconds(s->config->start_timeout));
        if (s->run->child && handshake_start(&s->handshake, s->run->child, s->config->name, s->config->max_catalog_items,
                                           offered_capabilities(s), era_to_speak(s),
                                           usec_from_seconds(s->config->probe_timeout), s->sv->log, on_handshake, s) < 0)
                server_handle(s, SERVER_EV_BROKEN, "cannot send its first request");
}

static void act_spawn_fresh(struct server *s, const char *detail) {
        /* An operator's (or the config's) start forgets the restart history. */
        backoff_reset(&s->backoff);
        act_spawn(s, detail);
}

/* The lists whose changes a modern server says it tells of (listChanged), as LISTEN_*. */
static unsigned lists_to_hear(const struct server *s) {
        static const struct { const char *name; unsigned bit; } caps[] = {
                { "tools", LISTEN_TOOLS }, { "prompts", LISTEN_PROMPTS }, { "resources", LISTEN_RESOURCES },
        };
        unsigned lists = 0;

        for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
                json_object *cap = catalog_capability(&s->catalog, caps[i].name), *v;
                if (cap && json_object_object_get_ex(cap, "listChanged", &v) && json_object_get_boolean(v))
                        lists |= caps[i].bit;
        }
        return lists;
}

/* Over HTTP a listen holds one of the server's maxConnections for as long as it is open:
 * with one alone, it would hold back every call. */
static void start_listen(struct server *s) {
        if (s->config->remote.url && s->config->remote.max_connections < 2) {
                server_log(s, LOG_NOTICE, "not listening for its list changes and resource updates: "
                                          "subscriptions/listen would hold its one connection (maxConnections 1)");
                return;
        }
        server_listen_start(&s->listen, s->run->child, s->config->name, lists_to_hear(s));
}

static void act_ready(struct server *s, const char *detail) {
        char text[128];

        disarm_timer(s);
        s->era = s->handshake.era;
        if (s->config->protocol == SERVER_PROTOCOL_AUTO)
                s->era_learned = s->era;
        handshake_take(&s->handshake, &s->catalog);
        backoff_healthy(&s->backoff, now_usec());
        health_start(&s->health, s->run->child, s->era == MCP_ERA_MODERN, usec_from_seconds(s->config->health_interval),
                     usec_from_seconds(s->config->health_timeout));
        if (s->era == MCP_ERA_MODERN) /* it tells of changes only on a listen */
                start_listen(s);
        snprintf(text, sizeof text, "%zu tools, %zu prompts, %zu resources, %zu templates",
                 catalog_count(&s->catalog, CATALOG_TOOLS), catalog_count(&s->catalog, CATALOG_PROMPTS),
                 catalog_count(&s->catalog, CATALOG_RESOURCES), catalog_count(&s->catalog, CATALOG_TEMPLATES));
        set_state(s, SERVER_READY, text);
        supervisor_server_ready(s->sv, s);
        if (s->refresh_pending) /* it said its lists changed while starting */
                start_refresh(s);
}

/* Begins the close sequence for the cause in s->why; goal says what follows the exit. */
static void begin_stop(struct server *s, enum stop_goal goal) {
        char t[32];

        note_probe_end(s);
        handshake_cancel(&s->handshake);
        health_stop(&s->health);
        server_listen_stop(&s->listen);
        s->goal = goal;
        if (s->run->child)
                child_close_input(s->run->child);
        set_state_why(s, SERVER_STOPPING);
        server_log(s, LOG_DEBUG, "closed its %s; waiting %s for it to end", run_words_of(s->run)->input,
                   seconds(s->config->stop_timeout, t, sizeof t));
        arm_timer(s, usec_from_seconds(s->config->stop_timeout));
}

static void act_stop(struct server *s, const char *detail) {
        server_cause_set(&s->why, SERVER_CAUSE_REQUEST, detail ? detail : "stop requested");
        begin_stop(s, STOP_GOAL_STOPPED);
}

static void act_restart(struct server *s, const char *detail) {
        server_cause_set(&s->why, SERVER_CAUSE_REQUEST, detail ? detail : "restart requested");
        begin_stop(s, STOP_GOAL_RESTART);
}

/* The handshake failed. */
static void act_recover(struct server *s, const char *detail) {
        /* spec (versioning): the era kept across starts is found again once it fails */
        s->era_learned = MCP_ERA_UNKNOWN;
        server_cause_set(&s->why, SERVER_CAUSE_HANDSHAKE, detail);
        begin_stop(s, STOP_GOAL_RECOVER);
}

/* Closed stdout or stopped reading stdin: usually the first sign of an exit, so the exit
 * status decides whether it failed (a clean exit 0 is not a failure), unless it was still
 * starting. */
static void act_broken(struct server *s, const char *detail) {
        server_cause_set(&s->why, SERVER_CAUSE_CONNECTION, detail);
        begin_stop(s, s->state == SERVER_STARTING ? STOP_GOAL_RECOVER : STOP_GOAL_EXIT_DECIDES);
}

/* It wrote what leaves its stdout unusable: the run ends as a failure, however it exits. */
static void act_violation(struct server *s, const char *detail) {
        server_cause_set(&s->why, SERVER_CAUSE_PROTOCOL, detail);
        begin_stop(s, STOP_GOAL_RECOVER);
}

static void act_start_timeout(struct server *s, const char *detail) {
        server_cause_set(&s->why, SERVER_CAUSE_START_TIMEOUT, NULL);
        s->why.timeout = s->config->start_timeout;
        begin_stop(s, STOP_GOAL_RECOVER);
}

static void act_ping_ok(struct server *s, const char *detail) {
        backoff_healthy(&s->backoff, now_usec());
        if (s->state == SERVER_UNHEALTHY)
                set_state(s, SERVER_READY, "answering pings again");
}

static void act_ping_failed(struct server *s, const char *detail) {
        char cause[128];

        if (s->health.failures >= s->config->health_failures) {
                server_cause_set(&s->why, SERVER_CAUSE_HEALTH, detail);
                s->why.failures = s->health.failures;
                begin_stop(s, STOP_GOAL_RECOVER);
                return;
        }
        snprintf(cause, sizeof cause, "health check failed (%u of %u): %s", s->health.failures,
                 s->config->health_failures, detail);
        set_state(s, SERVER_UNHEALTHY, cause);
}

/* stopTimeout passed since its input was closed: the launcher's terminate (SIGTERM), and
 * killTimeout for it. Each step is logged in the launcher's words. */
static void act_terminate(struct server *s, const char *detail) {
        const struct run_words *w = run_words_of(s->run);
        char t[32];

        server_log(s, LOG_NOTICE, "still running %s after its %s was closed; %s",
                   seconds(s->config->stop_timeout, t, sizeof t), w->input, w->terminate);
        next_stop_stage(s, SERVER_STOP_TERM);
        (void)run_terminate(s->run);
        arm_timer(s, usec_from_seconds(s->config->kill_timeout));
}

/* killTimeout passed since terminate: the launcher's kill (SIGKILL), after which the end is near. */
static void act_kill(struct server *s, const char *detail) {
        const struct run_words *w = run_words_of(s->run);
        char t[32];

        server_log(s, LOG_WARNING, "still running %s after %s; %s", seconds(s->config->kill_timeout, t, sizeof t),
                   w->terminated, w->kill);
        next_stop_stage(s, SERVER_STOP_KILL);
        (void)run_kill(s->run);
        arm_timer(s, KILL_WAIT_USEC);
}

/* No end KILL_WAIT_USEC after kill: said, and kill again. */
static void act_kill_again(struct server *s, const char *detail) {
        const struct run_words *w = run_words_of(s->run);
        char what[192];

        server_log(s, LOG_ERR, "%s has not ended after %s%s", run_describe(s->run, what, sizeof what), w->killed,
                   w->stuck);
        (void)run_kill(s->run);
        arm_timer(s, KILL_WAIT_USEC);
}

/* The process is gone: retire it, remember how it ended and its last words. */
static void end_run(struct server *s) {
        struct run *in = s->run;

        disarm_timer(s);
        note_probe_end(s);
        handshake_cancel(&s->handshake);
        health_stop(&s->health);
        server_listen_stop(&s->listen);
        run_describe_end(in, &s->last_exit);
        if (s->state == SERVER_STOP_TERM || s->state == SERVER_STOP_KILL) {
                /* the stop steps' signals, as its launcher sends them: kill comes after terminate */
                const struct run_words *w = run_words_of(in);

                s->last_exit.signal_sent = s->state == SERVER_STOP_TERM ? w->terminate_signal : w->kill_signal;
                s->last_exit.stop_timeout = s->config->stop_timeout;
                s->last_exit.kill_timeout = s->config->kill_timeout;
        }
        server_exit_copy(&s->why.exit, &s->last_exit);
        s->run = NULL;
        run_retire(in, &s->sv->retired); /* reads what is left of its stderr */
        s->stderr_from_last_run = in->err.last[0] != '\0';
        if (s->stderr_from_last_run) {
                memcpy(s->last_stderr, in->err.last, sizeof s->last_stderr);
                s->last_stderr_at = in->err.last_at;
        }
        s->sv->scan_due = true;
}

/* A run ended on its own or after a failure (s->why says how): the restart policy and
 * throttle decide. The cause is logged with what follows and the server's last stderr line. */
static void after_run(struct server *s, bool failure) {
        const struct server_config *c = s->config;
        bool restart = c->restart == RESTART_ALWAYS || (c->restart == RESTART_ON_FAILURE && failure);
        _cleanup_free_ char *cause = server_cause_text(&s->why), *text = NULL, *note = NULL;
        char next[96] = "";
        enum server_state state;
        uint64_t now = now_usec(), delay = 0;

        if (s->sv->stopping || !restart || (failure && s->why.exit.no_retry)) {
                state = failure && !s->sv->stopping ? SERVER_FAILED : SERVER_STOPPED;
        } else if (backoff_limit_hit(&s->backoff, now)) {
                state = SERVER_FAILED;
                snprintf(next, sizeof next, "; started %u times within %g s, giving up (startLimitBurst)",
                         s->backoff.burst, c->start_limit_interval);
        } else {
                state = SERVER_BACKOFF;
                delay = backoff_next_delay(&s->backoff, now);
                snprintf(next, sizeof next, "; restarting in %g s", (double)delay / (double)USEC_PER_SEC);
        }
        if (asprintf(&text, "%s%s", cause ? cause : "", next) < 0)
                text = NULL;
        if (s->stderr_from_last_run && asprintf(&note, "; last stderr line: %s", s->last_stderr) < 0)
                note = NULL;
        change_state(s, state, text, note);
        if (state == SERVER_BACKOFF) {
                s->restart_at = now + delay;
                arm_timer(s, delay);
        }
}

static void act_exited(struct server *s, const char *detail) {
        bool starting = s->state == SERVER_STARTING;

        server_cause_set(&s->why, SERVER_CAUSE_EXIT, NULL);
        s->why.starting = starting;
        end_run(s);
        after_run(s, !server_exit_clean(&s->last_exit) || starting);
}

static void act_stopped(struct server *s, const char *detail) {
        end_run(s);
        switch (s->goal) {
        case STOP_GOAL_STOPPED:
                set_state_why(s, SERVER_STOPPED);
                break;
        case STOP_GOAL_RESTART:
                if (s->sv->stopping)
                        set_state_why(s, SERVER_STOPPED);
                else
                        act_spawn_fresh(s, "restarted on request");
                break;
        case STOP_GOAL_RECOVER:
                after_run(s, true);
                break;
        case STOP_GOAL_EXIT_DECIDES:
                after_run(s, !server_exit_clean(&s->last_exit));
                break;
        }
}

static void act_want_stop(struct server *s, const char *detail) {
        s->goal = STOP_GOAL_STOPPED;
        server_cause_set(&s->why, SERVER_CAUSE_REQUEST, detail ? detail : "stop requested");
}

static void act_want_restart(struct server *s, const char *detail) {
        s->goal = STOP_GOAL_RESTART;
}

static void act_to_stopped(struct server *s, const char *detail) {
        disarm_timer(s);
        set_state(s, SERVER_STOPPED, detail ? detail : "stop requested");
}

/* The stop stages (a run being closed; begin_stop ended its handshake and health checks):
 * its exit is awaited; a start, stop or restart only changes what follows it; the timer
 * moves to the next stage. */
#define CLOSING_ROW(on_timer)                                                                          \
        {                                                                                              \
                [SERVER_EV_START] = act_want_restart, [SERVER_EV_STOP] = act_want_stop,                \
                [SERVER_EV_RESTART] = act_want_restart,                                                \
                [SERVER_EV_READY] = act_no_handshake, [SERVER_EV_START_FAILED] = act_no_handshake,     \
                [SERVER_EV_PING_OK] = act_no_health, [SERVER_EV_PING_FAILED] = act_no_health,          \
                [SERVER_EV_BROKEN] = act_ignore_closing, [SERVER_EV_VIOLATION] = act_ignore_closing,   \
                [SERVER_EV_EXITED] = act_stopped, [SERVER_EV_TIMER] = (on_timer),                      \
        }

/* Rows: states; columns: events. Every transition of a server is in this table, and every
 * cell is written: what an event means in a state, that it asks for nothing there, or that
 * it cannot arrive there (act_no_*). */
static const server_action actions[SERVER_STATE_COUNT][SERVER_EV_COUNT] = {
        /* no run, no deadline: only an operator's or the config's word moves it */
        [SERVER_STOPPED] = {
                [SERVER_EV_START] = act_spawn_fresh, [SERVER_EV_RESTART] = act_spawn_fresh,
                [SERVER_EV_STOP] = act_to_stopped, /* one waiting for its first start: says who stopped it */
                [SERVER_EV_READY] = act_no_handshake, [SERVER_EV_START_FAILED] = act_no_handshake,
                [SERVER_EV_PING_OK] = act_no_health, [SERVER_EV_PING_FAILED] = act_no_health,
                [SERVER_EV_BROKEN] = act_no_run, [SERVER_EV_VIOLATION] = act_no_run,
                [SERVER_EV_EXITED] = act_no_run,
                [SERVER_EV_TIMER] = act_no_deadline,
        },
        /* a run doing its handshake, within startTimeout; no health checks yet */
        [SERVER_STARTING] = {
                [SERVER_EV_START] = act_already_running,
                [SERVER_EV_STOP] = act_stop, [SERVER_EV_RESTART] = act_restart,
                [SERVER_EV_READY] = act_ready, [SERVER_EV_START_FAILED] = act_recover,
                [SERVER_EV_PING_OK] = act_no_health, [SERVER_EV_PING_FAILED] = act_no_health,
                [SERVER_EV_BROKEN] = act_broken, [SERVER_EV_VIOLATION] = act_violation,
                [SERVER_EV_EXITED] = act_exited,
                [SERVER_EV_TIMER] = act_start_timeout,
        },
        /* serving, pinged every healthInterval; no deadline of the state's own */
        [SERVER_READY] = {
                [SERVER_EV_START] = act_already_running,
                [SERVER_EV_STOP] = act_stop, [SERVER_EV_RESTART] = act_restart,
                [SERVER_EV_READY] = act_no_handshake, [SERVER_EV_START_FAILED] = act_no_handshake,
                [SERVER_EV_PING_OK] = act_ping_ok, [SERVER_EV_PING_FAILED] = act_ping_failed,
                [SERVER_EV_BROKEN] = act_broken, [SERVER_EV_VIOLATION] = act_violation,
                [SERVER_EV_EXITED] = act_exited,
                [SERVER_EV_TIMER] = act_no_deadline,
        },
        /* still serving, with pings failing: as ready */
        [SERVER_UNHEALTHY] = {
                [SERVER_EV_START] = act_already_running,
                [SERVER_EV_STOP] = act_stop, [SERVER_EV_RESTART] = act_restart,
                [SERVER_EV_READY] = act_no_handshake, [SERVER_EV_START_FAILED] = act_no_handshake,
                [SERVER_EV_PING_OK] = act_ping_ok, [SERVER_EV_PING_FAILED] = act_ping_failed,
                [SERVER_EV_BROKEN] = act_broken, [SERVER_EV_VIOLATION] = act_violation,
                [SERVER_EV_EXITED] = act_exited,
                [SERVER_EV_TIMER] = act_no_deadline,
        },
        [SERVER_STOPPING] = CLOSING_ROW(act_terminate),
        [SERVER_STOP_TERM] = CLOSING_ROW(act_kill),
        [SERVER_STOP_KILL] = CLOSING_ROW(act_kill_again),
        /* no run; the timer is the restart */
        [SERVER_BACKOFF] = {
                [SERVER_EV_START] = act_spawn_fresh, [SERVER_EV_STOP] = act_to_stopped,
                [SERVER_EV_RESTART] = act_spawn_fresh,
                [SERVER_EV_READY] = act_no_handshake, [SERVER_EV_START_FAILED] = act_no_handshake,
                [SERVER_EV_PING_OK] = act_no_health, [SERVER_EV_PING_FAILED] = act_no_health,
                [SERVER_EV_BROKEN] = act_no_run, [SERVER_EV_VIOLATION] = act_no_run,
                [SERVER_EV_EXITED] = act_no_run,
                [SERVER_EV_TIMER] = act_spawn,
        },
        /* no run, no deadline: as stopped, until an operator or a reload starts it */
        [SERVER_FAILED] = {
                [SERVER_EV_START] = act_spawn_fresh, [SERVER_EV_STOP] = act_to_stopped,
                [SERVER_EV_RESTART] = act_spawn_fresh,
                [SERVER_EV_READY] = act_no_handshake, [SERVER_EV_START_FAILED] = act_no_handshake,
                [SERVER_EV_PING_OK] = act_no_health, [SERVER_EV_PING_FAILED] = act_no_health,
                [SERVER_EV_BROKEN] = act_no_run, [SERVER_EV_VIOLATION] = act_no_run,
                [SERVER_EV_EXITED] = act_no_run,
                [SERVER_EV_TIMER] = act_no_deadline,
        },
};

void server_handle(struct server *s, enum server_event ev, const char *detail) {
        server_action action = actions[s->state][ev];

        /* A decision about the server replaces what was queued for it; events of its run
         * (an exit, a ping) do not: a restart queued by a reload still comes. */
        if (ev == SERVER_EV_START || ev == SERVER_EV_STOP || ev == SERVER_EV_RESTART)
                s->queued = false;
        action(s, detail);
}

/* ---- inputs ---- */

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        server_handle(userdata, SERVER_EV_TIMER, NULL);
}

static void on_health(int status, void *userdata) {
        struct server *s = userdata;
        char why[96];

        if (status == 0) {
                server_handle(s, SERVER_EV_PING_OK, NULL);
                return;
        }
        if (status == -ETIMEDOUT)
                snprintf(why, sizeof why, "no answer to %s within healthTimeout (%g s)", s->health.method,
                         s->config->health_timeout);
        else if (status == -EPROTO)
                snprintf(why, sizeof why, "%s answered with an error", s->health.method);
        else
                snprintf(why, sizeof why, "connection closed");
        server_handle(s, SERVER_EV_PING_FAILED, why);
}

static void on_child_broken(struct child *ch, const char *why, bool violation, void *userdata) {
        server_handle(userdata, violation ? SERVER_EV_VIOLATION : SERVER_EV_BROKEN, why);
}

static void on_refreshed(int r, const char *why, void *userdata) {
        struct server *s = userdata;

        if (r < 0) {
                server_log(s, LOG_WARNING, "could not fetch its changed lists: %s", why);
                return;
        }
        handshake_take(&s->handshake, &s->catalog);
        if (server_state_listed(s->state))
                supervisor_server_changed(s->sv, s, CATALOG_ALL_KINDS, true);
        else
                supervisor_server_changed(s->sv, s, 0, false);
        if (s->refresh_pending)
                start_refresh(s);
}

static void start_refresh(struct server *s) {
        unsigned kinds = s->refresh_pending;

        s->refresh_pending = 0;
        if (handshake_refresh(&s->handshake, s->run->child, &s->catalog, kinds, s->config->name,
                              s->config->max_catalog_items, s->sv->log, on_refreshed, s) < 0)
                server_log(s, LOG_WARNING, "cannot ask for its changed lists");
}

/* notifications/{tools,prompts,resources}/list_changed: fetch those lists again; changes
 * that come while a fetch runs are coalesced into one more. */
static bool refresh_lists(struct server *s, const char *method) {
        static const struct { const char *method; unsigned kinds; } map[] = {
                { "notifications/tools/list_changed", 1u << CATALOG_TOOLS },
                { "notifications/prompts/list_changed", 1u << CATALOG_PROMPTS },
                { "notifications/resources/list_changed", (1u << CATALOG_RESOURCES) | (1u << CATALOG_TEMPLATES) },
        };

        for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
                if (strcmp(method, map[i].method) != 0)
                        continue;
                s->refresh_pending |= map[i].kinds;
                if (server_serving(s) && !s->handshake.running)
                        start_refresh(s);
                return true;
        }
        return false;
}

/* Requests from the server to its client are answered here until routing can forward them. */
static void on_child_message(struct child *ch, struct jsonrpc_msg *m, void *userdata) {
        struct server *s = userdata;

        if (m->kind == JSONRPC_REQUEST) {
                if (strcmp(m->method, "ping") == 0)
                        child_send(ch, jsonrpc_result(m->id, json_object_new_object()));
                else if (s->run && s->run->child == ch)
                        supervisor_server_request(s->sv, s, m);
                else /* a connection being retired: nobody will answer for it */
                        child_send(ch, jsonrpc_error(m->id, JSONRPC_INTERNAL_ERROR, "the server is being stopped", NULL));
                return;
        }
        if (!server_listen_notification(&s->listen, m) && !refresh_lists(s, m->method))
                supervisor_server_notification(s->sv, s, m);
}

/* Its process was sent notifications/initialized, after which it may be notified. */
static bool initialized(const struct server *s) {
        return server_serving(s) || (s->state == SERVER_STARTING && handshake_initialized(&s->handshake));
}

/* Its roots changed, and it has some: a process keeps running and is told to ask for them
 * again; one that has not started yet asks when it does. */
static void change_roots(struct server *s, struct server_config *next) {
        roots_move(&s->config->roots, &next->roots);
        if (!initialized(s) || s->era == MCP_ERA_MODERN) { /* the modern era has no roots/list_changed */
                server_log(s, LOG_INFO, "roots changed; it gets them at its next roots/list");
                return;
        }
        server_log(s, LOG_INFO, "roots changed; sent notifications/roots/list_changed instead of restarting it");
        (void)child_notify(s->run->child, "notifications/roots/list_changed", NULL);
}

/* Only what can change while it runs changed (server_config_changes_live). The filters are
 * read by the registry, which the reload marks out of date: clients see the new view at
 * their next read and hear list_changed when theirs differs. */
static void change_live(struct server *s, struct server_config *next) {
        if (!roots_equal(&s->config->roots, &next->roots))
                change_roots(s, next);
        if (!item_filter_equal(&s->config->filter, &next->filter)) {
                item_filter_move(&s->config->filter, &next->filter);
                server_log(s, LOG_INFO, "tool and prompt filters changed; applied without restarting it");
        }
        server_config_free(next);
}

void server_reconfigure(struct server *s, struct server_config *next) {
        bool was_disabled = s->config->disabled;

        if (!s->next_config && server_config_changes_live(s->config, next)) {
                change_live(s, next);
                return;
        }
        server_config_free(s->next_config);
        s->next_config = next;
        if (server_running(s)) {
                /* Taken at the restart, or once stopped (server_adopt_pending). The restart
                 * waits for its turn, so that a reload that changes 1,000 servers does not
                 * close every one's stdin in its callback while clients wait. */
                if (next->disabled)
                        server_handle(s, SERVER_EV_STOP, "disabled in the configuration");
                else
                        supervisor_queue(s->sv, s, SERVER_EV_RESTART, "configuration changed");
                return;
        }
        adopt_next_config(s);
        if (s->config->disabled) {
                server_handle(s, SERVER_EV_STOP, "disabled in the configuration");
                server_mark_disabled(s);
        } else if (s->state != SERVER_STOPPED || was_disabled) /* an operator's stop stands */
                supervisor_queue(s->sv, s, SERVER_EV_START, "configuration changed");
}

void server_mark_disabled(struct server *s) {
        replace_cause(s, "disabled in the configuration");
}

void server_queue(struct server *s, enum server_event ev, const char *detail) {
        s->queued = true;
        s->queued_event = ev;
        s->queued_detail = detail;
        if (!server_running(s))
                replace_cause(s, "waiting for its turn to start");
}

bool server_waits_turn(const struct server *s) {
        return s->queued && !server_running(s);
}

void server_adopt_pending(struct server *s) {
        if (s->next_config && !server_running(s))
                adopt_next_config(s);
}

struct server *server_new(struct supervisor *sv, struct server_config *config) {
        struct server *s = calloc(1, sizeof *s);

        if (!s) {
                server_config_free(config);
                return NULL;
        }
        s->sv = sv;
        s->config = config;
        s->state = SERVER_STOPPED;
        s->state_since = now_usec();
        s->log_level_sent = -1;
        handshake_init(&s->handshake);
        catalog_init(&s->catalog);
        route_owners_init(&s->owners);
        init_backoff(s);
        s->timer = evtimer_new(sv->base, on_timer, s);
        if (s->timer) /* a restart after backoff spawns (process.h) */
                (void)event_priority_set(s->timer, EVENT_PRIORITY_SPAWN);
        if (!s->timer || health_init(&s->health, sv->base, on_health, s) < 0 ||
            server_listen_init(&s->listen, sv->base, sv->log) < 0) {
                server_free(s);
                return NULL;
        }
        return s;
}

void server_free(struct server *s) {
        if (!s)
                return;
        handshake_done(&s->handshake);
        health_done(&s->health);
        server_listen_done(&s->listen);
        if (s->run)
                run_free(s->run);
        route_owners_done(&s->owners);
        catalog_done(&s->catalog);
        line_ring_done(&s->stderr_lines);
        if (s->timer)
                event_free(s->timer);
        server_config_free(s->config);
        server_config_free(s->next_config);
        server_cause_done(&s->why);
        server_exit_done(&s->last_exit);
        free(s->cause);
        free(s);
}

/* The router's calls: a call is counted in owners from its start until its client stops
 * waiting (owned) or until it ends (abandoned), unless its run ends first (lost). */
int server_route_added(struct server *s, uint64_t client_number, struct client *c) {
        int r = route_owners_add(&s->owners, client_number, c);

        if (r >= 0) {
                s->in_flight++;
                s->calls++;
        }
        return r;
}

void server_route_detached(struct server *s, uint64_t client_number, struct client *c) {
        route_owners_drop(&s->owners, client_number, c);
}

int server_route_attached(struct server *s, uint64_t client_number, struct client *c) {
        return route_owners_add(&s->owners, client_number, c);
}

int server_route_abandoned(struct server *s, uid_t uid) {
        int r = route_owners_abandon(&s->owners, uid);

        if (r >= 0) {
                s->in_flight--;
                s->abandoned++;
        }
        return r;
}

void server_route_lost(struct server *s, uint64_t client_number, uid_t uid, struct client *c, bool abandoned) {
        if (abandoned)
                route_owners_end(&s->owners, uid);
        else if (c)
                route_owners_drop(&s->owners, client_number, c);
}

void server_route_freed(struct server *s, uint64_t client_number, uid_t uid, struct client *c, bool abandoned, bool lost) {
        if (!lost)
                server_route_lost(s, client_number, uid, c, abandoned);
        if (abandoned)
                s->abandoned--;
        else
                s->in_flight--;
}

unsigned server_route_owners(const struct server *s, struct client **ret) {
        void *owner;
        unsigned n = route_owners_sole(&s->owners, &owner);

        *ret = owner;
        return n;
}

bool server_abandoned_by_other(const struct server *s, uid_t uid) {
        return route_owners_abandoned_by_other(&s->owners, uid);
}
