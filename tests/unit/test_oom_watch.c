/* Unit tests for oom-watch.c: bad groups and missing cgroups refused, and, as root on a
 * host with a cgroup v1 memory hierarchy, a real OOM kill told by the kernel. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup-usage.h"
#include "oom-watch.h"
#include "unit-helpers.h"

static void teardown(void) {
        loop_stop();
        tmpdir_remove();
}

TestSuite(oom_watch, .fini = teardown);

Test(oom_watch, bad_groups_refused) {
        struct event_base *base = loop_start();
        struct oom_watch *w = NULL;

        cr_assert_eq(oom_watch_new(base, tmpdir_make(), "relative", &w), -EINVAL);
        cr_assert_eq(oom_watch_new(base, tmpdir_make(), "/a/../b", &w), -EINVAL);
        cr_assert_eq(oom_watch_new(base, tmpdir_make(), "/a/..", &w), -EINVAL);
        cr_assert_null(w);
}

Test(oom_watch, missing_cgroup_is_enoent) {
        struct event_base *base = loop_start();
        struct oom_watch *w = NULL;

        cr_assert_eq(oom_watch_new(base, tmpdir_make(), "/no.slice/none.service", &w), -ENOENT,
                     "no such cgroup: a unified host, whose manager tells");
        cr_assert_eq(oom_watch_new(base, "/nonexistent-root", "/", &w), -ENOENT);
        /* A directory that is no memory cgroup: no memory.oom_control. */
        cr_assert_eq(mkdir(tmp_path("plain"), 0755), 0);
        cr_assert_eq(oom_watch_new(base, tmpdir_make(), "/plain", &w), -ENOENT);
        cr_assert_null(w);
        cr_assert_not(oom_watch_killed(NULL));
        oom_watch_free(NULL);
}

static void write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        write_all(fd, text, strlen(text));
        close(fd);
}

/* A child in a v1 memory cgroup of 8 MiB touching 64 MiB: the OOM killer ends it, and
 * the watch says so; the removal of the cgroup afterwards is no second kill. */
Test(oom_watch, a_real_oom_kill_told) {
        static const char root[] = CGROUP_ROOT "/memory";
        char group[64], dir[160], procs[192];
        struct event_base *base = loop_start();
        struct oom_watch *w = NULL;
        int status;
        pid_t pid;

        if (geteuid() != 0 || access(root, W_OK) != 0 || access(CGROUP_ROOT "/memory/cgroup.event_control", F_OK) != 0)
                cr_skip_test("needs root and a cgroup v1 memory hierarchy at %s (a host of the hybrid layout)", root);
        snprintf(group, sizeof group, "/mcpvisor-oom-test.%d", (int)getpid());
        snprintf(dir, sizeof dir, "%s%s", root, group);
        cr_assert_eq(mkdir(dir, 0755), 0, "%s: %s", dir, strerror(errno));
        snprintf(procs, sizeof procs, "%s/memory.limit_in_bytes", dir);
        write_file(procs, "8388608");
        cr_assert_eq(oom_watch_new(base, root, group, &w), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                char self[32], *p;

                snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
                snprintf(self, sizeof self, "%d", (int)getpid());
                int fd = open(procs, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, self, strlen(self)) < 0)
                        _exit(2);
                close(fd);
                p = malloc(64 << 20);
                for (size_t i = 0; p && i < (64 << 20); i += 4096)
                        p[i] = 1;
                _exit(0);
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child was not OOM-killed: status %#x", status);
        WAIT_UNTIL(oom_watch_killed(w));
        cr_assert_eq(rmdir(dir), 0, "%s: %s", dir, strerror(errno));
        run_for(50000); /* the removal signals the eventfd too */
        cr_assert(oom_watch_killed(w));
        oom_watch_free(w);
}

/* A cgroup removed with no OOM in it: its removal signals the eventfd, and is no kill. */
Test(oom_watch, removal_is_no_kill) {
        static const char root[] = CGROUP_ROOT "/memory";
        char group[64], dir[160];
        struct event_base *base = loop_start();
        struct oom_watch *w = NULL;

        if (geteuid() != 0 || access(root, W_OK) != 0 || access(CGROUP_ROOT "/memory/cgroup.event_control", F_OK) != 0)
                cr_skip_test("needs root and a cgroup v1 memory hierarchy at %s (a host of the hybrid layout)", root);
        snprintf(group, sizeof group, "/mcpvisor-oom-test-rm.%d", (int)getpid());
        snprintf(dir, sizeof dir, "%s%s", root, group);
        cr_assert_eq(mkdir(dir, 0755), 0, "%s: %s", dir, strerror(errno));
        cr_assert_eq(oom_watch_new(base, root, group, &w), 0);
        cr_assert_eq(rmdir(dir), 0, "%s: %s", dir, strerror(errno));
        run_for(100000); /* no condition to wait on for an absence */
        cr_assert_not(oom_watch_killed(w));
        oom_watch_free(w);
}
