/* One configured server under supervision: a state machine driven by a state x event
 * table (server.c), with one timer for the deadline of the current state.
 *
 *   stopped --start--> starting --handshake done--> ready <--ping ok-- unhealthy
 *   ready --ping failed--> unhealthy --healthFailures in a row--> stopping (restart)
 *   starting/ready/unhealthy --exit--> backoff --delay--> starting
 *                                  \--> failed (start limit, or restart policy says no)
 *   any running state --stop--> stopping --exit--> stopped
 *
 * Stopping is the MCP stdio close, a state per stage (systemd's stop-sigterm and
 * stop-sigkill), all shown as "stopping":
 *
 *   stopping (its input closed) --stopTimeout--> stop-term (the launcher's terminate:
 *   SIGTERM to the process group) --killTimeout--> stop-kill (its kill: SIGKILL, again
 *   every 10 s until the end). Each step is logged in the launcher's words (launcher.h). */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "backoff.h"
#include "catalog.h"
#include "handshake.h"
#include "health.h"
#include "macro.h"
#include "rate-limit.h"
#include "route-owners.h"
#include "server-cause.h"
#include "server-config.h"
#include "server-listen.h"
#include "stderr-reader.h"

struct child;
struct client;
struct pool;
struct supervisor;
struct run;
struct run_as;
struct event;

enum server_state {
        SERVER_STOPPED,
        SERVER_STARTING,
        SERVER_READY,
        SERVER_UNHEALTHY,
        SERVER_STOPPING,   /* its input closed (stdin, session), waiting stopTimeout for its end */
        SERVER_STOP_TERM,  /* its launcher's terminate done (SIGTERM), waiting killTimeout */
        SERVER_STOP_KILL,  /* its launcher's kill done (SIGKILL), waiting for the end */
        SERVER_BACKOFF,
        SERVER_FAILED,
        SERVER_STATE_COUNT,
};

enum server_event {
        SERVER_EV_START,        /* start it (config, operator) */
        SERVER_EV_STOP,         /* stop it and keep it stopped */
        SERVER_EV_RESTART,      /* operator's restart */
        SERVER_EV_READY,        /* handshake complete */
        SERVER_EV_START_FAILED, /* handshake failed */
        SERVER_EV_PING_OK,
        SERVER_EV_PING_FAILED,
        SERVER_EV_BROKEN,       /* closed its stdout or stopped reading its stdin */
        SERVER_EV_VIOLATION,    /* wrote what leaves its stdout unusable (server-conn.h) */
        SERVER_EV_EXITED,       /* the process was reaped */
        SERVER_EV_TIMER,        /* the current state's deadline passed */
        SERVER_EV_COUNT,
};

/* What a stop leads to once its run is gone: data, not state. The stop stages are the
 * states; a stop or restart asked while stopping changes only this. */
enum stop_goal {
        STOP_GOAL_STOPPED,      /* it stays stopped */
        STOP_GOAL_RESTART,      /* it starts again at once, its restart history forgotten */
        STOP_GOAL_RECOVER,      /* the run failed: the restart policy and throttle decide */
        STOP_GOAL_EXIT_DECIDES, /* as recover, its exit status saying whether the run failed */
};

/* Whom a server serves: everyone (a shared server), one user, one client, or nobody yet (a
 * spare of its pool, started and initialized, handed to the next owner). Data, not a
 * kind: who may hear from it is decided in one place (client-access.h). */
enum owner_kind { OWNER_NONE, OWNER_USER, OWNER_CLIENT, OWNER_SPARE };

struct server_owner {
        enum owner_kind kind;
        uid_t uid;              /* OWNER_USER */
        uint64_t client_id;     /* OWNER_CLIENT: struct client's id */
};

