/* What a server's unit uses, read from its cgroup (cgroup v2): memory now and at its
 * peak, CPU time, tasks, and the kernel's counts of OOM kills and of forks refused at
 * pids.max, for the status answer and for telling how a run ended. Plain file reads of
 * the cgroup's directory; the unit's ControlGroup= property names it. */
#pragma once

#include <stdint.h>

/* A figure whose file or key is absent: a controller not enabled for the cgroup, or
 * memory.peak on kernels before 5.19. */
#define CGROUP_USAGE_UNKNOWN UINT64_MAX

#define CGROUP_ROOT "/sys/fs/cgroup"

struct cgroup_usage {
        uint64_t memory_current; /* memory.current, bytes */
        uint64_t memory_peak;    /* memory.peak, bytes */
        uint64_t cpu_usec;       /* cpu.stat usage_usec */
        uint64_t tasks;          /* pids.current */
        uint64_t oom_kills;      /* memory.events oom_kill: processes the OOM killer ended (memoryMax) */
        uint64_t tasks_refused;  /* pids.events max: forks refused at pids.max (tasksMax) */
};

/* Where the cgroup v2 hierarchy is mounted: CGROUP_ROOT, or its "unified" directory on a
 * host of the hybrid layout (v1 controllers, systemd's v2 tree beside them), where the
 * v2 tree holds no memory or pids controller and those figures stay unknown. */
const char *cgroup_usage_root(void);

/* The directory of control_group (a unit's ControlGroup=, "/mcpvisor.slice/...") below
 * root (CGROUP_ROOT; a test's own tree). -EINVAL for a group that is not an absolute,
 * plain path. */
int cgroup_usage_path(const char *root, const char *control_group, char **ret);

/* Reads every figure of the cgroup at dir; each one absent is CGROUP_USAGE_UNKNOWN.
 * -ENOENT when dir is gone (the unit was collected), another negative errno when it
 * cannot be opened. */
int cgroup_usage_read(const char *dir, struct cgroup_usage *ret);

/* The figures of control_group (a unit's ControlGroup=) in the cgroup v2 tree, and on a
 * host of the hybrid layout those the v2 tree lacks (memory: memory.usage_in_bytes and
 * memory.max_usage_in_bytes; pids: pids.current, pids.events) from the v1 hierarchies at
 * CGROUP_ROOT/memory and CGROUP_ROOT/pids. Errors as cgroup_usage_path() and
 * cgroup_usage_read() of the v2 directory. */
int cgroup_usage_read_group(const char *control_group, struct cgroup_usage *ret);
