/* A snapshot of the process tree from /proc: each process's parent and start time
 * (/proc/PID/stat fields 4 and 22). The pid and the start time together name one process
 * for good: a process that takes over a reused pid starts later. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_entry {
        pid_t pid;
        pid_t ppid;
        uint64_t start;         /* clock ticks after boot */
};

struct proc_tree {
        struct proc_entry *procs;       /* sorted by pid */
        size_t n;
};

/* The parent and start time of a live process; -ESRCH when it is gone or a zombie. */
int proc_stat_read(pid_t pid, struct proc_entry *ret);
/* Reads at most max processes. */
int proc_tree_read(struct proc_tree *t, size_t max);

/* The same read a few processes at a time, so that a loop can do other work between: the
 * pids are listed when it opens, then each step reads the stat of a few. The snapshot is
 * then not of one instant (neither is proc_tree_read's): a process may end or start while
 * it is read. */
struct proc_tree_reader {
        pid_t *pids;
        size_t n_pids, next;
        struct proc_tree tree;   /* sorted by pid once done */
        bool sorted;
};

int proc_tree_reader_open(struct proc_tree_reader *rd, size_t max);
/* Reads up to count more processes: 1 once the tree is complete, else 0. */
int proc_tree_reader_step(struct proc_tree_reader *rd, size_t count);
void proc_tree_reader_done(struct proc_tree_reader *rd);
const struct proc_entry *proc_tree_find(const struct proc_tree *t, pid_t pid);
/* The ancestor of e whose parent is top (e itself when its parent is top), or NULL when
 * top is not among e's first max_depth ancestors. */
const struct proc_entry *proc_tree_below(const struct proc_tree *t, const struct proc_entry *e, pid_t top,
                                         unsigned max_depth);
void proc_tree_done(struct proc_tree *t);
