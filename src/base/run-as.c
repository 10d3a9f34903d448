/* Who a server runs as; see run-as.h. */
#include "run-as.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "text.h"
#include "user-db.h"

void run_as_free(struct run_as *r) {
        if (!r)
                return;
        free(r->groups);
        free(r->user);
        free(r->home);
        free(r);
}

/* getpwuid_r with a buffer grown until the entry fits. 0 and *ret (in *buf), -ENOENT, or
 * the lookup's error. */
static int lookup_user(uid_t uid, struct passwd *pw, char **buf, struct passwd **ret) {
        size_t size = 1024;

        for (;;) {
                int e;

                free(*buf);
                if (!(*buf = malloc(size)))
                        return -ENOMEM;
                e = getpwuid_r(uid, pw, *buf, size, ret);
                if (e == ERANGE && size < 1024 * 1024) {
                        size *= 4;
                        continue;
                }
                if (e != 0)
                        return -e;
                return *ret ? 0 : -ENOENT;
        }
}

int run_as_resolve(uid_t uid, struct run_as **ret, char **error) {
        _cleanup_(run_as_freep) struct run_as *r = NULL;
        _cleanup_free_ char *buf = NULL;
        struct passwd pw, *found = NULL;
        int e;

        *error = NULL;
        e = lookup_user(uid, &pw, &buf, &found);
        if (e == -ENOENT) {
                text_error(error, "uid %u has no user in the user database", (unsigned)uid);
                return e;
        }
        if (e < 0) {
                if (e != -ENOMEM)
                        text_error(error, "cannot look up uid %u in the user database: %s", (unsigned)uid, strerror(-e));
                return e;
        }
        /* -1 to setresuid()/setresgid() means "leave it": such an entry would drop nothing. */
        if (uid == (uid_t)-1 || found->pw_gid == (gid_t)-1) {
                text_error(error, "uid %u: its user database entry has an id of -1", (unsigned)uid);
                return -EINVAL;
        }
        if (!(r = calloc(1, sizeof *r)))
                return -ENOMEM;
        r->uid = uid;
        r->gid = found->pw_gid;
        /* A home that is not an absolute path is none: "/", as login(1) does. */
        r->user = strdup(found->pw_name);
        r->home = strdup(found->pw_dir && found->pw_dir[0] == '/' ? found->pw_dir : "/");
        if (!r->user || !r->home)
                return -ENOMEM;
        e = user_db_groups(r->user, r->gid, &r->groups, &r->n_groups);
        if (e < 0) {
                if (e != -ENOMEM)
                        text_error(error, "cannot look up the groups of user %s: %s", r->user, strerror(-e));
                return e;
        }
        *ret = TAKE_PTR(r);
        return 0;
}

/* The daemon's user, by name when it has one. */
static void user_text(uid_t uid, char *buf, size_t size) {
        _cleanup_free_ char *pwbuf = NULL;
        struct passwd pw, *found = NULL;

        if (lookup_user(uid, &pw, &pwbuf, &found) == 0)
                snprintf(buf, size, "%s", found->pw_name);
        else
                snprintf(buf, size, "uid %u", (unsigned)uid);
}

int run_as_check(const struct run_as *r, const char *name, uid_t daemon_uid, bool user_manager, char **error) {
        char daemon_user[256];

        if (!r || r->uid == daemon_uid)
                return 0;
        user_text(daemon_uid, daemon_user, sizeof daemon_user);
        /* Only root can take another user's uid, gid and groups (or have the system
         * manager do it); without that, a server must not run as the daemon in its stead. */
        if (daemon_uid != 0)
                text_error(error, "cannot run '%s' as user %s: mcpvisord runs as %s, not root", name, r->user,
                           daemon_user);
        else if (user_manager)
                text_error(error, "cannot run '%s' as user %s: mcpvisord starts its servers through the user "
                           "service manager of %s, which runs them as %s only (run mcpvisord under the system "
                           "manager, or with launcher \"exec\")", name, r->user, daemon_user, daemon_user);
        else
                return 0;
        return -EPERM;
}
