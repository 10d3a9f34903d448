/* All configured servers: starting them, stopping them all in parallel, the STATUS= line
 * about them, and the bookkeeping between loop iterations (retired runs freed,
 * processes left behind by gone servers ended through the reaper). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "run.h"
#include "reaper.h"
#include "server.h"

struct event_base;
struct logger;
struct jsonrpc_msg;

/* What the rest of the daemon hears from the servers. */
struct supervisor_ops {
        /* A server changed state (or its catalog); kinds (1 << catalog kind) are the lists
         * whose client-visible contents may have changed with it, 0 if none; dropped: what
         * they held of it is gone (it left them, or its catalog was replaced). s is the
         * server, NULL for any (a reload); an instance changes only its owners' lists. */
        void (*changed)(const struct server *s, unsigned kinds, bool dropped, void *userdata);
        /* A notification from a server's process (progress, list changes, log messages...). */
        void (*notification)(struct server *s, struct jsonrpc_msg *m, void *userdata);
        /* A request from a server's process (other than ping), to be answered exactly once. */
        void (*request)(struct server *s, struct jsonrpc_msg *m, void *userdata);
        /* A server finished its handshake (after a start or restart). */
        void (*ready)(struct server *s, void *userdata);
        /* A server removed by a reload is about to be freed: forget it. */
        void (*removed)(struct server *s, void *userdata);
};
struct jsonrpc_parser;
struct config;
struct pool;

struct supervisor {
        struct event_base *base;
        const struct logger *log;
        struct jsonrpc_parser *parser;
        size_t max_server_message_size;    /* "maxServerMessageSize": a line from a server */
        size_t server_input_limit;         /* "serverInputLimit": unsent bytes toward a server */
        const char *credentials_dir;       /* $CREDENTIALS_DIRECTORY, or NULL */
        char **daemon_env;                 /* the daemon's environ, read-only */
        char *daemon_id;                   /* MCPVISOR_DAEMON for servers, or NULL */
        void *launcher_parts[RUN_LAUNCHERS]; /* each launcher's daemon-wide part (launcher.h), or NULL */
        int launcher_auto;                 /* what "auto" is here: LAUNCHER_SYSTEMD or LAUNCHER_EXEC */
        struct server **servers;           /* in config order; then instances (pool.h) and removed
                                            * ones until they stop */
        size_t n_servers;
        struct server **shared;            /* supervisor_shared()'s answer */
        struct pool **pools;               /* the entries run as instances, in config order */
        size_t n_pools;
        struct server_config **retired_configs; /* replaced by a reload; freed after the iteration */
        size_t n_retired_configs;
        struct run_list retired;
        uint64_t next_run;
        struct reaper reaper;
        bool scan_due;                     /* look for left-behind processes next iteration */
        bool stopping;                     /* daemon shutdown: no restarts */
        struct event *start_turn;          /* starts queued servers, a few a loop turn */
        size_t start_from;                 /* where in servers the next turn looks */
        struct oauth_tokens *tokens;       /* the sign-in tokens (oauth-tokens.h): supervisor_tokens() */
        const struct supervisor_ops *ops;
        void *userdata;
};

/* What the reaper asks of the servers (reaper.h), answered from the supervisor given as its
 * userdata: exported so that the reaper's own tests decide with the daemon's answers. */
extern const struct reaper_ops supervisor_reaper_ops;

/* The sign-in tokens of the servers reached by URL, made on first need; NULL when out of
 * memory. */
struct oauth_tokens *supervisor_tokens(struct supervisor *sv);

/* Takes the server entries out of config (it is left with none). */
int supervisor_init(struct supervisor *sv, struct event_base *base, const struct logger *log,
                    struct jsonrpc_parser *parser, struct config *config, const struct supervisor_ops *ops,
                    void *userdata);
/* Applies a reloaded config's servers (taken out of next): added ones start, removed ones
 * close gracefully and are freed once stopped, changed ones restart with their new
 * settings, unchanged ones are not touched. Fills summary with the names in arrays
 * "added", "removed", "changed" and "unchanged". */
int supervisor_reload(struct supervisor *sv, struct config *next, json_object *summary);
/* Settings no server uses any more, freed after this loop iteration. */
void supervisor_retire_config(struct supervisor *sv, struct server_config *c);
/* Before the first start, socket-activated or not: marks every server from now on with
 * daemon_id (MCPVISOR_DAEMON; copied), by which the next daemon finds what this one left
 * (its processes, its units). */
