/* One run of a server: the program a launcher started for it (launcher.h), the MCP connection
 * on its stdin/stdout, and the reader of its stderr. A server makes a new run for
 * every start; an ended run is retired (its connection closed at once, so nobody
 * waits on it) and freed by the supervisor between loop iterations, never inside its own
 * callbacks. Other modules go through the functions below, never the launcher's data. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "launcher.h"
#include "stderr-reader.h"

struct event_base;
struct server;
struct server_exit;
struct child;
struct child_ops;

struct run {
        TAILQ_ENTRY(run) entry;
        struct server *server;
        uint64_t number;              /* daemon-unique; MCPVISOR_INSTANCE= in its environment */
        const struct run_ops *ops;    /* its launcher */
        void *launcher;               /* the launcher's own data, set by ops->start */
        bool ended;                   /* the launcher reported its end (run_ended) */
        struct child *child;
        struct stderr_reader err;
        uint64_t started_at;          /* usec, monotonic */
};

TAILQ_HEAD(run_list, run);

/* Builds the environment, makes the pipes, connects to the daemon's ends and has the
 * launcher start the program on the server's ends. On failure *error (malloc'd) says
 * what to fix and the return is the cause (-ENOENT, -EACCES, -EAGAIN, ...). */
int run_start(struct server *s, uint64_t number, const struct child_ops *ops, struct run **ret,
                   char **error);
/* After the run ended: logs its last stderr, closes its connection (pending requests
 * fail) and queues it for freeing. */
void run_retire(struct run *in, struct run_list *retired);
void run_free(struct run *in);

/* For launchers: everything the run started has ended; told to its server once. */
void run_ended(struct run *in);
/* For launchers: where the supervisor keeps the daemon-wide part of its launcher. */
void **run_launcher_part_of(const struct run *in);
/* For launchers: the daemon's loop. */
struct event_base *run_event_base(const struct run *in);

/* What its launcher started is still running (or not seen to end yet). */
bool run_running(const struct run *in);
/* The pid of its program; 0 when not known. */
pid_t run_main_pid(const struct run *in);
/* The close sequence's signals to everything it started: 0 or -errno. */
int run_terminate(struct run *in);
int run_kill(struct run *in);
/* The daemon's last resort at exit: SIGKILL everything it started and wait for it. */
void run_kill_wait(struct run *in);
/* SIGCHLD reported its program's pid: true if that ended the run (reported to its server). */
bool run_reap(struct run *in);
/* How it ended (code and status); zero while it runs. What *ret held is freed first; the
 * caller frees the new one with server_exit_done(). */
void run_describe_end(const struct run *in, struct server_exit *ret);
/* What the logs call it: "pid 1234", "unit mcpvisor-fs@106bb1be-3.service". */
const char *run_describe(const struct run *in, char *buf, size_t size);
/* What its stop's steps are called in the logs (launcher.h). */
const struct run_words *run_words_of(const struct run *in);
/* What it is a run of, for the logs: its command, its URL. */
const char *run_target(const struct run *in);
/* The launcher that runs (or would run) the server's runs, for what the status answer
 * says of them: where one with no pid is reached, whether they write a stderr. */
const struct run_ops *run_launcher_for(const struct server *s);
/* Its launcher's name: "exec", "systemd", "http". */
const char *run_launcher_name(const struct run *in);
/* What it uses now (launcher.h): read when asked. */
void run_usage_of(const struct run *in, struct run_usage *ret);
