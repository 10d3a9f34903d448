/* The soak run (issue 6): many MCP clients with mixed traffic against the real mcpvisord
 * and several demo servers, while servers are killed and the config reloaded. It counts
 * every request to its fate (answered, cancelled, dropped with its client, or lost), samples
 * the daemon's RSS and descriptors, and ends with a clean stop that must leave nothing
 * behind. soak.c runs it, soak-client.c is one client, soak-daemon.c is the daemon, its
 * configs, its control socket and /proc. */
#pragma once

#include <event2/event.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/queue.h>
#include <sys/types.h>

struct soak_options {
        double duration_s;          /* traffic time, before the clients leave */
        unsigned clients;           /* connected at once */
        unsigned max_in_flight;     /* per client */
        double think_ms;            /* mean pause between a client's sends */
        double client_life_s;       /* a client lives between 1 s and this long, then leaves */
        double kill_interval_s;     /* mean time between SIGKILLs of a server (0: none) */
        double reload_interval_s;   /* mean time between SIGHUP reloads (0: none) */
        double sample_interval_s;   /* a row of the table this often */
        double drain_timeout_s;     /* how long a leaving client waits for what is owed to it */
        long rss_tolerance_kb;      /* end RSS may exceed start RSS by this much (< 0: not checked) */
        unsigned long seed;
        const char *daemon_path;
        const char *server_path;
        const char *log_level;      /* the daemon's --log-level */
        bool keep;                  /* keep the work directory (config, daemon log) */
        bool verbose;
};

/* Error answers, counted by code and message, the message without its numbers and quoted
 * names (so "server 'beta' exited with status 3" and "server 'alpha' exited with status 1" are
 * one row). */
#define SOAK_MAX_CODES 32
struct soak_error_count {
        const char *what[3];        /* the first kinds of request that got it */
        int code;
        uint64_t count;
        char message[120];
};

struct soak_stats {
        uint64_t sent;              /* requests, initialize included */
        uint64_t results;           /* answered with a result */
        uint64_t errors;            /* answered with an error */
        uint64_t tool_errors;       /* results with isError: true (counted in results too) */
        uint64_t cancelled;         /* cancelled by the client before any answer */
        uint64_t cancelled_answered;/* of those, answered anyway (the answer crossed the cancel) */
        uint64_t abandoned;         /* in flight when their client closed abruptly */
        uint64_t lost;              /* owed an answer that never came: must be 0 */
        uint64_t progress;          /* notifications/progress received for our tokens */
        uint64_t notifications;     /* other notifications received */
        uint64_t upcalls;           /* requests from servers answered by the clients */
        uint64_t upcalls_completed; /* ask calls whose result was our answer */
        uint64_t connects, leaves_graceful, leaves_half_close, leaves_cancel, leaves_abrupt;
        uint64_t kills, reloads;
        /* Anomalies: each fails the run. */
        uint64_t duplicates;        /* a second answer for one request */
        uint64_t unknown_ids;       /* an answer for an id this client never sent */
        uint64_t wrong_answers;     /* echo or add answered with someone else's content */
        uint64_t bad_progress;      /* progress for a token not ours, or after the answer */
        uint64_t protocol_errors;   /* not JSON, id null, unexpected close, ... */
        struct soak_error_count codes[SOAK_MAX_CODES];
        unsigned n_codes;
};

struct soak_daemon {
        pid_t pid;
        int pidfd;
        bool exited;
        int wait_status;
        char dir[128];
        char config[192];
        char sock[192];
        char control[192];
        char log[192];
};

/* /proc figures of the daemon. */
struct soak_sample {
        long rss_kb;
        int fds;
};

struct soak_series {
        struct soak_sample start, min, max, last;
        unsigned n;
};

struct soak_client;

struct soak {
        struct soak_options opt;
        struct soak_stats st;
        struct event_base *base;
        struct soak_daemon d;
        unsigned variant;           /* config now in force: 0 (A) or 1 (B) */
        bool ending;                /* the duration passed: no new clients, everyone leaves */
        bool failed_early;          /* the daemon died */
        bool interrupted;           /* SIGINT or SIGTERM: stop the daemon, report, exit */
        uint64_t start_ms;
        uint64_t rng;
        unsigned next_serial;
        unsigned solo_owner;        /* serial of the client that may call SOAK_SOLO; 0: none */
        unsigned live;              /* clients connected or leaving */
        LIST_HEAD(, soak_client) clients;
        struct soak_series series;
        struct event *ev_end, *ev_kill, *ev_reload, *ev_sample, *ev_daemon, *ev_spawn, *ev_hard_end, *ev_int, *ev_term;
        uint64_t next_row_ms;
};

/* soak.c */
uint64_t soak_now_ms(void);
uint64_t soak_rand(struct soak *s);
/* Uniform in [0, 1). */
double soak_uniform(struct soak *s);
/* True with probability p. */
bool soak_chance(struct soak *s, double p);
void soak_anomaly(struct soak *s, uint64_t *counter, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void soak_count_error(struct soak *s, const char *what, int code, const char *message);
/* A client closed: start another unless the run is ending. */
void soak_client_gone(struct soak *s);

/* soak-client.c */
/* Connects a new client; it initializes and starts sending on its own. */
int soak_client_start(struct soak *s);
/* Tells every client to leave now, in a way that still owes it every answer. */
void soak_clients_end(struct soak *s);
/* Closes every client at once, counting what each still waited for as lost (the run's hard
 * deadline). */
void soak_clients_abort(struct soak *s);

/* soak-daemon.c */
/* The server only one client at a time calls (the solo client), so that its requests to the
 * client have one client to go to: with several clients' calls in flight the daemon refuses
 * them. */
#define SOAK_SOLO "solo"
extern const char *const soak_servers[];   /* every server name either config has */
/* Whether server name is in config variant v. */
bool soak_config_has(unsigned v, const char *name);
/* Makes the work directory, writes config A, starts the daemon with its own sockets. */
int soak_daemon_start(struct soak *s);
/* Writes config variant v (atomically) and sends SIGHUP. */
int soak_daemon_reload(struct soak *s, unsigned v);
/* The control socket's status result (caller puts it), or NULL after timeout_ms. */
json_object *soak_daemon_status(struct soak *s, int timeout_ms);
/* SIGKILL to the pid of a random ready server; its name in *name, or -ENOENT if none ready. */
int soak_daemon_kill_random(struct soak *s, char *name, size_t size);
/* Waits until the servers of variant v are all ready, no other server is listed, no client is
 * connected and nothing is in flight. */
bool soak_daemon_settled(struct soak *s, unsigned v, int timeout_ms, char *why, size_t size);
int soak_daemon_sample(struct soak *s, struct soak_sample *out);
/* The daemon's descriptors as "target" lines, sorted, malloc'd (for a diff at the end). */
char *soak_daemon_fd_list(struct soak *s);
/* Reaps the daemon if it exited; true if it did. */
bool soak_daemon_reap(struct soak *s);
/* SIGTERM, wait for exit; true if it exited 0 within timeout_ms. */
bool soak_daemon_stop(struct soak *s, int timeout_ms);
/* Processes left alive by the daemon (re-parented to us, a subreaper), after it exited. */
unsigned soak_leftovers(struct soak *s, FILE *report);
/* Prints the last lines of the daemon's log to stderr. */
void soak_daemon_log_tail(struct soak *s, unsigned lines);
void soak_daemon_cleanup(struct soak *s, bool keep);
