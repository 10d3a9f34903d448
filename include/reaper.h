/* The daemon as a child subreaper: processes that servers leave behind (a setsid
 * grandchild, the node under an npx that exited) are re-parented to the daemon rather
 * than to PID 1. The reaper reaps every child that is not a server's own process (those
 * are reaped through their pidfd), and ends left-behind processes once their server is
 * gone, with the close sequence's signals: SIGTERM (+SIGCONT), killTimeout, SIGKILL.
 *
 * Attribution, in this order: ancestry, as each scan sees it (a process below a server's
 * own process, or below one attributed before, is that run's; recorded with its start
 * time, so a reused pid is never taken for it); then the environment: every server starts
 * with MCPVISOR_SERVER= and MCPVISOR_INSTANCE=, which its descendants inherit. A child of
 * the daemon that is no server's own process and belongs to no live run by either is left
 * behind, including one that cleared its environment: the daemon starts nothing else.
 * But a scan reads the tree over several loop turns: a child re-parented to the daemon
 * while it read (its parent died meanwhile; it was not among the daemon's children when
 * the scan began) may have been below any run the scan could not see it under. Such a
 * child without a mark is ended only once every run that was running then has ended.
 * MCPVISOR_DAEMON= names the daemon (its MCP socket): a new daemon on the same socket ends
 * what a SIGKILLed predecessor left. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct event_base;
struct event;
struct logger;
struct proc_tree;
struct proc_tree_reader;

struct reaper_ops {
        /* A server's own process with this pid has exited: reap it through its pidfd.
         * Returns true if it did, false if pid is not (or could not be) reaped that way. */
        bool (*server_exited)(pid_t pid, void *userdata);
        /* The instance number of the run whose own process is pid, and its server's name;
         * 0 if pid is no server's own (current) process. Those are never leftovers. */
        uint64_t (*run_of)(pid_t pid, const char **server, void *userdata);
        /* Should a process of this server instance be ended now (its instance is gone)? */
        bool (*left_behind)(const char *server, uint64_t instance, void *userdata);
        /* The grace between SIGTERM and SIGKILL for a process of this server (may be ""). */
        double (*kill_timeout)(const char *server, void *userdata);
        /* The number of the newest run started so far (0: none). */
        uint64_t (*newest_run)(void *userdata);
        /* Whether a run numbered up to newest is still running. */
        bool (*run_up_to_running)(uint64_t newest, void *userdata);
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

/* A process attributed to a server run by ancestry. */
struct descendant {
        pid_t pid;
        uint64_t start;         /* /proc/PID/stat field 22: tells a reused pid apart */
        uint64_t instance;      /* 0: unknown */
        uint64_t runs_up_to;    /* instance 0, re-parented to the daemon while a scan read the
                                 * tree: a run numbered up to this, running then, may own it */
        char server[65];
};

struct reaper {
        struct event_base *base;
        const struct logger *log;
        const struct reaper_ops *ops;
        void *userdata;
        struct event *sigchld;
        struct event *more;             /* SIGCHLD left servers' exits for a later turn */
        TAILQ_HEAD(, leftover) leftovers;
        unsigned n_leftovers;
        struct descendant *known;       /* as the last scan saw them, sorted by pid */
        size_t n_known;
        struct descendant *inherited;   /* children the daemon had before it started anything
                                         * (a wrapper's `cmd & exec mcpvisord`, a tee of its
                                         * output): never ours to end; sorted by pid */
        size_t n_inherited;
        bool rescan;                    /* a process not a server's own was reaped: its
                                         * children, if any, are ours now */
        pid_t *children;                /* the daemon's children when the scan began, sorted */
        size_t n_children;
        bool children_read;             /* false: not known (no /proc/PID/task/TID/children) */
        uint64_t newest_run;            /* ops->newest_run() when the scan began */
        struct proc_tree_reader *scanning; /* reaper_scan_soon()'s read, NULL when none runs */
        bool scan_again;                /* asked for while scanning: once more after it */
        struct event *scan_step;
};

int reaper_init(struct reaper *r, struct event_base *base, const struct logger *log, const struct reaper_ops *ops,
                void *userdata);
void reaper_done(struct reaper *r);

/* Reaps what has exited; returns how many were reaped. */
unsigned reaper_reap(struct reaper *r);
/* The same, but stops after max servers' exits (each may spawn a restart); *ret_more
 * says whether it stopped there. */
unsigned reaper_reap_some(struct reaper *r, unsigned max, bool *ret_more);
/* Looks at the process tree: records which run each process below the daemon belongs to,
 * and ends our children that are no server's own process and belong to no live run.
 * Returns how many are being ended. Costs a read of
 * /proc/PID/stat per process of the machine (at most REAPER_SCAN_MAX): call it when a run
 * ends or r->rescan is set, never on a timer. */
#define REAPER_SCAN_MAX 65536
unsigned reaper_scan(struct reaper *r);
/* The two halves of a scan, for tests: what the daemon's children are as it begins, then
 * what it does with the tree t, read since (the same as reaper_scan's). */
void reaper_scan_begin(struct reaper *r);
unsigned reaper_scan_tree(struct reaper *r, const struct proc_tree *t);
/* The same scan read REAPER_SCAN_PER_TURN processes a loop turn, at the priority of spawns
 * (process.h), and done when the last is read: with 1,000 servers, a scan in one go would
 * take 16 to 25 ms each time a run ended. Asked for again while it runs, it runs once
 * more after. A child the scan would end is checked to be the very process it read. */
#define REAPER_SCAN_PER_TURN 64
void reaper_scan_soon(struct reaper *r);
/* A scan of reaper_scan_soon() is under way. */
bool reaper_scanning(const struct reaper *r);
/* At start, once this daemon holds the lock of its socket (so whoever used that socket
 * before is dead): ends the processes whose MCPVISOR_DAEMON is daemon_id, of our user,
 * wherever they were re-parented. Returns how many are being ended. */
unsigned reaper_end_predecessors(struct reaper *r, const char *daemon_id);
/* SIGKILLs and reaps every leftover now (exit path; waits at most a moment). */
void reaper_kill_all(struct reaper *r);
