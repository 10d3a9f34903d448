/* Who may use the control socket: root, the daemon's own user, and members of the
 * configured controlGroup (primary or supplementary group of the peer, read from the
 * socket with SO_PEERGROUPS). The socket's file mode is the first gate; this is the
 * second, so a socket left world-writable by mistake still gives nobody control. */
#include "control-access.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"

/* SO_PEERGROUPS: the peer's supplementary groups at connect time. */
static bool peer_in_group(int fd, gid_t gid) {
        _cleanup_free_ gid_t *groups = NULL;
        socklen_t len = 32 * sizeof(gid_t);

        for (int tries = 0; tries < 4; tries++) {
                free(groups);
                groups = malloc(len);
                if (!groups)
                        return false;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
                        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                                if (groups[i] == gid)
                                        return true;
                        return false;
                }
                if (errno != ERANGE)
                        return false;
        }
        return false;
}

static int group_id(const char *name, gid_t *ret) {
        struct group grp, *found = NULL;
        char buf[4096];
        int r = getgrnam_r(name, &grp, buf, sizeof buf, &found);

        if (r != 0)
                return -r;
        if (!found)
                return -ENOENT;
        *ret = found->gr_gid;
        return 0;
}

bool control_access_allowed(const char *control_group, int fd, const struct ucred *peer, char *why, size_t size) {
        gid_t gid;

        if (peer->uid == 0 || peer->uid == geteuid())
                return true;
        if (control_group && group_id(control_group, &gid) == 0 && (peer->gid == gid || peer_in_group(fd, gid)))
                return true;
        if (control_group)
                snprintf(why, size,
                         "permission denied: the control socket is for root, the daemon's user (uid %u) and group %s; uid %u is none of them",
                         (unsigned)geteuid(), control_group, (unsigned)peer->uid);
        else
                snprintf(why, size,
                         "permission denied: the control socket is for root and the daemon's user (uid %u); set controlGroup to admit a group",
                         (unsigned)geteuid());
        return false;
}
