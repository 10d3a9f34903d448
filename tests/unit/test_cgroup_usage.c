/* Unit tests for cgroup-usage.c, on a fake cgroup directory of the test's own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-usage.h"
#include "unit-helpers.h"

TestSuite(cgroup_usage, .fini = tmpdir_remove);

static void put(const char *name, const char *text) {
        int fd = open(tmp_path(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        cr_assert_geq(fd, 0);
        write_all(fd, text, strlen(text));
        close(fd);
}

/* What a unit's cgroup holds on 6.x (cgroup v2, memory, cpu and pids controllers). */
static void full_tree(void) {
        put("memory.current", "52428800\n");
        put("memory.peak", "73400320\n");
        put("cpu.stat", "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\nnr_periods 0\nnr_throttled 0\n"
                        "throttled_usec 0\n");
        put("pids.current", "7\n");
        put("memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n");
        put("pids.events", "max 3\n");
}

Test(cgroup_usage, every_figure) {
        struct cgroup_usage u;

        full_tree();
        cr_assert_eq(cgroup_usage_read(tmpdir_make(), &u), 0);
        cr_assert_eq(u.memory_current, 52428800);
        cr_assert_eq(u.memory_peak, 73400320);
        cr_assert_eq(u.cpu_usec, 1234567);
        cr_assert_eq(u.tasks, 7);
        cr_assert_eq(u.oom_kills, 1, "oom_kill, not oom_group_kill or max");
        cr_assert_eq(u.tasks_refused, 3);
}

/* memory.peak is 5.19's; a controller not enabled leaves its files out. */
Test(cgroup_usage, absent_files_are_unknown) {
        struct cgroup_usage u;

        put("memory.current", "4096\n");
        put("cpu.stat", "user_usec 5\n");
        cr_assert_eq(cgroup_usage_read(tmpdir_make(), &u), 0);
        cr_assert_eq(u.memory_current, 4096);
        cr_assert_eq(u.memory_peak, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.cpu_usec, CGROUP_USAGE_UNKNOWN, "no usage_usec line");
        cr_assert_eq(u.tasks, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.oom_kills, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.tasks_refused, CGROUP_USAGE_UNKNOWN);
}

Test(cgroup_usage, garbage_is_unknown) {
        struct cgroup_usage u;

        put("memory.current", "max\n");
        put("memory.peak", "");
        put("pids.current", "-1\n");
        put("cpu.stat", "usage_usec12\nusage_usec x\n");
        put("memory.events", "oom_kill\n");
        put("pids.events", "max 99999999999999999999999\n");
        cr_assert_eq(cgroup_usage_read(tmpdir_make(), &u), 0);
        cr_assert_eq(u.memory_current, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.memory_peak, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.tasks, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.cpu_usec, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.oom_kills, CGROUP_USAGE_UNKNOWN);
        cr_assert_eq(u.tasks_refused, CGROUP_USAGE_UNKNOWN);
}

Test(cgroup_usage, gone) {
        struct cgroup_usage u = { .tasks = 5 };

        cr_assert_eq(cgroup_usage_read(tmp_path("collected"), &u), -ENOENT);
        cr_assert_eq(u.tasks, 5, "left alone on failure");
        put("file", "x");
        cr_assert_eq(cgroup_usage_read(tmp_path("file"), &u), -ENOTDIR);
}

Test(cgroup_usage, path) {
        char *p = NULL;

        cr_assert_eq(cgroup_usage_path(CGROUP_ROOT, "/mcpvisor.slice/mcpvisor-fs@3.service", &p), 0);
        cr_assert_str_eq(p, "/sys/fs/cgroup/mcpvisor.slice/mcpvisor-fs@3.service");
        free(p);
        cr_assert_eq(cgroup_usage_path("/tmp/t", "/", &p), 0);
        cr_assert_str_eq(p, "/tmp/t");
        free(p);
        cr_assert_eq(cgroup_usage_path(CGROUP_ROOT, "", &p), -EINVAL);
        cr_assert_eq(cgroup_usage_path(CGROUP_ROOT, "mcpvisor.slice", &p), -EINVAL);
        cr_assert_eq(cgroup_usage_path(CGROUP_ROOT, "/a/../../etc", &p), -EINVAL);
        cr_assert_eq(cgroup_usage_path(CGROUP_ROOT, "/a/..", &p), -EINVAL);
        cr_assert_eq(cgroup_usage_path(CGROUP_ROOT, "/a/./b", &p), -EINVAL);
}

/* A unit's group through the host's tree: refused when not a plain absolute path, and
 * -ENOENT for one that does not exist (a unit collected already). */
Test(cgroup_usage, read_group_refuses_bad_groups) {
        struct cgroup_usage u;

        cr_assert_eq(cgroup_usage_read_group("relative", &u), -EINVAL);
        cr_assert_eq(cgroup_usage_read_group("/a/../b", &u), -EINVAL);
        cr_assert_eq(cgroup_usage_read_group("/mcpvisor-no-such.slice/none.service", &u), -ENOENT);
}