struct server {
        struct supervisor *sv;
        struct server_owner owner;     /* OWNER_NONE: a shared server */
        struct pool *pool;             /* the pool of an instance (pool.h), NULL for a shared server */
        struct server_config *config;  /* owned */
        struct server_config *next_config; /* a reload's, taken at the next start; owned */
        /* The user its runs run as (run-as.h): NULL for the daemon's own. Set by whoever
         * makes the server, before its first start, and not changed while it runs; not
         * owned (its maker frees it after server_free()). Each launcher reads it at every
         * start, and refuses a user this daemon cannot run (run_as_check()). */
        const struct run_as *run_as;
        enum server_state state;
        uint64_t state_since;          /* usec, monotonic */
        char *cause;                   /* why it is in this state: "exit status 1; restarting in 1 s" */
        struct server_cause why;       /* why the last run ended, or why it is being stopped */
        enum stop_goal goal;           /* while stopping: what follows the exit */
        struct run *run;          /* the current process, NULL when none */
        struct handshake handshake;
        struct health health;
        struct server_listen listen;   /* a modern server's subscriptions/listen (server-listen.h) */
        struct catalog catalog;        /* from the last complete handshake */
        enum mcp_era era;              /* what its last complete handshake spoke in (handshake.h) */
        /* "protocol": "auto": what the probe found, kept for the next starts of the same
         * settings (a server that ended on the probe is not probed again), forgotten when
         * a start in that era fails; MCP_ERA_UNKNOWN: probe at the next start */
        enum mcp_era era_learned;
        unsigned refresh_pending;      /* lists it said changed, to fetch again */
        struct backoff backoff;
        struct event *timer;
        unsigned starts;               /* restarts are starts - 1 */
        bool spawn_short;              /* starts fail for lack of descriptors or processes: warned once */
        struct server_exit last_exit;  /* how its last process ended; code 0 if none has */
        uint64_t restart_at;           /* backoff: when the next start is due (usec, monotonic) */
        char last_stderr[STDERR_LAST_MAX]; /* the last line an ended run wrote to stderr, "" if none */
        uint64_t last_stderr_at;       /* when it was written (usec, monotonic) */
        bool stderr_from_last_run;     /* that line is the last run's, not an earlier one's */
        struct line_ring stderr_lines; /* the last lines its runs wrote to stderr (stderr-reader.c's) */
        bool removed;                  /* a reload removed it: stopping, then freed */
        /* mcp-logging.c's, which alone writes them after server_new(): */
        int log_level_sent;            /* logging/setLevel sent to its current run; -1: none */
        struct rate_limit log_messages; /* its notifications/message logged */
        bool queued;                   /* queued_event waits for its turn in the supervisor's
                                        * start queue (supervisor_queue()); a start, stop or
                                        * restart, or a spawn, takes it off */
        enum server_event queued_event; /* SERVER_EV_START or SERVER_EV_RESTART */
        const char *queued_detail;     /* its detail, a string literal */
        unsigned in_flight;            /* clients' requests forwarded and not answered */
        uint64_t calls;                /* clients' requests forwarded so far */
        unsigned abandoned;            /* calls given up that may still run there */
        struct route_owners owners;    /* whose those calls are (server_route_*()) */
};

/* What router.c tells of its calls to s, counted here (in_flight, abandoned, owners).
 * Added and abandoned return -ENOMEM when the call cannot be counted. A call is lost when
 * its run ended before it was answered; detached when its client stops waiting. */
int server_route_added(struct server *s, uint64_t client_number, struct client *c);
void server_route_detached(struct server *s, uint64_t client_number, struct client *c);
/* A detached call that another client takes over (a modern client's retry). */
int server_route_attached(struct server *s, uint64_t client_number, struct client *c);
/* A given-up call is counted by its client's user (uid), not by its client. */
int server_route_abandoned(struct server *s, uid_t uid);
void server_route_lost(struct server *s, uint64_t client_number, uid_t uid, struct client *c, bool abandoned);
void server_route_freed(struct server *s, uint64_t client_number, uid_t uid, struct client *c, bool abandoned, bool lost);
/* How many clients wait for calls to s; with one, that client in *ret. */
unsigned server_route_owners(const struct server *s, struct client **ret);
/* Whether a call to s given up by a user other than uid may still run. */
bool server_abandoned_by_other(const struct server *s, uid_t uid);

