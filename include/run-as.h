/* The user a server runs as when it is not the daemon's own (a per-user instance runs as
 * its owner): who that is, resolved once from a uid through the user and group databases
 * (name, primary group, the supplementary groups initgroups() would give, home), and
 * whether this daemon may run it at all. Pure data and lookups: the launchers act on it
 * (launcher-exec.c drops to it in the child, launcher-systemd.c says User=). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct run_as {
        uid_t uid;
        gid_t gid;          /* the user's primary group */
        gid_t *groups;      /* its groups in the group database, the primary one included */
        size_t n_groups;
        char *user;         /* its name */
        char *home;         /* its home directory; "/" when the database gives none that is absolute */
};

/* Resolves uid through the user database (getpwuid_r) and its groups through the group
 * database (getgrouplist), into a new *ret. -ENOENT for a uid with no user, -ENOMEM,
 * or another negative errno when the lookup itself failed; *error (malloc'd) then says so.
 * The lookups go through NSS and may block as long as it does. */
int run_as_resolve(uid_t uid, struct run_as **ret, char **error);
void run_as_free(struct run_as *r);
static inline void run_as_freep(struct run_as **r) {
        run_as_free(*r);
}

/* Whether a daemon whose effective uid is daemon_uid may run server name as r: NULL, or
 * r's uid the daemon's own, always; another user only when the daemon is root and does
 * not start its servers through a user manager (user_manager: the systemd launcher with a
 * user service manager, which runs every unit as its own user, the daemon's). 0, or
 * -EPERM with *error (malloc'd) saying why, in words an operator acts on. */
int run_as_check(const struct run_as *r, const char *name, uid_t daemon_uid, bool user_manager, char **error);
