/* The kernel's word that its OOM killer ended a process of a cgroup in a cgroup v1 memory
 * hierarchy: a host of the hybrid layout, where the memory controller is on v1 and
 * systemd (252) never says Result=oom-kill (it reads memory.events of the unified tree,
 * which has no memory controller there). An eventfd registered in the cgroup's
 * cgroup.event_control for memory.oom_control wakes at each OOM in the cgroup, and at its
 * removal, when memory.oom_control can no longer be read: the two are told apart. */
#pragma once

#include <stdbool.h>

struct event_base;
struct oom_watch;

/* Watches control_group (a unit's ControlGroup=, "/mcpvisor.slice/...") in the v1
 * memory hierarchy at root (CGROUP_ROOT "/memory"; a test's own). -EINVAL for a group
 * that is not an absolute, plain path; -ENOENT when there is no such cgroup (no v1
 * memory hierarchy: a unified host, whose systemd tells itself); another negative errno
 * when the kernel refuses the registration. */
int oom_watch_new(struct event_base *base, const char *root, const char *control_group, struct oom_watch **ret);

/* The OOM killer ended a process of the cgroup since the watch began. */
bool oom_watch_killed(const struct oom_watch *w);

void oom_watch_free(struct oom_watch *w);
