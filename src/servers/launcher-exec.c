/* The exec launcher: the program spawned as the daemon's own child (process.c), in its own
 * process group, with PR_SET_PDEATHSIG, as the server's run_as user when it has one;
 * watched through a pidfd, reaped by it, or by the reaper's SIGCHLD when that comes first
 * (supervisor.c asks run_reap()). */
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "environment.h"
#include "run.h"
#include "macro.h"
#include "process.h"
#include "run-as.h"
#include "server.h"
#include "server-cause.h"
#include "server-config.h"

struct exec_run {
        struct process proc;
        char *program;      /* the program found, for the words of a failure told at its end */
};

static struct process *proc_of(const struct run *in) {
        return &((struct exec_run *)in->launcher)->proc;
}

static void on_exit_event(struct process *p, void *userdata) {
        if (process_reap(p) > 0)
                run_ended(userdata);
}

/* argv for exec: the command as given (what ps shows), then the configured args. */
static char **make_argv(const struct server_config *c) {
        size_t n = 0;
        char **argv;

        while (c->args && c->args[n])
                n++;
        argv = calloc(n + 2, sizeof *argv);
        if (!argv)
                return NULL;
        argv[0] = c->command;
        for (size_t i = 0; i < n; i++)
                argv[i + 1] = c->args[i];
        return argv;
}

/* The words for a step of taking another user's identity. */
static const char *identity_step(enum process_step step) {
        switch (step) {
        case PROCESS_STEP_GROUPS:
                return "groups (setgroups)";
        case PROCESS_STEP_GID:
                return "gid (setresgid)";
        default:
                return "uid (setresuid)";
        }
}

/* A failure at one of these steps asks for no restart: the next start would meet it again. */
static bool identity_step_failed(enum process_step step) {
        return step == PROCESS_STEP_GROUPS || step == PROCESS_STEP_GID || step == PROCESS_STEP_UID;
}

/* What a failed spawn means; a program that cannot be found is explained by environment.c. */
static int explain(int r, enum process_step step, const struct server_config *c, const struct run_as *as,
                   const char *program, char **error) {
        int q;

        if (run_explain_shortage(r, error))
                return r;
        if (as && identity_step_failed(step))
                q = asprintf(error, "cannot run '%s' as user %s: taking its %s failed: %s", c->name, as->user,
                             identity_step(step), strerror(-r));
        else if (step == PROCESS_STEP_CWD)
                q = asprintf(error, "cannot enter %s, its working directory%s%s: %s (check cwd)", c->cwd,
                             as ? ", as user " : "", as ? as->user : "", strerror(-r));
        else if (r == -ENOENT && c->cwd)
                q = asprintf(error, "cannot run %s in %s: %s (check command and cwd)", program, c->cwd, strerror(-r));
        else if (r == -EACCES && as)
                q = asprintf(error, "permission denied running %s as user %s (is it executable and readable by that user?)",
                             program, as->user);
        else if (r == -EACCES)
                q = asprintf(error, "permission denied running %s (is it executable and readable by this user?)", program);
        else
                q = asprintf(error, "cannot run %s: %s", program, strerror(-r));
        if (q < 0)
                *error = NULL;
        return r;
}

static void close_stdio(const int fds[3]) {
        for (int k = 0; k < 3; k++)
                close(fds[k]);
}

/* Another user's run (the server's run_as) is refused before anything is made when this
 * daemon cannot take that user's identity; the child takes it before exec. */
static int exec_start(struct run *in, const struct server_config *c, char **env, const struct run_stdio *stdio,
                      char **error) {
        const int fds[3] = { stdio->in, stdio->out, stdio->err };
        const struct run_as *as = in->server->run_as;
        _cleanup_free_ char *program = NULL;
        _cleanup_free_ char **argv = NULL;
        struct exec_run *x = NULL;
        int r;

        r = run_as_check(as, c->name, geteuid(), false, error);
        if (r == 0)
                r = environment_find_server_program(c, environment_get(env, "PATH"), &program, error);
        if (r == 0 && (!(argv = make_argv(c)) || !(x = calloc(1, sizeof *x)) || !(x->program = strdup(program))))
                r = -ENOMEM;
        if (r < 0) {
                close_stdio(fds);
                if (x)
                        free(x->program);
                free(x);
                return r;
        }
        r = process_spawn(&x->proc, run_event_base(in), program, argv, env, c->cwd, as, fds, on_exit_event, in);
        if (r < 0) {
                enum process_step step = x->proc.failed_step;

                process_done(&x->proc);
                free(x->program);
                free(x);
                explain(r, step, c, as, program, error);
                /* The user's identity refused: the next start would be refused the same. */
                return identity_step_failed(step) ? -EPERM : r;
        }
        in->launcher = x;
        return 0;
}

static int exec_terminate(struct run *in) {
        return process_signal_group(proc_of(in), SIGTERM);
}

