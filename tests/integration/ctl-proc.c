/* mcpvisorctl as a child of the test; see ctl-proc.h. */
#include "ctl-proc.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define READ_CHUNK 65536

int left_ms(long long deadline) {
        long long left = deadline - h_now_ms();
        return left > 0 ? (int)left : 0;
}

/* Room for n more bytes and the '\0', growing by doubling: a 16 MiB answer arrives in
 * hundreds of reads. */
static void reserve(char **buf, size_t *cap, size_t len, size_t n) {
        if (len + n + 1 <= *cap)
                return;
        while (len + n + 1 > *cap)
                *cap = *cap ? *cap * 2 : 4096;
        *buf = realloc(*buf, *cap);
        cr_assert_not_null(*buf);
}

void proc_start(struct proc *p, struct h_daemon *d, const char *const *args, const char *const *env) {
        const char *argv[32] = { MCPVISORCTL_PATH }, *envp[16] = { "PATH=/usr/bin:/bin" };
        int in[2], out[2], err[2], n = 1, e = 1, r;
        posix_spawn_file_actions_t fa;
        pid_t pid;

        for (; args && *args; args++) {
                cr_assert_lt(n, 31);
                argv[n++] = *args;
        }
        for (; env && *env; env++) {
                cr_assert_lt(e, 15);
                envp[e++] = *env;
        }
        cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_adddup2(&fa, err[1], 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        r = posix_spawn(&pid, argv[0], &fa, NULL, (char **)argv, (char **)envp);
        posix_spawn_file_actions_destroy(&fa);
        cr_assert_eq(r, 0, "cannot start %s: %s", argv[0], strerror(r));
        close(in[0]);
        close(out[1]);
        close(err[1]);
        proc_adopt(p, d, pid, in[1], out[0], err[0]);
}

void proc_adopt(struct proc *p, struct h_daemon *d, pid_t pid, int in, int out, int err) {
        /* ours only: its end is a different open file */
        if (in >= 0)
                cr_assert_eq(fcntl(in, F_SETFL, O_NONBLOCK), 0);
        *p = (struct proc){ .pid = pid, .pidfd = pidfd_open(pid, 0), .d = d, .in = in, .out = out, .err = err };
        cr_assert_geq(p->pidfd, 0);
        reserve(&p->outbuf, &p->outcap, 0, 0);
        reserve(&p->errbuf, &p->errcap, 0, 0);
        p->outbuf[0] = p->errbuf[0] = '\0';
}

void proc_close_stdin(struct proc *p) {
        if (p->in >= 0)
                close(p->in);
        p->in = -1;
}

static void read_into(int *fd, char **buf, size_t *len, size_t *cap) {
        ssize_t n;

        reserve(buf, cap, *len, READ_CHUNK);
        n = read(*fd, *buf + *len, READ_CHUNK);
        if (n > 0) {
                *len += (size_t)n;
                (*buf)[*len] = '\0';
        } else if (n == 0 || errno != EINTR) {
                close(*fd);
                *fd = -1;
        }
}

/* One round: waits up to timeout_ms for output, the exit, or room on its stdin for *pending
 * (when pending is not NULL); reads what came and writes what fits. */
static void pump(struct proc *p, int timeout_ms, const char **pending, size_t *pending_len) {
        struct pollfd f[5] = {
                { p->out, POLLIN, 0 }, { p->err, POLLIN, 0 }, { p->exited ? -1 : p->pidfd, POLLIN, 0 },
                { p->d ? p->d->notify_fd : -1, POLLIN, 0 }, { pending ? p->in : -1, POLLOUT, 0 },
        };
        int status;

        if (p->d)
                h_notify_drain(p->d);
        if (poll(f, 5, timeout_ms) <= 0)
                return;
        if (f[0].revents)
                read_into(&p->out, &p->outbuf, &p->outlen, &p->outcap);
        if (f[1].revents)
                read_into(&p->err, &p->errbuf, &p->errlen, &p->errcap);
        if (f[2].revents && waitpid(p->pid, &status, WNOHANG) == p->pid) {
                p->exited = true;
                p->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (f[4].revents) {
                ssize_t n = write(p->in, *pending, *pending_len);
                cr_assert(n > 0 || errno == EAGAIN, "write to mcpvisorctl's stdin: %s; stderr: %s", strerror(errno),
                          p->errbuf);
                if (n > 0) {
                        *pending += n;
                        *pending_len -= (size_t)n;
                }
        }
}

void proc_send(struct proc *p, const char *text, size_t len) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        cr_assert_geq(p->in, 0, "stdin already closed");
        while (len > 0) {
                cr_assert_gt(left_ms(deadline), 0, "mcpvisorctl took no more of its stdin within %d ms (%zu bytes left)",
                             H_TIMEOUT_MS, len);
                pump(p, left_ms(deadline), &text, &len);
        }
}

void proc_write(struct proc *p, const char *text) {
        proc_send(p, text, strlen(text));
}

char *proc_line(struct proc *p, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                char *start = p->outbuf + p->taken;
                char *nl = memchr(p->outbuf + p->scanned, '\n', p->outlen - p->scanned);

                if (nl) {
                        p->taken = p->scanned = (size_t)(nl - p->outbuf) + 1;
                        return strndup(start, (size_t)(nl - start));
                }
                p->scanned = p->outlen;
                if (p->out < 0 || left_ms(deadline) == 0)
                        return NULL;
                pump(p, left_ms(deadline), NULL, NULL);
        }
}

bool proc_wait_output(struct proc *p, size_t n, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        while (p->outlen < n && p->out >= 0 && left_ms(deadline) > 0)
                pump(p, left_ms(deadline), NULL, NULL);
        return p->outlen >= n;
}

int proc_wait(struct proc *p, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        while (!p->exited || p->out >= 0 || p->err >= 0) {
                if (left_ms(deadline) == 0) {
                        kill(p->pid, SIGKILL);
                        waitpid(p->pid, NULL, 0);
                        cr_assert_fail("mcpvisorctl did not exit within %d ms; stdout: %.2000s; stderr: %s", timeout_ms,
                                       p->outbuf, p->errbuf);
                }
                pump(p, left_ms(deadline), NULL, NULL);
        }
        proc_close_stdin(p);
        close(p->pidfd);
        return p->status;
}

void proc_free(struct proc *p) {
        free(p->outbuf);
        free(p->errbuf);
        p->outbuf = p->errbuf = NULL;
        p->outcap = p->errcap = 0;
}
