/* Why a server's run ended, or is being ended, kept as facts: what server.c decided and
 * what the process record said. The text for logs, errors and the status answer is
 * rendered from them here, so no one has to parse it back. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum server_cause_kind {
        SERVER_CAUSE_NONE,          /* nothing has ended yet */
        SERVER_CAUSE_REQUEST,       /* asked for: an operator, the configuration, shutdown (detail) */
        SERVER_CAUSE_SPAWN,         /* the program could not be started (error, detail: what to fix) */
        SERVER_CAUSE_EXIT,          /* the process ended by itself (starting: before it was ready) */
        SERVER_CAUSE_CONNECTION,    /* it closed its stdout or stopped reading its stdin (detail) */
        SERVER_CAUSE_HANDSHAKE,     /* initialize or a first list failed (detail) */
        SERVER_CAUSE_START_TIMEOUT, /* not ready within startTimeout (timeout) */
        SERVER_CAUSE_HEALTH,        /* failures pings in a row failed, the last as detail */
        SERVER_CAUSE_PROTOCOL,      /* it wrote what leaves its stdout unusable (detail) */
        SERVER_CAUSE_KIND_COUNT,
};

/* How a run's process ended, and the signals the daemon had sent to end it: so that its
 * own SIGTERM is told apart from someone else's. It owns its reason: copy it with
 * server_exit_copy() and free it with server_exit_done(), never by assignment. */
struct server_exit {
        int code;                   /* 0: it has not ended; else CLD_EXITED, CLD_KILLED or CLD_DUMPED */
        int status;                 /* exit status or signal number */
        int signal_sent;            /* 0, SIGTERM (after stopTimeout) or SIGKILL (after killTimeout too) */
        double stop_timeout;        /* seconds, when a signal was sent */
        double kill_timeout;        /* seconds, when SIGKILL was sent */
        /* What the launcher knows beyond code and status, said instead of them: "killed by
         * the OOM killer (memoryMax 256M)", "unit mcpvisor-fs@106bb1be-3.service failed to start: ...".
         * Owned, whole and valid UTF-8 (it can carry a service manager's error); NULL for none. */
        char *reason;
        /* The launcher says a restart cannot help (a remote server refused the credential):
         * the server goes failed instead of backing off. */
        bool no_retry;
};

struct server_cause {
        enum server_cause_kind kind;
        char *detail;               /* owned, valid UTF-8; NULL for none */
        int error;                  /* SPAWN: the errno */
        double timeout;             /* START_TIMEOUT: startTimeout, in seconds */
        unsigned failures;          /* HEALTH: in a row */
        bool starting;              /* EXIT: it had not become ready */
        struct server_exit exit;    /* how the run ended; code 0 while it is being stopped; owned */
};

/* Replaces e's reason with a copy of reason made valid UTF-8, whole; NULL or "" for none. */
void server_exit_set_reason(struct server_exit *e, const char *reason);
/* Replaces *dst with src, its reason copied (none when out of memory). */
void server_exit_copy(struct server_exit *dst, const struct server_exit *src);
/* Frees the reason; *e is then as zeroed. */
void server_exit_done(struct server_exit *e);

/* Replaces *c with a cause of that kind; detail is copied whole (made valid UTF-8: what a
 * server wrote into it was bounded where it was read). The other facts are zero: set them
 * after. */
void server_cause_set(struct server_cause *c, enum server_cause_kind kind, const char *detail);
void server_cause_done(struct server_cause *c);

/* "exit status 1", "killed by SIGKILL", "dumped core on SIGSEGV", or the launcher's
 * reason, whole (also without a process: "sign-in needed: run mcpvisorctl login NAME"); when the daemon's own signal ended it, "stopped with SIGTERM after
 * stopTimeout (5 s)"; "" while it has not ended. Malloc'd; NULL when out of memory. */
char *server_exit_text(const struct server_exit *e);
/* The daemon's own signal ended it. */
bool server_exit_by_daemon(const struct server_exit *e);
/* The kind's name in the status answer: "exit" or "signal" for an end of its own (by how
 * it ended), "request", "spawn", "connection", "handshake", "startTimeout", "health",
 * "protocol";
 * NULL for none. */
const char *server_cause_kind_name(const struct server_cause *c);

/* It ended with exit status 0. */
bool server_exit_clean(const struct server_exit *e);

/* The cause as a sentence for logs and the status answer: "closed its stdout, then exit
 * status 1", "startTimeout (30 s) passed before it was ready, then stopped with SIGTERM
 * after stopTimeout (5 s)". Malloc'd; NULL when out of memory. */
char *server_cause_text(const struct server_cause *c);
/* A few words for a status line: the exit when the process ended by itself ("exit status
 * 1"), else what the daemon saw ("startTimeout passed", "health checks failed", ...); cut
 * to size, as a line of sd_notify's STATUS= is. */
const char *server_cause_brief(const struct server_cause *c, char *buf, size_t size);
