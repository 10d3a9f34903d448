/* One run of a server: the program a launcher started for it (launcher.h), the MCP connection
 * on its stdin/stdout, and the reader of its stderr. A server makes a new instance for
 * every start; an ended instance is retired (its connection closed at once, so nobody
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

struct instance {
        TAILQ_ENTRY(instance) entry;
        struct server *server;
        uint64_t number;              /* daemon-unique; MCPVISOR_INSTANCE= in its environment */
        const struct run_ops *ops;    /* its launcher */
        void *launcher;               /* the launcher's own data, set by ops->start */
        bool ended;                   /* the launcher reported its end (instance_ended) */
        struct child *child;
        struct stderr_reader err;
        uint64_t started_at;          /* usec, monotonic */
};

TAILQ_HEAD(instance_list, instance);

/* Builds the environment, makes the pipes, connects to the daemon's ends and has the
 * launcher start the program on the server's ends. On failure *error (malloc'd) says
 * what to fix and the return is the cause (-ENOENT, -EACCES, -EAGAIN, ...). */
int instance_start(struct server *s, uint64_t number, const struct child_ops *ops, struct instance **ret,
                   char **error);
/* After the run ended: logs its last stderr, closes its connection (pending requests
 * fail) and queues it for freeing. */
void instance_retire(struct instance *in, struct instance_list *retired);
void instance_free(struct instance *in);

/* For launchers: everything the run started has ended; told to its server once. */
void instance_ended(struct instance *in);
/* For launchers: where the supervisor keeps the daemon-wide part of its launcher. */
void **instance_launcher_part(const struct instance *in);
/* For launchers: the daemon's loop. */
struct event_base *instance_event_base(const struct instance *in);

/* What its launcher started is still running (or not seen to end yet). */
bool instance_running(const struct instance *in);
/* The pid of its program; 0 when not known. */
pid_t instance_main_pid(const struct instance *in);
/* The close sequence's signals to everything it started: 0 or -errno. */
int instance_terminate(struct instance *in);
int instance_kill(struct instance *in);
/* The daemon's last resort at exit: SIGKILL everything it started and wait for it. */
void instance_kill_wait(struct instance *in);
/* SIGCHLD reported its program's pid: true if that ended the run (reported to its server). */
bool instance_reap(struct instance *in);
/* How it ended (code and status); zero while it runs. What *ret held is freed first; the
 * caller frees the new one with server_exit_done(). */
void instance_describe_end(const struct instance *in, struct server_exit *ret);
/* What the logs call it: "pid 1234", "unit mcpvisor-fs@106bb1be-3.service". */
const char *instance_describe(const struct instance *in, char *buf, size_t size);
/* What its stop's steps are called in the logs (launcher.h). */
const struct run_words *instance_words(const struct instance *in);
/* What it is a run of, for the logs: its command, its URL. */
const char *instance_target(const struct instance *in);
/* The launcher that runs (or would run) the server's runs, for what the status answer
 * says of them: where one with no pid is reached, whether they write a stderr. */
const struct run_ops *instance_launcher_of(const struct server *s);
/* Its launcher's name: "exec", "systemd", "http". */
const char *instance_launcher(const struct instance *in);
/* What it uses now (launcher.h): read when asked. */
void instance_usage(const struct instance *in, struct run_usage *ret);
