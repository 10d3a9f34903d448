/* mcpvisorctl as a child of the test, with pipes on its stdin, stdout and stderr: started,
 * written to, read line by line and waited for, every wait with a deadline and draining the
 * daemon's NOTIFY datagrams meanwhile (see h_notify_drain), since a restart makes the daemon
 * send several. Sized for real traffic: writing goes on while its output is read, so that
 * messages of many megabytes cross both ways without either side waiting on the other. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "harness.h"

struct proc {
        pid_t pid;
        int pidfd;
        struct h_daemon *d;       /* whose NOTIFY datagrams are drained while we wait */
        int in, out, err;         /* our ends of its pipes; -1 once closed or at EOF */
        char *outbuf, *errbuf;    /* all it wrote, '\0'-terminated */
        size_t outlen, errlen;
        size_t outcap, errcap;
        size_t taken;             /* bytes of outbuf already returned by proc_line */
        size_t scanned;           /* bytes of outbuf known to hold no '\n' after taken */
        bool exited;
        int status;               /* exit status, or 128 + signal */
};

/* Starts mcpvisorctl with args (NULL-terminated, after argv[0]) and an environment of PATH
 * and env (NULL-terminated, or NULL). */
void proc_start(struct proc *p, struct h_daemon *d, const char *const *args, const char *const *env);
/* The same for a child the test started itself (pid, and our ends of its stdin, stdout and
 * stderr; in may be -1). */
void proc_adopt(struct proc *p, struct h_daemon *d, pid_t pid, int in, int out, int err);
/* Writes all of text (len bytes) to its stdin, reading its output meanwhile. */
void proc_send(struct proc *p, const char *text, size_t len);
void proc_write(struct proc *p, const char *text);
void proc_close_stdin(struct proc *p);
/* The next line it printed on stdout (without '\n'), malloc'd; NULL on EOF or timeout. */
char *proc_line(struct proc *p, int timeout_ms);
/* Waits until it has written n bytes to stdout in all (lines taken or not); false at the
 * deadline or its EOF. */
bool proc_wait_output(struct proc *p, size_t n, int timeout_ms);
/* Waits until it has exited and closed its output; its exit status. Kills it and fails
 * the test at the deadline. */
int proc_wait(struct proc *p, int timeout_ms);
void proc_free(struct proc *p);
/* Milliseconds left until deadline (h_now_ms() based), 0 when past. */
int left_ms(long long deadline);
