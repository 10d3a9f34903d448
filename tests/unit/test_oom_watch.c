/* Unit tests for oom-watch.c: bad groups and missing cgroups refused, and, as root on a
 * host with a cgroup v1 memory hierarchy, a real OOM kill told by the kernel, also where
 * the cgroup file system is read-only to the watcher and the registrar unit's command
 * (unit_properties_build_oom_registrar()) registers it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup-usage.h"
#include "oom-watch.h"
#include "unit-properties.h"
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
        cr_assert_eq(oom_watch_register(w), 0);
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
        cr_assert_eq(oom_watch_register(w), 0);
        cr_assert_eq(rmdir(dir), 0, "%s: %s", dir, strerror(errno));
        run_for(100000); /* no condition to wait on for an absence */
        cr_assert_not(oom_watch_killed(w));
        oom_watch_free(w);
}

/* A child that waits for a byte on go, then runs fn; returns its pid. */
static pid_t child_on(int go, void (*fn)(void *), void *userdata) {
        pid_t pid = fork();
        char c;

        cr_assert_geq(pid, 0);
        if (pid == 0) {
                if (read(go, &c, 1) != 1)
                        _exit(3);
                fn(userdata);
                _exit(4);
        }
        return pid;
}

struct registrar {
        const struct unit_property *exec;
        int efd, control;
};

/* What the manager does for the registrar unit: its fds as stdin and stderr, its command. */
static void run_registrar(void *userdata) {
        struct registrar *g = userdata;

        if (dup2(g->efd, STDIN_FILENO) < 0 || dup2(g->control, STDERR_FILENO) < 0)
                _exit(5);
        execv(g->exec->string, g->exec->strv);
        _exit(6);
}

static void allocate_in(void *userdata) {
        const char *procs = userdata;
        char self[32], *p;
        int fd = open(procs, O_WRONLY | O_CLOEXEC);

        snprintf(self, sizeof self, "%d", (int)getpid());
        if (fd < 0 || write(fd, self, strlen(self)) < 0)
                _exit(2);
        close(fd);
        p = malloc(64 << 20);
        for (size_t i = 0; p && i < (64 << 20); i += 4096)
                p[i] = 1;
        _exit(0);
}

/* The cgroup file system read-only to the daemon (ProtectControlGroups=yes): registering
 * itself fails with EROFS; the registrar unit's command, run where it is writable with the
 * watch's descriptors as the manager passes them, registers it, and the kernel then tells
 * the daemon's eventfd of an OOM kill. */
Test(oom_watch, read_only_cgroups_registered_by_the_registrar) {
        static const char root[] = CGROUP_ROOT "/memory";
        char group[64], dir[160], limit[192], procs[192];
        struct event_base *base = loop_start();
        struct unit_properties p = { 0 };
        struct registrar g = { 0 };
        struct oom_watch *w = NULL;
        const char *event_control;
        int go_registrar[2], go_alloc[2], status;
        pid_t registrar, alloc;

        if (geteuid() != 0 || access(root, W_OK) != 0 || access(CGROUP_ROOT "/memory/cgroup.event_control", F_OK) != 0)
                cr_skip_test("needs root and a cgroup v1 memory hierarchy at %s (a host of the hybrid layout)", root);
        snprintf(group, sizeof group, "/mcpvisor-oom-test-ro.%d", (int)getpid());
        snprintf(dir, sizeof dir, "%s%s", root, group);
        snprintf(limit, sizeof limit, "%s/memory.limit_in_bytes", dir);
        snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
        cr_assert_eq(mkdir(dir, 0755), 0, "%s: %s", dir, strerror(errno));
        write_file(limit, "8388608");
        cr_assert_eq(oom_watch_new(base, root, group, &w), 0);
        oom_watch_handover(w, &g.efd, &g.control, &event_control);
        cr_assert_eq(unit_properties_build_oom_registrar("mcpvisor-x@1a2b3c4d-1.service", event_control, g.efd, g.control, &p), 0);
        cr_assert_str_eq(p.unit, "mcpvisor-x@1a2b3c4d-1-oom.service");
        g.exec = unit_properties_find(&p, "ExecStartEx");
        cr_assert_not_null(g.exec);
        /* The manager and the server live outside the daemon's mount namespace. */
        cr_assert_eq(pipe2(go_registrar, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(go_alloc, O_CLOEXEC), 0);
        registrar = child_on(go_registrar[0], run_registrar, &g);
        alloc = child_on(go_alloc[0], allocate_in, procs);
        cr_assert_eq(unshare(CLONE_NEWNS), 0, "%s", strerror(errno));
        cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "%s", strerror(errno));
        cr_assert_eq(mount(root, root, NULL, MS_BIND, NULL), 0, "%s", strerror(errno));
        cr_assert_eq(mount(NULL, root, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0, "%s", strerror(errno));
        cr_assert_eq(oom_watch_register(w), -EROFS, "the daemon's own registration, under ProtectControlGroups=yes");

        cr_assert_eq(write(go_registrar[1], "g", 1), 1);
        cr_assert_eq(waitpid(registrar, &status, 0), registrar);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the registrar's command failed: status %#x", status);
        oom_watch_registered(w);
        cr_assert(fcntl(g.efd, F_GETFL) & O_NONBLOCK);
        cr_assert_not(oom_watch_killed(w));

        cr_assert_eq(write(go_alloc[1], "g", 1), 1);
        cr_assert_eq(waitpid(alloc, &status, 0), alloc);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child was not OOM-killed: status %#x", status);
        WAIT_UNTIL(oom_watch_killed(w));
        unit_properties_done(&p);
        oom_watch_free(w);
        cr_assert_eq(umount(root), 0);
        cr_assert_eq(rmdir(dir), 0, "%s: %s", dir, strerror(errno));
}
