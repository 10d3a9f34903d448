/* The kernel's word that its OOM killer ended a process of a cgroup in a cgroup v1 memory
 * hierarchy: a host of the hybrid layout, where the memory controller is on v1 and
 * systemd (252) never says Result=oom-kill (it reads memory.events of the unified tree,
 * which has no memory controller there). An eventfd registered in the cgroup's
 * cgroup.event_control for memory.oom_control wakes at each OOM in the cgroup, and at its
 * removal, when memory.oom_control can no longer be read: the two are told apart.
 * Registering needs cgroup.event_control writable, which it is not to a daemon under
 * ProtectControlGroups=yes: then a unit of the manager's registers the daemon's eventfd
 * (launcher-systemd.c, unit_properties_build_oom_registrar()). */
#pragma once

#include <stdbool.h>

struct event_base;
struct oom_watch;

/* A watch of control_group (a unit's ControlGroup=, "/mcpvisor.slice/...") in the v1
 * memory hierarchy at root (CGROUP_ROOT "/memory"; a test's own): its eventfd and
 * memory.oom_control open and listened to, not yet registered. -EINVAL for a group that
 * is not an absolute, plain path; -ENOENT when there is no such cgroup (no v1 memory
 * hierarchy: a unified host, whose systemd tells itself). */
int oom_watch_new(struct event_base *base, const char *root, const char *control_group, struct oom_watch **ret);

/* Registers the watch by writing the cgroup's cgroup.event_control: a negative errno when
 * the kernel refuses, -EROFS where the cgroup file system is read-only to the daemon
 * (ProtectControlGroups=yes, as the shipped unit has it). */
int oom_watch_register(struct oom_watch *w);

/* What another process needs to register the watch in the daemon's stead (one to which
 * /sys/fs/cgroup is writable: a unit of the manager's): the eventfd and the open
 * memory.oom_control, which the writer of "EFD CONTROL_FD" must hold as those numbers, and
 * the path of cgroup.event_control. The watch keeps them; the kernel signals the eventfd
 * the daemon holds whoever registered it. */
void oom_watch_handover(const struct oom_watch *w, int *ret_efd, int *ret_control, const char **ret_event_control);

/* Another process registered it: the eventfd it was handed is made non-blocking again. */
void oom_watch_registered(struct oom_watch *w);

/* The OOM killer ended a process of the cgroup since the watch began. */
bool oom_watch_killed(const struct oom_watch *w);

void oom_watch_free(struct oom_watch *w);
