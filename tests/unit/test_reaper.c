/* Unit tests for reaper.c's decision about a child of the daemon that no mark, no record
 * and no server's own pid attributes: ended, unless it came to the daemon while the scan
 * read the tree (its parent died meanwhile), in which case any run that was running then
 * may own it and it is kept until all of those have ended (issue 14: a running server's
 * grandchild was ended about one time in four under load). The test process stands for the
 * daemon: its children are real, the tree the scan sees is made here. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "environment.h"
#include "log.h"
#include "proc-tree.h"
#include "run.h"
#include "reaper.h"
#include "launcher.h"
#include "server.h"
#include "supervisor.h"
#include "unit-helpers.h"

static struct logger lg;
static struct reaper r;

/* The daemon's own answers (supervisor_reaper_ops) about two servers, whose runs the tests
 * start and end: a run of this launcher has no pid, so no child is a server's own. */
static pid_t no_pid(const struct run *in) {
        return 0;
}

static const struct run_ops launcher = { .name = "test", .main_pid = no_pid };
static struct server_config configs[2] = { { .name = "a", .kill_timeout = 10 }, { .name = "b", .kill_timeout = 10 } };
static struct server servers[2] = { { .config = &configs[0] }, { .config = &configs[1] } };
static struct server *list[2] = { &servers[0], &servers[1] };
static struct run runs[2];
static struct supervisor sv = { .servers = list, .n_servers = 2 };

/* Server i runs its run numbered number, the newest started so far. */
static void run_starts(int i, uint64_t number) {
        runs[i] = (struct run){ .server = &servers[i], .number = number, .ops = &launcher };
        servers[i].run = &runs[i];
        sv.next_run = number;
}

static void run_ends(int i) {
        servers[i].run = NULL;
}

static void setup(void) {
        /* No mark may attribute the children: they inherit this environment. */
        unsetenv(ENV_SERVER);
        unsetenv(ENV_INSTANCE);
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(reaper_init(&r, loop_start(), &lg, &supervisor_reaper_ops, &sv), 0);
}

static void teardown(void) {
        reaper_done(&r);
        loop_stop();
}

TestSuite(reaper, .init = setup, .fini = teardown, .timeout = 30);

/* A child of ours that waits to be ended. */
static pid_t start_child(void) {
        pid_t pid = fork();

        cr_assert_geq(pid, 0);
        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

/* What a scan reads of our child pid. */
static struct proc_tree tree_of(pid_t pid, struct proc_entry *e) {
        cr_assert_eq(proc_stat_read(pid, e), 0);
        cr_assert_eq(e->ppid, getpid());
        return (struct proc_tree){ .procs = e, .n = 1 };
}

/* It was ended: SIGTERM, then reaped here. */
static void expect_ended(pid_t pid) {
        int status;

        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
}

static void expect_alive(pid_t pid) {
        cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "pid %d was ended", (int)pid);
}

/* The rule without the race: a child the scan found ours from its start, that nothing
 * attributes, is left behind (the daemon starts nothing but servers). */
Test(reaper, unattributed_child_of_ours_from_the_start_ended) {
        pid_t pid = start_child();
        struct proc_entry e;
        struct proc_tree t = tree_of(pid, &e);

        run_starts(0, 3);
        reaper_scan_begin(&r);
        cr_assert_eq(reaper_scan_tree(&r, &t), 1);
        expect_ended(pid);
}

/* It became our child after the scan began (as a grandchild does when its parent dies
 * between the scan's start and its read of the grandchild): kept while a run numbered up
 * to the newest then runs, by this scan and by the next ones, which find it ours from
 * their start and go by what this one recorded; ended once none of those runs is left. */
Test(reaper, child_reparented_while_the_tree_was_read_kept_while_its_runs_live) {
        struct proc_entry e;
        struct proc_tree t;
        pid_t pid;

        run_starts(0, 7);
        reaper_scan_begin(&r);
        pid = start_child();
        t = tree_of(pid, &e);
        cr_assert_eq(reaper_scan_tree(&r, &t), 0, "ended on a guess");
        expect_alive(pid);

        run_starts(1, 9); /* a run started since: it cannot own what came before it */
        reaper_scan_begin(&r);
        cr_assert_eq(reaper_scan_tree(&r, &t), 0, "ended by the next scan");
        expect_alive(pid);

        run_ends(0); /* b's run 9 runs on, but took no part */
        reaper_scan_begin(&r);
        cr_assert_eq(reaper_scan_tree(&r, &t), 1, "kept once its runs were gone");
        expect_ended(pid);
}

/* ---- processes of another user (a server run as its user, run-as.h) ---- */

/* In a child: becomes nobody, then execs sleep with env; returns never. */
static void exec_as_nobody(char *const *env) {
        struct passwd *pw = getpwnam("nobody");

        if (!pw || setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
            setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
                _exit(126);
        execve("/bin/sleep", (char *[]){ "sleep", "60", NULL }, env);
        _exit(127);
}

/* Waits until pid has exec'd: ready's write end, close-on-exec, reads EOF then. */
static void wait_exec(int ready[2]) {
        char c;

        close(ready[1]);
        cr_assert_eq(read(ready[0], &c, 1), 0);
        close(ready[0]);
}

/* A root daemon reads the marks of a process of nobody's (its environ is not ours to
 * read otherwise): attributed to the run it names, kept while that run lives, ended
 * after. */
Test(reaper, another_users_process_attributed_by_its_marks) {
        char *env[] = { ENV_SERVER "=a", ENV_INSTANCE "=3", NULL };
        struct proc_entry e;
        struct proc_tree t;
        int ready[2];
        pid_t pid;

        if (geteuid() != 0)
                cr_skip_test("takes another user's uid: root only");
        run_starts(0, 3);
        cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0)
                exec_as_nobody(env);
        wait_exec(ready);
        t = tree_of(pid, &e);
        reaper_scan_begin(&r);
        cr_assert_eq(reaper_scan_tree(&r, &t), 0, "its marks were not read");
        expect_alive(pid);
        run_ends(0);
        reaper_scan_begin(&r);
        cr_assert_eq(reaper_scan_tree(&r, &t), 1);
        expect_ended(pid);
}

/* What a dead predecessor left running as another user (a per-user instance's
 * grandchild), re-parented elsewhere, is ended by a root daemon on the same socket. */
Test(reaper, predecessors_process_of_another_user_ended) {
        char *env[] = { ENV_SERVER "=a", ENV_DAEMON "=/run/test-run-as-predecessor.sock", NULL };
        int ready[2], status;
        pid_t child, pid = 0;
        int pids[2];

        if (geteuid() != 0)
                cr_skip_test("takes another user's uid: root only");
        /* Not re-parented to us, as a predecessor's processes are not. */
        cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
        cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(pids, O_CLOEXEC), 0);
        child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
                pid_t grandchild = fork();

                if (grandchild == 0)
                        exec_as_nobody(env);
                (void)!write(pids[1], &grandchild, sizeof grandchild);
                _exit(grandchild > 0 ? 0 : 1);
        }
        cr_assert_eq(waitpid(child, &status, 0), child);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(pids[1]);
        cr_assert_eq(read(pids[0], &pid, sizeof pid), (ssize_t)sizeof pid);
        close(pids[0]);
        wait_exec(ready);
        cr_assert_eq(reaper_end_predecessors(&r, "/run/test-run-as-predecessor.sock"), 1);
        WAIT_UNTIL(r.n_leftovers == 0);
        cr_assert(kill(pid, 0) < 0 || waitpid(pid, NULL, WNOHANG) < 0, "pid %d still runs", (int)pid);
}
