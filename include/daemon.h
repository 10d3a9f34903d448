/* The daemon context: the one object that holds all mutable state, passed explicitly. Its
 * definition is for the files that own its fields; a module that only holds the daemon, or
 * uses one or two of its parts, includes daemon-handle.h instead. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "daemon-handle.h"
#include "user-counts.h"
#include "config.h"
#include "http-front.h"
#include "jsonrpc.h"
#include "list-changes.h"
#include "list-wait.h"
#include "listen.h"
#include "log.h"
#include "notify.h"
#include "registry.h"
#include "reload.h"
#include "router.h"
#include "upcall.h"
#include "mrtr.h"
#include "subscriptions.h"
#include "supervisor.h"
#include "view.h"

struct event_base;
struct event;

enum daemon_phase {
        DAEMON_STARTING,
        DAEMON_RUNNING,
        DAEMON_STOPPING,   /* STOPPING=1 sent: clients draining, nothing new accepted */
        DAEMON_EXIT,       /* leave the loop */
};

/* Where the configuration comes from, to read it again on reload. */
struct config_source {
        const char *path;                  /* the main file */
        bool missing_ok;                   /* the default path: no file means no servers */
        int log_level;                     /* --log-level, which wins over the file; -1: none */
        const char *socket_path;           /* --socket and --control-socket, or NULL */
        const char *control_socket_path;
};

struct daemon {
        struct event_base *base;
        struct logger log;
        struct config config;              /* effective settings (file + command line); owned */
        struct config_source source;
        struct notify notify;
        char status_servers[512];          /* the servers' part of the last STATUS= asked for */
        struct reload reload;              /* reload.c's: reads under way, control clients waiting */
        struct control_login *logins;      /* control-login.c's: sign-ins under way */
        struct signin_elicit *elicits;     /* signin-elicit.c's: sign-ins begun by clients' calls */
        struct jsonrpc_parser parser;      /* one tokener reused for every line */
        struct listener listeners[LISTEN_ROLE_COUNT];
        struct bound_socket bound[LISTEN_ROLE_COUNT]; /* only when not socket-activated */
        bool activated;
        struct http_front http;            /* the Streamable HTTP front door */
        char *id;                          /* the MCP socket's path, bound or passed: MCPVISOR_DAEMON= */
        struct supervisor supervisor;
        struct registry registry;          /* what clients see of the ready servers */
        struct views views;                /* what each class of clients sees of it (view.h) */
        bool servers_changed;              /* since the loop's last iteration (servers_settled) */
        bool registry_dropped;             /* and a server's items left the registry's lists */
        bool status_due;                   /* STATUS= to send at the end of this loop iteration */
        struct router router;              /* requests in flight to servers */
        struct server_requests server_requests; /* servers' requests waiting for a client */
        struct mrtr mrtr;                  /* modern calls waiting for their client's retry */
        struct list_waits list_waits;      /* requests waiting for servers' first starts */
        struct list_changes list_changes;  /* list_changed notifications waiting for their window */
        struct subscriptions subscriptions; /* resources clients subscribed to */
        bool log_levels_due;               /* mcp-logging.c: servers' levels to decide again */
        struct client_list clients[CLIENT_STATE_COUNT];
        unsigned client_count[CLIENT_STATE_COUNT];
        struct client_list clients_ended;  /* whose peer closed, to be read (client_read_end()) */
        uint64_t next_client_id;
        struct user_counts user_counts;    /* MCP connections per uid, for maxClientsPerUser */
        int fds_at_start;                  /* descriptors open once the sockets were set up */
        bool fd_refusing;                  /* MCP clients turned away for descriptors: warned once */
        struct event *signals[3];          /* SIGTERM, SIGINT, SIGHUP */
        struct event *stop_deadline;
        struct event *idle_timer;          /* idleExit */
        uint64_t started_at;               /* usec, monotonic */
        enum daemon_phase phase;
        int exit_code;
};

/* Startup in a fixed order: loop, signals, sockets, notify, supervisor (then what a
 * SIGKILLed daemon on the same socket left is ended, before any server starts); READY=1
 * comes last. Takes over config (left empty). */
int daemon_init(struct daemon *d, struct config *config, const struct config_source *source);
int daemon_run(struct daemon *d);
/* One loop iteration (event_base_loop flags), then what is done between iterations:
 * answering lost routes, freeing closed clients and stopped servers, noticing the end of
 * a stop. daemon_run() repeats it; the fuzz harness calls it with EVLOOP_NONBLOCK. */
int daemon_iterate(struct daemon *d, int loop_flags);
void daemon_done(struct daemon *d);

/* Counts a new MCP client of uid, whatever carries it, against maxClientsPerUser: at the
 * limit, in place of the uid's HTTP session idle the longest, which is ended now (and freed
 * through the usual path). USER_COUNT_TAKEN, or why it is to be turned away. */
enum user_count_verdict daemon_count_client(struct daemon *d, uid_t uid);