/* Takes ownership of config (heap, see server_config_take()). */
struct server *server_new(struct supervisor *sv, struct server_config *config);
void server_free(struct server *s);

/* Feeds one event through the table; detail explains it ("closed its stdout", ...). */
void server_handle(struct server *s, enum server_event ev, const char *detail);

/* What users see (status, logs): the stop stages are all "stopping". */
const char *server_state_name(enum server_state state);
/* Closing its run, at any stage: what users see as "stopping". */
bool server_stopping(const struct server *s);
/* Its catalog is what clients see of it (the registry lists it): ready, or unhealthy but running. */
bool server_state_listed(enum server_state state);
/* Has a process (or one being closed). */
bool server_running(const struct server *s);
/* The MCP connection of its current process; NULL when it has none. */
struct child *server_child(const struct server *s);
/* The number of its current run (run.h); 0 when it has none. */
uint64_t server_run_number(const struct server *s);
/* The connection of run number, if that run is still its current one; else NULL (the
 * run ended, and what was sent on it is answered there no more). */
struct child *server_run_child(const struct server *s, uint64_t number);

/* The prefix of its exposed names: "prefix" when configured ("" for none), else its name. */
const char *server_prefix(const struct server *s);

/* Serving: ready, or unhealthy but still running and answering calls. */
bool server_serving(const struct server *s);
/* The client capabilities (bits of enum client_capability) a request made for a client
 * declaring client_caps offers the server: those the client can answer, and roots
 * whenever the server has roots configured (the daemon answers them itself). */
unsigned server_caps_for(const struct server *s, unsigned client_caps);
/* The daemon's subscription to a resource at a serving server begins (on) or ends: a
 * legacy server is sent resources/subscribe or resources/unsubscribe, a modern one's
 * subscriptions/listen is replaced by one whose resourceSubscriptions say so. Nothing
 * while it is not serving (its subscriptions are told again when it is ready). */
void server_resource_subscription(struct server *s, const char *uri, bool on);
/* Why it is in its state, as logged when it got there ("" for nothing to say). */
const char *server_state_cause(const struct server *s);
/* The same, as of now: in backoff, how long until the restart ("exit status 1; restarting
 * in 1.2 s"). Malloc'd; NULL when out of memory. */
char *server_cause_now(const struct server *s);
/* "backoff: exit status 1; restarting in 1.2 s" style text of where the server is, for the
 * errors of calls that cannot reach it. Malloc'd; NULL when out of memory. */
char *server_describe(const struct server *s);
/* The last line its processes wrote to stderr (the running one's, else an earlier one's),
 * with when it was written (usec, monotonic) in *ret_at; NULL when none wrote any. */
const char *server_last_stderr(const struct server *s, uint64_t *ret_at);

/* A reload changed its settings (next is taken over): a server without a process takes
 * them at once and starts unless disabled; a running one restarts with them, or stops
 * when they disable it. A change of its roots alone, from some to others, is taken at
 * once and nothing else changes: a running process is sent
 * notifications/roots/list_changed. */
void server_reconfigure(struct server *s, struct server_config *next);
/* A server left stopped because its entry is disabled: its cause says so. */
void server_mark_disabled(struct server *s);
/* ev (SERVER_EV_START or SERVER_EV_RESTART, detail a string literal) is fed to s on a later
 * loop turn, by the supervisor's start queue (supervisor_queue()); a stopped server's cause
 * says it waits for its turn. */
void server_queue(struct server *s, enum server_event ev, const char *detail);
/* Queued, and not running: it waits for its turn to start (STATUS=, list requests). */
bool server_waits_turn(const struct server *s);
/* Between loop iterations: a stopped server takes settings still waiting for it. */
void server_adopt_pending(struct server *s);

/* Logging about this server: MCPVISOR_SERVER= set. */
void server_log(const struct server *s, int priority, const char *fmt, ...) _printf_(3, 4);
