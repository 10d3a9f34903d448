/* A connection's principal; see principal.h. */
#include "principal.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "user-db.h"

/* The kernel's NGROUPS_MAX is 65536; SO_PEERGROUPS says with ERANGE how much it needs. */
#define PRINCIPAL_GROUPS_START 32

void principal_parse_comm(const char *text, size_t len, char *ret, size_t size) {
        if (len > 0 && text[len - 1] == '\n')
                len--;
        if (len >= size)
                len = size - 1;
        memcpy(ret, text, len);
        ret[len] = '\0';
}

int principal_groups_copy(const void *buf, size_t len, gid_t **ret, size_t *ret_n) {
        gid_t *groups;

        if (len % sizeof(gid_t) != 0)
                return -EINVAL;
        groups = malloc(len ? len : 1);
        if (!groups)
                return -ENOMEM;
        memcpy(groups, buf, len);
        *ret = groups;
        *ret_n = len / sizeof(gid_t);
        return 0;
}

/* SO_PEERGROUPS: the peer's supplementary groups at connect(). */
static int peer_groups(int fd, gid_t **ret, size_t *ret_n) {
        _cleanup_free_ gid_t *buf = NULL;
        socklen_t len = PRINCIPAL_GROUPS_START * sizeof(gid_t);

        for (int tries = 0; tries < 4; tries++) {
                free(buf);
                buf = malloc(len);
                if (!buf)
                        return -ENOMEM;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, buf, &len) == 0)
                        return principal_groups_copy(buf, len, ret, ret_n);
                if (errno != ERANGE)
                        return -errno;
        }
        return -ERANGE;
}

static void read_comm(pid_t pid, char *ret, size_t size) {
        _cleanup_close_ int fd = -1;
        char path[64], buf[PRINCIPAL_COMM_MAX + 1];
        ssize_t n;

        ret[0] = '\0';
        if (pid <= 0)
                return;
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return; /* gone already, or another pid namespace: best effort */
        n = read(fd, buf, sizeof buf);
        if (n > 0)
                principal_parse_comm(buf, (size_t)n, ret, size);
}

static char *user_name(uid_t uid) {
        struct passwd pw, *found = NULL;
        char buf[4096];

        if (uid == (uid_t)-1 || getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || !found)
                return NULL;
        return strdup(found->pw_name);
}

int principal_resolve(int fd, const struct ucred *peer, struct principal *ret) {
        struct principal p = { .uid = peer->uid, .gid = peer->gid, .pid = peer->pid };
        int r;

        read_comm(p.pid, p.comm, sizeof p.comm);
        p.user = user_name(p.uid);
        r = peer_groups(fd, &p.groups, &p.n_groups);
        /* the fallback, where the kernel cannot say: the groups the group database gives the
         * uid's user (which may differ from what the peer process holds) */
        if (r < 0 && r != -ENOMEM && p.user)
                r = user_db_groups(p.user, p.gid, &p.groups, &p.n_groups);
        if (r == -ENOMEM) {
                principal_done(&p);
                *ret = (struct principal){ .uid = peer->uid, .gid = peer->gid, .pid = peer->pid };
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

void principal_done(struct principal *p) {
        free(p->groups);
        free(p->user);
        p->groups = NULL;
        p->user = NULL;
        p->n_groups = 0;
}
