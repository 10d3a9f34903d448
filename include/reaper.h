/* The daemon as a child subreaper: processes that servers leave behind (a setsid
 * grandchild, the node under an npx that exited) are re-parented to the daemon rather
 * than to PID 1. The reaper reaps every child that is not a server's own process (those
 * are reaped through their pidfd), and ends left-behind processes once their server is
 * gone, with the close sequence's signals: SIGTERM (+SIGCONT), killTimeout, SIGKILL.
 *
 * Attribution: every server starts with MCPVISOR_SERVER= and MCPVISOR_INSTANCE= in its
 * environment, which its descendants inherit; /proc/PID/environ tells whose they are.
 * MCPVISOR_DAEMON= names the daemon (its MCP socket): a new daemon on the same socket ends
 * what a SIGKILLed predecessor left. A process that clears its environment carries none. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct event_base;
struct event;
struct logger;

struct reaper_ops {
        /* A server's own process with this pid has exited: reap it through its pidfd.
         * Returns true if it did, false if pid is not (or could not be) reaped that way. */
        bool (*server_exited)(pid_t pid, void *userdata);
        /* Is pid a server's own (current) process? Those are never leftovers. */
        bool (*is_server)(pid_t pid, void *userdata);
        /* Should a process of this server instance be ended now (its instance is gone)? */
        bool (*left_behind)(const char *server, uint64_t instance, void *userdata);
        /* The grace between SIGTERM and SIGKILL for a process of this server (may be ""). */
        double (*kill_timeout)(const char *server, void *userdata);
};

struct leftover {
        TAILQ_ENTRY(leftover) entry;
        struct reaper *reaper;
        pid_t pid;
        int pidfd;
        char server[65];
        bool killed;            /* SIGKILL sent */
        bool foreign;           /* a dead predecessor's: not our child, never reaped here */
        struct event *timer;
        struct event *gone;     /* foreign: its pidfd turned readable, it has ended */
};

struct reaper {
        struct event_base *base;
        const struct logger *log;
        const struct reaper_ops *ops;
        void *userdata;
        struct event *sigchld;
        TAILQ_HEAD(, leftover) leftovers;
        unsigned n_leftovers;
};

int reaper_init(struct reaper *r, struct event_base *base, const struct logger *log, const struct reaper_ops *ops,
                void *userdata);
void reaper_done(struct reaper *r);

/* Reaps what has exited; returns how many were reaped. */
unsigned reaper_reap(struct reaper *r);
/* Finds our children whose server instance is gone and ends them; with all, also those
 * that carry no attribution (at shutdown). Returns how many are being ended. */
unsigned reaper_scan(struct reaper *r, bool all);
/* At start, once this daemon holds the lock of its socket (so whoever used that socket
 * before is dead): ends the processes whose MCPVISOR_DAEMON is daemon_id, of our user,
 * wherever they were re-parented. Returns how many are being ended. */
unsigned reaper_end_predecessors(struct reaper *r, const char *daemon_id);
/* SIGKILLs and reaps every leftover now (exit path; waits at most a moment). */
void reaper_kill_all(struct reaper *r);
