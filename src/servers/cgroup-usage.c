/* A cgroup's figures from its files; see cgroup-usage.h. */
#include "cgroup-usage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

/* The files read are a few lines each; cpu.stat, the longest, is about 200 bytes. */
#define CGROUP_FILE_MAX 4096

const char *cgroup_usage_root(void) {
        if (access(CGROUP_ROOT "/cgroup.controllers", F_OK) < 0 && access(CGROUP_ROOT "/unified/cgroup.controllers", F_OK) == 0)
                return CGROUP_ROOT "/unified";
        return CGROUP_ROOT;
}

int cgroup_usage_path(const char *root, const char *control_group, char **ret) {
        if (control_group[0] != '/' || strstr(control_group, "/../") || strstr(control_group, "/./") ||
            (strlen(control_group) >= 3 && strcmp(control_group + strlen(control_group) - 3, "/..") == 0))
                return -EINVAL;
        return asprintf(ret, "%s%s", root, strcmp(control_group, "/") == 0 ? "" : control_group) < 0 ? -ENOMEM : 0;
}

/* The text of dir/name, NUL-terminated; false when it cannot be read. */
static bool read_text(int dir, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        ssize_t n;

        if (fd < 0)
                return false;
        do
                n = read(fd, buf, size - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return false;
        buf[n] = '\0';
        return true;
}

static uint64_t parse_number(const char *s) {
        char *end;
        unsigned long long v;

        if (*s < '0' || *s > '9')
                return CGROUP_USAGE_UNKNOWN;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || (*end && *end != '\n' && *end != ' '))
                return CGROUP_USAGE_UNKNOWN;
        return (uint64_t)v;
}

/* A file of one number. */
static uint64_t read_number(int dir, const char *name) {
        char buf[64];

        return read_text(dir, name, buf, sizeof buf) ? parse_number(buf) : CGROUP_USAGE_UNKNOWN;
}

/* A flat keyed file ("key value" per line): the value of key. */
static uint64_t read_key(int dir, const char *name, const char *key) {
        char buf[CGROUP_FILE_MAX];
        size_t len = strlen(key);

        if (!read_text(dir, name, buf, sizeof buf))
                return CGROUP_USAGE_UNKNOWN;
        for (const char *line = buf; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, key, len) == 0 && line[len] == ' ')
                        return parse_number(line + len + 1);
        return CGROUP_USAGE_UNKNOWN;
}

int cgroup_usage_read(const char *path, struct cgroup_usage *ret) {
        _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (dir < 0)
                return -errno;
        *ret = (struct cgroup_usage){
                .memory_current = read_number(dir, "memory.current"),
                .memory_peak = read_number(dir, "memory.peak"),
                .cpu_usec = read_key(dir, "cpu.stat", "usage_usec"),
                .tasks = read_number(dir, "pids.current"),
                .oom_kills = read_key(dir, "memory.events", "oom_kill"),
                .tasks_refused = read_key(dir, "pids.events", "max"),
        };
        return 0;
}

/* The figure of name in the v1 hierarchy CGROUP_ROOT/controller, for control_group. */
static uint64_t read_v1(const char *controller, const char *control_group, const char *name, const char *key) {
        _cleanup_free_ char *root = NULL, *path = NULL;
        _cleanup_close_ int dir = -1;

        if (asprintf(&root, CGROUP_ROOT "/%s", controller) < 0 || cgroup_usage_path(root, control_group, &path) < 0 ||
            (dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return CGROUP_USAGE_UNKNOWN;
        return key ? read_key(dir, name, key) : read_number(dir, name);
}

int cgroup_usage_read_group(const char *control_group, struct cgroup_usage *ret) {
        _cleanup_free_ char *dir = NULL;
        int r;

        r = cgroup_usage_path(cgroup_usage_root(), control_group, &dir);
        if (r == 0)
                r = cgroup_usage_read(dir, ret);
        if (r < 0)
                return r;
        /* The unified tree of a hybrid host has no memory or pids controller: v1 has them. */
        if (ret->memory_current == CGROUP_USAGE_UNKNOWN)
                ret->memory_current = read_v1("memory", control_group, "memory.usage_in_bytes", NULL);
        if (ret->memory_peak == CGROUP_USAGE_UNKNOWN)
                ret->memory_peak = read_v1("memory", control_group, "memory.max_usage_in_bytes", NULL);
        if (ret->tasks == CGROUP_USAGE_UNKNOWN)
                ret->tasks = read_v1("pids", control_group, "pids.current", NULL);
        if (ret->tasks_refused == CGROUP_USAGE_UNKNOWN)
                ret->tasks_refused = read_v1("pids", control_group, "pids.events", "max");
        return 0;
}
