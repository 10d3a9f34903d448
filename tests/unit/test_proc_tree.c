/* Unit tests for proc-tree.c: /proc/PID/stat read past a command name holding ") ", the
 * start time that tells a reused pid apart, and the walk up to a given ancestor. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc-tree.h"

/* A child named "a) 1 2 (b", which waits for the pipe's end; returns its pid. */
static pid_t start_child(int *done_fd) {
        int fds[2];
        pid_t pid;
        char c;

        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                close(fds[1]);
                prctl(PR_SET_NAME, "a) 1 2 (b", 0, 0, 0);
                (void)!read(fds[0], &c, 1);
                _exit(0);
        }
        close(fds[0]);
        *done_fd = fds[1];
        return pid;
}

static void end_child(pid_t pid, int done_fd) {
        close(done_fd);
        cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

Test(proc_tree, stat_of_ourselves) {
        struct proc_entry e;

        cr_assert_eq(proc_stat_read(getpid(), &e), 0);
        cr_assert_eq(e.pid, getpid());
        cr_assert_eq(e.ppid, getppid());
        cr_assert_gt(e.start, 0);
}

Test(proc_tree, command_name_with_parenthesis_and_numbers) {
        struct proc_entry self, child;
        int done;
        pid_t pid = start_child(&done);

        for (int i = 0; i < 1000 && proc_stat_read(pid, &child) == 0; i++) { /* until the name is set */
                char path[64], name[32] = "";
                FILE *f;

                snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
                f = fopen(path, "re");
                if (f && fgets(name, sizeof name, f) && strncmp(name, "a) 1 2 (b", 9) == 0) {
                        fclose(f);
                        break;
                }
                if (f)
                        fclose(f);
                usleep(1000);
        }
        cr_assert_eq(proc_stat_read(pid, &child), 0);
        cr_assert_eq(proc_stat_read(getpid(), &self), 0);
        cr_assert_eq(child.ppid, getpid(), "ppid %d read from a name with ') '", (int)child.ppid);
        cr_assert_geq(child.start, self.start, "a child starts no earlier than its parent");
        end_child(pid, done);
}

Test(proc_tree, zombie_and_gone_are_esrch) {
        struct proc_entry e;
        int done;
        pid_t pid = start_child(&done);
        siginfo_t si;

        close(done);
        cr_assert_eq(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0); /* a zombie now */
        cr_assert_eq(proc_stat_read(pid, &e), -ESRCH);
        cr_assert_eq(waitpid(pid, NULL, 0), pid);
        cr_assert_eq(proc_stat_read(pid, &e), -ESRCH);
}

Test(proc_tree, below_finds_the_ancestor_under_top) {
        struct proc_tree t;
        const struct proc_entry *child, *self;
        int done;
        pid_t pid = start_child(&done);

        cr_assert_eq(proc_tree_read(&t, 1 << 20), 0);
        child = proc_tree_find(&t, pid);
        self = proc_tree_find(&t, getpid());
        cr_assert_not_null(child);
        cr_assert_not_null(self);
        cr_assert_eq(proc_tree_below(&t, child, getpid(), 64), child, "its parent is top");
        cr_assert_eq(proc_tree_below(&t, child, getppid(), 64), self, "we are under our parent");
        cr_assert_null(proc_tree_below(&t, child, getppid(), 1), "beyond max_depth");
        cr_assert_null(proc_tree_below(&t, self, pid, 64), "not an ancestor");
        cr_assert_null(proc_tree_find(&t, 0));
        for (size_t i = 1; i < t.n; i++)
                cr_assert_lt(t.procs[i - 1].pid, t.procs[i].pid, "sorted by pid");
        proc_tree_done(&t);
        end_child(pid, done);
}

Test(proc_tree, read_stops_at_max) {
        struct proc_tree t;

        cr_assert_eq(proc_tree_read(&t, 2), 0);
        cr_assert_leq(t.n, 2);
        proc_tree_done(&t);
}

/* Read a few at a time, the tree is the same as in one go: here, us and our child. */
Test(proc_tree, reader_reads_in_steps) {
        struct proc_tree_reader rd;
        unsigned steps = 0;
        int done, r;
        pid_t pid = start_child(&done);

        cr_assert_eq(proc_tree_reader_open(&rd, 1 << 20), 0);
        while ((r = proc_tree_reader_step(&rd, 2)) == 0)
                steps++;
        cr_assert_eq(r, 1);
        cr_assert_gt(steps, 0, "more than two processes run, so more than one step");
        cr_assert_eq(proc_tree_reader_step(&rd, 2), 1, "done stays done");
        cr_assert_not_null(proc_tree_find(&rd.tree, getpid()));
        cr_assert_eq(proc_tree_find(&rd.tree, pid)->ppid, getpid());
        for (size_t i = 1; i < rd.tree.n; i++)
                cr_assert_lt(rd.tree.procs[i - 1].pid, rd.tree.procs[i].pid, "sorted by pid");
        proc_tree_reader_done(&rd);
        end_child(pid, done);
}
