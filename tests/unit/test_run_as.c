/* Who a server runs as (run-as.c): root and nobody resolved from the real user and group
 * databases, a uid with no user, and which daemon may run whom. */
#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "run-as.h"

static bool has_group(const struct run_as *r, gid_t g) {
        for (size_t i = 0; i < r->n_groups; i++)
                if (r->groups[i] == g)
                        return true;
        return false;
}

/* What the databases say of name, checked against what run_as_resolve() made of its uid. */
static void check_resolves_as_databases(const char *name) {
        struct passwd *pw = getpwnam(name);
        _cleanup_(run_as_freep) struct run_as *r = NULL;
        _cleanup_free_ char *error = NULL;
        uid_t uid;
        gid_t gid;
        char *home;

        cr_assert_not_null(pw, "no user %s on this machine", name);
        uid = pw->pw_uid;
        gid = pw->pw_gid;
        home = strdup(pw->pw_dir[0] == '/' ? pw->pw_dir : "/");
        cr_assert_eq(run_as_resolve(uid, &r, &error), 0, "%s", error ? error : "");
        cr_assert_null(error);
        cr_assert_eq(r->uid, uid);
        cr_assert_eq(r->gid, gid);
        cr_assert_str_eq(r->user, name);
        cr_assert_str_eq(r->home, home);
        cr_assert(r->n_groups >= 1);
        cr_assert(has_group(r, gid), "the primary group is one of its groups, as initgroups() gives it");
        free(home);
}

Test(run_as, resolves_root) {
        _cleanup_(run_as_freep) struct run_as *r = NULL;
        _cleanup_free_ char *error = NULL;

        check_resolves_as_databases("root");
        cr_assert_eq(run_as_resolve(0, &r, &error), 0);
        cr_assert_eq(r->gid, 0);
        cr_assert_str_eq(r->user, "root");
}

/* Debian's nobody has /nonexistent for its home: kept as the database says it (the
 * launchers fall back to "/" when it cannot be entered), and its one group, nogroup. */
Test(run_as, resolves_nobody) {
        struct group *g;
        _cleanup_(run_as_freep) struct run_as *r = NULL;
        _cleanup_free_ char *error = NULL;

        check_resolves_as_databases("nobody");
        cr_assert_eq(run_as_resolve(getpwnam("nobody")->pw_uid, &r, &error), 0);
        cr_assert_neq(r->uid, 0);
        g = getgrgid(r->gid);
        cr_assert_not_null(g);
        for (size_t i = 0; i < r->n_groups; i++)
                cr_assert_neq(r->groups[i], 0, "nobody is in no group of root's");
}

Test(run_as, unknown_uid_refused) {
        struct run_as *r = NULL;
        _cleanup_free_ char *error = NULL;
        uid_t uid = 4242420;

        while (getpwuid(uid))
                uid++;
        cr_assert_eq(run_as_resolve(uid, &r, &error), -ENOENT);
        cr_assert_null(r);
        cr_assert_not_null(error);
        cr_assert(strstr(error, "has no user in the user database"), "%s", error);
        cr_assert_not_null(strstr(error, "4242"));
}

Test(run_as, free_null) {
        run_as_free(NULL);
}

static struct run_as alice = { .uid = 1000, .gid = 1000, .user = (char *)"alice", .home = (char *)"/home/alice" };

Test(run_as, check_own_user_always) {
        _cleanup_free_ char *error = NULL;

        cr_assert_eq(run_as_check(NULL, "fs", 1000, false, &error), 0);
        cr_assert_eq(run_as_check(NULL, "fs", 1000, true, &error), 0);
        cr_assert_eq(run_as_check(&alice, "fs", 1000, false, &error), 0);
        cr_assert_eq(run_as_check(&alice, "fs", 1000, true, &error), 0);
        cr_assert_null(error);
}

Test(run_as, check_root_runs_anyone_but_under_a_user_manager) {
        _cleanup_free_ char *error = NULL;

        cr_assert_eq(run_as_check(&alice, "fs", 0, false, &error), 0);
        cr_assert_null(error);
        cr_assert_eq(run_as_check(&alice, "fs", 0, true, &error), -EPERM);
        cr_assert_not_null(error);
        cr_assert(strstr(error, "cannot run 'fs' as user alice: mcpvisord starts its servers through the user "
                                "service manager of root"), "%s", error);
}

Test(run_as, check_unprivileged_daemon_runs_only_itself) {
        _cleanup_free_ char *error = NULL, *expected = NULL;
        struct passwd *pw = getpwnam("nobody");
        struct run_as root = { .uid = 0, .gid = 0, .user = (char *)"root", .home = (char *)"/root" };

        cr_assert_not_null(pw);
        cr_assert(asprintf(&expected, "cannot run 'fs' as user root: mcpvisord runs as nobody, not root") > 0);
        cr_assert_eq(run_as_check(&root, "fs", pw->pw_uid, false, &error), -EPERM);
        cr_assert_str_eq(error, expected);
        free(error);
        error = NULL;
        cr_assert_eq(run_as_check(&alice, "fs", pw->pw_uid, true, &error), -EPERM);
        cr_assert(strstr(error, "cannot run 'fs' as user alice: mcpvisord runs as nobody, not root"), "%s", error);
}

/* A daemon uid with no user is told by number. */
Test(run_as, check_daemon_without_a_name) {
        _cleanup_free_ char *error = NULL;
        uid_t uid = 4242420;

        while (getpwuid(uid))
                uid++;
        cr_assert_eq(run_as_check(&alice, "fs", uid, false, &error), -EPERM);
        cr_assert(strstr(error, "mcpvisord runs as uid 42424"), "%s", error);
}