void supervisor_mark(struct supervisor *sv, const char *daemon_id);
/* Before the first start, once the daemon holds the lock of its MCP socket: ends what a
 * dead daemon with the same id left running (processes; units: supervisor_connect_manager). */
void supervisor_claim(struct supervisor *sv, const char *daemon_id);
/* Before the first start: has each launcher a server may use make its daemon-wide part
 * (launcher.h: the systemd one connects to the service manager, decides what "auto" means once
 * (bus.h) and stops the units a dead predecessor on daemon_id left). Each logs what it
 * decided; a failure leaves the servers that need it unable to start, with the reason. */
void supervisor_connect_manager(struct supervisor *sv, int launcher, const char *daemon_id);
/* A reload's configuration c names the launcher "systemd" (the daemon's or a server's),
 * whose connection to the service manager is made only at start, and this daemon never
 * tried to make it: those servers cannot start until mcpvisord starts again. */
bool supervisor_manager_waits_for_restart(const struct supervisor *sv, const struct config *c);
/* Starts every enabled server: PROCESS_SPAWNS_PER_POLL a loop turn, at the priority of
 * spawns (process.h), so that clients are answered between and the servers' handshakes
 * come a few at a time (1,000 servers spawned before the loop ran, then answering at
 * once, would keep a client's ping waiting 46 to 50 ms). Until its turn a server is
 * stopped and queued (its cause, STATUS= and list requests say so); a stop, a start or a
 * restart of it (an operator's, a reload that removes or disables it) takes it off the
 * queue (supervisor_queue()). */
void supervisor_start_all(struct supervisor *sv);
/* The start queue: ev (SERVER_EV_START or SERVER_EV_RESTART) is fed to s on a later loop
 * turn, at the priority of spawns, in the order of servers: PROCESS_SPAWNS_PER_POLL spawns
 * or SUPERVISOR_STOPS_PER_TURN restarts of running servers a turn. The first starts and a reload's starts and restarts go through it, so a
 * reload that changes 1,000 servers does not restart them all in its callback. */
void supervisor_queue(struct supervisor *sv, struct server *s, enum server_event ev, const char *detail);
/* Restarts of running servers a turn of the queue takes: each closes a stdin and logs a
 * line, and its spawn waits for the exit; one a turn doubled the turns of a reload that
 * changed every server. */
#define SUPERVISOR_STOPS_PER_TURN 8
/* Daemon shutdown: every server closes at once, in parallel. */
void supervisor_stop_all(struct supervisor *sv);
/* True once nothing started by the daemon is left running. */
bool supervisor_idle(const struct supervisor *sv);
/* Between loop iterations: frees retired runs, ends left-behind processes. */
void supervisor_collect(struct supervisor *sv);
/* Last resort before exit: SIGKILL and reap whatever is left. */
void supervisor_done(struct supervisor *sv);

/* The configured server called name (not one a reload removed), or NULL: shared servers
 * only, never an instance. */
struct server *supervisor_find(const struct supervisor *sv, const char *name);
/* The pool of the entry called name (run as instances), or NULL. */
struct pool *supervisor_find_pool(const struct supervisor *sv, const char *name);
/* The shared servers (every one but the instances), as an array valid until the next call
 * or a change of servers. */
struct server *const *supervisor_shared(struct supervisor *sv, size_t *ret_n);
/* Appends s (an instance: pool.c) to the servers. -ENOMEM. */
int supervisor_add(struct supervisor *sv, struct server *s);
/* Client client_id is gone: its per-client instances stop. */
void supervisor_client_gone(struct supervisor *sv, uint64_t client_id);
/* uid's last client is gone: its per-user instances stop after their instanceIdle. */
void supervisor_user_left(struct supervisor *sv, uid_t uid);
/* "3/4 servers ready; github backoff (exit status 1)" */
void supervisor_status(const struct supervisor *sv, char *buf, size_t size);
/* A new run number (MCPVISOR_INSTANCE). */
uint64_t supervisor_next_run(struct supervisor *sv);
void supervisor_server_changed(struct supervisor *sv, const struct server *s, unsigned kinds, bool dropped);
void supervisor_server_ready(struct supervisor *sv, struct server *s);
void supervisor_server_notification(struct supervisor *sv, struct server *s, struct jsonrpc_msg *m);
void supervisor_server_request(struct supervisor *sv, struct server *s, struct jsonrpc_msg *m);
