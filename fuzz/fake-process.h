/* Fake server processes for the router harness: fake-process.c implements process.h and
 * reaper.h (linked in place of process.c and reaper.c): the server's ends of the pipes
 * the daemon made are kept for the harness, the pids are fake, and the harness decides the
 * exits. Nothing is spawned.
 *
 * The daemon's side sees what process.c gives it: its stdio taken, and on_exit called from
 * the loop once the process has "ended"; then process_reap() reports the exit chosen by
 * fake_process_exit(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "process.h"

struct event_base;

struct fake_process {
        struct process *proc;   /* the daemon's record of it */
        unsigned serial;        /* spawn order, from 1 */
        char **argv;            /* copy of what it was started with */
        int stdin_fd;           /* read end: what the daemon wrote to the server; -1 once closed */
        int stdout_fd;          /* write end: the server's output; -1 once closed */
        int stderr_fd;          /* write end; -1 once closed */
        bool exited;            /* ended; the daemon reaps it from the loop */
        int code, status;       /* CLD_EXITED + status, or CLD_KILLED + signal */
        unsigned signals;       /* bit per signal number received */
        void *harness;          /* the harness's own state for it */
};

struct fake_process_hooks {
        /* A process was spawned (the harness attaches its state). */
        void (*spawned)(struct fake_process *fp, void *userdata);
        /* The daemon signalled its group; the harness decides whether it ends. */
        void (*signalled)(struct fake_process *fp, int sig, void *userdata);
        /* The daemon forgets it (process_done): the harness releases its state. */
        void (*gone)(struct fake_process *fp, void *userdata);
};

void fake_process_set_hooks(const struct fake_process_hooks *hooks, void *userdata);

/* The next spawn fails with this negative errno (0: succeeds). */
void fake_process_fail_next_spawn(int error);

/* Ends the process: code CLD_EXITED with an exit status, or CLD_KILLED with a signal. The
 * daemon hears of it in its next loop iteration. Idempotent. */
void fake_process_exit(struct fake_process *fp, int code, int status);

/* The processes the daemon knows (spawned, not yet done), oldest first. */
size_t fake_process_count(void);
struct fake_process *fake_process_at(size_t i);
/* The fake behind a daemon's process record, or NULL. */
struct fake_process *fake_process_of(const struct process *p);
/* The fake with this pid (a run's run_main_pid()), or NULL. */
struct fake_process *fake_process_of_pid(pid_t pid);

/* Closes one of the harness's ends (the server closing its stdout, not reading its stdin). */
void fake_process_close_fd(int *fd);