static int exec_kill(struct run *in) {
        return process_signal_group(proc_of(in), SIGKILL);
}

static void exec_kill_wait(struct run *in) {
        struct process *p = proc_of(in);

        process_signal_group(p, SIGKILL);
        (void)waitpid(p->pid, NULL, 0);
        p->reaped = true;
}

/* Reaped here only if its pidfd agrees; otherwise the reaper's waitpid takes it, so the
 * reaper's loop can never spin on one zombie. */
static bool exec_reap(struct run *in) {
        struct process *p = proc_of(in);

        if (p->reaped || process_reap(p) <= 0)
                return false;
        run_ended(in);
        return true;
}

/* Another user's child, not waited for (process.h), tells at its end what failed before
 * its exec: said as a failed start would have said it, and no restart asked for when it
 * was the user's identity, the program or its directory (only a shortage may pass). */
static void exec_describe_end(const struct run *in, struct server_exit *ret) {
        const struct exec_run *x = in->launcher;
        const struct process *p = proc_of(in);
        _cleanup_free_ char *reason = NULL;
        int r = -p->failed_error;

        *ret = (struct server_exit){ .code = p->code, .status = p->status };
        if (r == 0)
                return;
        explain(r, p->failed_step, in->server->config, in->server->run_as, x->program, &reason);
        server_exit_set_reason(ret, reason ? reason : strerror(-r));
        ret->no_retry = r != -EAGAIN && r != -ENOMEM && r != -EMFILE && r != -ENFILE;
}

static const char *exec_describe(const struct run *in, char *buf, size_t size) {
        snprintf(buf, size, "pid %d", in->launcher ? (int)proc_of(in)->pid : 0);
        return buf;
}

static pid_t exec_main_pid(const struct run *in) {
        return in->launcher ? proc_of(in)->pid : 0;
}

/* The "VmRSS:" line's kB of /proc/PID/status text, in bytes. */
static uint64_t status_kb(const char *text, const char *key) {
        const char *line = strstr(text, key);
        unsigned long long kb;

        if (!line || sscanf(line + strlen(key), " %llu kB", &kb) != 1)
                return RUN_USAGE_UNKNOWN;
        return (uint64_t)kb * 1024;
}

static bool read_proc(pid_t pid, const char *name, char *buf, size_t size) {
        char path[64];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || (n = read(fd, buf, size - 1)) < 0)
                return false;
        buf[n] = '\0';
        return true;
}

/* The main process only, as /proc shows it (its resident memory and peak, its CPU time):
 * what it started besides is not counted, and tasks are not known. */
static void exec_usage(const struct run *in, struct run_usage *ret) {
        const struct process *p = in->launcher ? proc_of(in) : NULL;
        unsigned long long utime, stime;
        char buf[4096];
        const char *after;
        long tick = sysconf(_SC_CLK_TCK);

        *ret = (struct run_usage){ .memory_current = RUN_USAGE_UNKNOWN, .memory_peak = RUN_USAGE_UNKNOWN,
                                   .cpu_usec = RUN_USAGE_UNKNOWN, .tasks = RUN_USAGE_UNKNOWN };
        if (!p || p->reaped || p->pid <= 0)
                return;
        if (read_proc(p->pid, "status", buf, sizeof buf)) {
                ret->memory_current = status_kb(buf, "VmRSS:");
                ret->memory_peak = status_kb(buf, "VmHWM:");
        }
        /* utime and stime are fields 14 and 15, counted after the ")" that ends comm. */
        if (tick > 0 && read_proc(p->pid, "stat", buf, sizeof buf) && (after = strrchr(buf, ')')) &&
            sscanf(after + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2)
                ret->cpu_usec = (uint64_t)(utime + stime) * 1000000 / (uint64_t)tick;
}

/* Confinement keys are never ignored: a server with one that is run by exec fails its start. */
static int exec_check(const struct server_config *c, char **error) {
        return server_config_check_launcher(c, LAUNCHER_EXEC, error) < 0 ? -EPERM : 0;
}

static const char *exec_target(const struct server_config *c) {
        return c->command;
}

static void exec_free(struct run *in) {
        process_done(proc_of(in));
        free(((struct exec_run *)in->launcher)->program);
        free(in->launcher);
        in->launcher = NULL;
}

const struct run_ops run_exec_ops = {
        .name = "exec",
        .kind = LAUNCHER_EXEC,
        .words = &run_process_words,
        .target = exec_target,
        .writes_stderr = true,
        .check = exec_check,
        .start = exec_start,
        .terminate = exec_terminate,
        .kill = exec_kill,
        .kill_wait = exec_kill_wait,
        .reap = exec_reap,
        .describe_end = exec_describe_end,
        .describe = exec_describe,
        .main_pid = exec_main_pid,
        .usage = exec_usage,
        .free = exec_free,
};
