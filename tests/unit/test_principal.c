/* The principal of a connection: credentials, groups and command name of a real peer (over
 * a socketpair, the peer is this process), and the pure parsing beneath. */
#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "access.h"
#include "client.h"
#include "principal.h"

Test(principal, comm_newline_dropped) {
        char comm[PRINCIPAL_COMM_MAX];

        principal_parse_comm("claude\n", 7, comm, sizeof comm);
        cr_assert_str_eq(comm, "claude");
        principal_parse_comm("no-newline", 10, comm, sizeof comm);
        cr_assert_str_eq(comm, "no-newline");
        principal_parse_comm("", 0, comm, sizeof comm);
        cr_assert_str_eq(comm, "");
        principal_parse_comm("\n", 1, comm, sizeof comm);
        cr_assert_str_eq(comm, "");
}

Test(principal, comm_cut_to_size) {
        char comm[PRINCIPAL_COMM_MAX];

        principal_parse_comm("0123456789abcdefghij\n", 21, comm, sizeof comm);
        cr_assert_str_eq(comm, "0123456789abcde");
}

/* A name may hold any byte but NUL: kept as the kernel gave it, escaped only when shown. */
Test(principal, comm_control_bytes_kept) {
        char comm[PRINCIPAL_COMM_MAX];

        principal_parse_comm("a\nb\x1b[\n", 6, comm, sizeof comm);
        cr_assert_str_eq(comm, "a\nb\x1b[");
}

Test(principal, groups_copy) {
        gid_t in[3] = { 10, 20, 30 }, *out = NULL;
        size_t n = 99;

        cr_assert_eq(principal_groups_copy(in, sizeof in, &out, &n), 0);
        cr_assert_eq(n, 3);
        cr_assert_arr_eq(out, in, sizeof in);
        free(out);
        cr_assert_eq(principal_groups_copy(in, 0, &out, &n), 0);
        cr_assert_eq(n, 0);
        free(out);
        cr_assert_eq(principal_groups_copy(in, 5, &out, &n), -EINVAL);
}

static bool has_group(const struct principal *p, gid_t g) {
        for (size_t i = 0; i < p->n_groups; i++)
                if (p->groups[i] == g)
                        return true;
        return false;
}

/* Over a socketpair the peer is this very process: its ids, groups and name. */
Test(principal, resolve_self) {
        int sv[2];
        struct ucred cred;
        socklen_t len = sizeof cred;
        struct principal p;
        gid_t mine[256];
        int n = getgroups(256, mine);

        cr_assert_eq(prctl(PR_SET_NAME, "principal-test"), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        cr_assert_eq(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &cred, &len), 0);
        cr_assert_eq(principal_resolve(sv[0], &cred, &p), 0);
        cr_assert_eq(p.uid, getuid());
        cr_assert_eq(p.gid, getgid());
        cr_assert_eq(p.pid, getpid());
        cr_assert_str_eq(p.comm, "principal-test");
        cr_assert_geq(n, 0);
        cr_assert_eq(p.n_groups, (size_t)n);
        for (int i = 0; i < n; i++)
                cr_assert(has_group(&p, mine[i]), "group %u missing", (unsigned)mine[i]);
        if (getuid() == 0)
                cr_assert_str_eq(p.user, "root");
        principal_done(&p);
        principal_done(&p); /* twice is harmless */
        close(sv[0]);
        close(sv[1]);
}

/* A peer of another pid namespace or one already gone: no name, still a principal. */
Test(principal, resolve_unknown_pid) {
        int sv[2];
        struct ucred cred = { .pid = 0, .uid = 4242, .gid = 4242 };
        struct principal p;

        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        cr_assert_eq(principal_resolve(sv[0], &cred, &p), 0);
        cr_assert_eq(p.uid, 4242);
        cr_assert_eq(p.pid, 0);
        cr_assert_str_eq(p.comm, "");
        principal_done(&p);
        close(sv[0]);
        close(sv[1]);
}

/* What the access policy reads of a connection is its principal, groups included. */
Test(principal, access_who_of_a_client) {
        gid_t groups[2] = { 4243, 4244 };
        struct client c = { .principal = { .uid = 4242, .gid = 4242, .pid = 9, .groups = groups, .n_groups = 2 } };
        struct access_who w;

        client_access_who(&c, &w);
        cr_assert_eq(w.uid, 4242);
        cr_assert_eq(w.gid, 4242);
        cr_assert_eq(w.n_groups, 2);
        cr_assert_eq(w.groups, groups);
        cr_assert_null(w.profile);
}
