/* How a run's program is launched, signalled and seen to end: one table of operations per
 * launcher, as systemd gives each unit type a vtable. instance.c owns the run (its pipes,
 * its connection, its stderr reader) and calls only these; server.c, supervisor.c and the
 * status answer ask instance.c. The exec launcher (run-exec.c) spawns the program as a
 * child of the daemon; issue 16 adds a systemd one.
 *
 * A launcher reports the end of what it started once, through instance_ended(); after
 * that the run is retired, and freed (ops->free) after the loop iteration. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct instance;
struct server_config;
struct server_exit;

/* The server's ends of its three pipes, to become the program's fds 0, 1 and 2: the read
 * end of its stdin, the write ends of its stdout and stderr. The daemon keeps the others. */
struct run_stdio {
        int in;
        int out;
        int err;
};

struct run_ops {
        const char *name;   /* "exec" */
        /* Starts the program of c with environment env. Takes the fds of stdio in any case
         * (closed, or handed to the program). 0, or a negative errno with *error malloc'd
         * (what to fix) or NULL. May complete later: a start that fails then is reported
         * as the run's end. Sets in->launcher, the launcher's own data. */
        int (*start)(struct instance *in, const struct server_config *c, char **env, const struct run_stdio *stdio,
                     char **error);
        /* SIGTERM (and SIGCONT) to everything the run started; 0 or -errno (-ESRCH: ended). */
        int (*terminate)(struct instance *in);
        /* SIGKILL to everything the run started. */
        int (*kill)(struct instance *in);
        /* The daemon is exiting without its loop: SIGKILL everything and wait until it is
         * gone. Its end is not reported. */
        void (*kill_wait)(struct instance *in);
        /* SIGCHLD said that pid main_pid() may have exited: collect it now and report the
         * end, if so; true if it did. NULL for launchers whose program is not the daemon's
         * child. */
        bool (*reap)(struct instance *in);
        /* How it ended, once it has: code and status as struct server_exit holds them
         * (issue 16 adds a launcher's reason there, "killed by the OOM killer"). */
        void (*describe_end)(const struct instance *in, struct server_exit *ret);
        /* The pid of the program it started; 0 when not known (yet). */
        pid_t (*main_pid)(const struct instance *in);
        /* Releases in->launcher: the run has ended, or the daemon is exiting. */
        void (*free)(struct instance *in);
};

/* Spawns the program as the daemon's child; see run-exec.c and process.h. */
extern const struct run_ops run_exec_ops;

/* For a launcher's start: sets *error for a lack of descriptors or processes (-EMFILE,
 * -ENFILE, -EAGAIN), where to raise the limit; false, and nothing set, for other errors. */
bool run_explain_shortage(int r, char **error);
