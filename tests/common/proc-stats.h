/* What /proc says of a process, for the integration tests, the soak and the bench: its
 * state, parent, group and name, its descriptors, its memory and its CPU time. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_stat {
        char state;             /* R, S, Z, ... */
        pid_t ppid, pgid;
        char comm[64];
        int64_t utime, stime;   /* clock ticks */
};

/* False if the process is gone or its stat could not be read. */
bool proc_stat(pid_t pid, struct proc_stat *ret);
/* Open descriptors, or -errno. */
int proc_fd_count(pid_t pid);
/* VmRSS in KiB, or -1. */
long proc_rss_kib(pid_t pid);
/* utime + stime in clock ticks (_SC_CLK_TCK), or -1. */
int64_t proc_cpu_ticks(pid_t pid);
/* utime + stime in ms, or -1. */
long long proc_cpu_ms(pid_t pid);
/* The first child in /proc/PID/task/PID/children, or 0. */
pid_t proc_first_child(pid_t pid);

/* Calls match for every process in /proc; returns how many it said yes to. -1 if /proc
 * cannot be read. */
int proc_count(bool (*match)(pid_t pid, void *arg), void *arg);
